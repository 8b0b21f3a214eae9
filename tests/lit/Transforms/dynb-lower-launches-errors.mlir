// RUN: dynb-opt %s -verify-diagnostics -dynb-lower-launches

// A module that calls a module has no lowering yet; the error is at the
// call, inside the module.
dynb.param @E : tensor<10x4xf32>
func.func @inner(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = dynb.tanh %x : tensor<4xf32>
  return %h : tensor<4xf32>
}
func.func @outer(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{inside module @outer: modules cannot call modules yet}}
  %h = dynb.call @inner(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %h : tensor<4xf32>
}
dynb.schedule agenda first_instance 0 num_instances 1 launches 2 lower_bound 2 nodes 2 {
  %x = dynb.lookup @E [1] : tensor<1x4xf32>
  %h = dynb.batched_call @outer(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  dynb.yield %h : tensor<1x4xf32>
}

