// A module of the elementwise adjoint ops, called by instances so that its
// kernel is compiled and checked against the reference interpreter.
dynb.param @E : tensor<10x4xf32>
func.func @d(%y: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %a = dynb.sigmoid_grad %y, %g : tensor<4xf32>
  %b = dynb.tanh_grad %y, %g : tensor<4xf32>
  %r = dynb.relu_grad %y, %g : tensor<4xf32>
  %s = dynb.add %a, %b : tensor<4xf32>
  %t = dynb.add %s, %r : tensor<4xf32>
  return %t : tensor<4xf32>
}
dynb.instance {
  %y = dynb.embedding @E [1] : tensor<4xf32>
  %g = dynb.embedding @E [2] : tensor<4xf32>
  %t = dynb.call @d(%y, %g) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  dynb.output %t : tensor<4xf32>
}
dynb.instance {
  %y = dynb.embedding @E [7] : tensor<4xf32>
  %g = dynb.embedding @E [3] : tensor<4xf32>
  %t = dynb.call @d(%y, %g) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %u = dynb.call @d(%t, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  dynb.output %u : tensor<4xf32>
}
