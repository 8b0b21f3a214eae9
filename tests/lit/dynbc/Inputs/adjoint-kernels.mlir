// Modules of the adjoint ops, called by instances so that their kernels are
// compiled and checked against the reference interpreter: the elementwise
// ones, and pads (zeros on the left, on the right, or both).
dynb.param @E : tensor<10x4xf32>
func.func @pads(%a: tensor<4xf32>) -> tensor<9xf32> {
  %l = dynb.pad %a [5] : tensor<4xf32> -> tensor<9xf32>
  %m = dynb.pad %a [2] : tensor<4xf32> -> tensor<9xf32>
  %r = dynb.pad %a [0] : tensor<4xf32> -> tensor<9xf32>
  %s = dynb.add %l, %m : tensor<9xf32>
  %t = dynb.add %s, %r : tensor<9xf32>
  return %t : tensor<9xf32>
}
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
  %p = dynb.call @pads(%t) : (tensor<4xf32>) -> tensor<9xf32>
  dynb.output %t, %p : tensor<4xf32>, tensor<9xf32>
}
dynb.instance {
  %y = dynb.embedding @E [7] : tensor<4xf32>
  %g = dynb.embedding @E [3] : tensor<4xf32>
  %t = dynb.call @d(%y, %g) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %u = dynb.call @d(%t, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %p = dynb.call @pads(%u) : (tensor<4xf32>) -> tensor<9xf32>
  dynb.output %u, %p : tensor<4xf32>, tensor<9xf32>
}
