// Two words through one module: a single launch, so `--emit=linalg` is one
// kernels module that parses on its own.
dynb.param @E : tensor<4x8xf32>
dynb.param @W : tensor<8x8xf32>
func.func @cell(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = dynb.linear %x weight @W : tensor<8xf32> -> tensor<8xf32>
  %h = dynb.tanh %y : tensor<8xf32>
  return %h : tensor<8xf32>
}
dynb.instance {
  %x = dynb.embedding @E [1] : tensor<8xf32>
  %h = dynb.call @cell(%x) : (tensor<8xf32>) -> tensor<8xf32>
  dynb.output %h : tensor<8xf32>
}
dynb.instance {
  %x = dynb.embedding @E [2] : tensor<8xf32>
  %h = dynb.call @cell(%x) : (tensor<8xf32>) -> tensor<8xf32>
  dynb.output %h : tensor<8xf32>
}
