// RUN: dynb-opt %s -split-input-file -verify-diagnostics -dynb-backward

// The forward and adjoint modules come from dynb-grad, which must run first.
dynb.param @E : tensor<4x2xf32>
func.func @cell(%x: tensor<2xf32>) -> tensor<2xf32> {
  %h = dynb.tanh %x : tensor<2xf32>
  return %h : tensor<2xf32>
}
dynb.instance {
  %x = dynb.embedding @E [1] : tensor<2xf32>
  // expected-error @+1 {{'dynb.call' op (instance 0) calls @cell, which has no forward and adjoint modules: run -dynb-grad before -dynb-backward}}
  %h = dynb.call @cell(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %l = dynb.softmax_xent %h label 1 : tensor<2xf32> -> tensor<1xf32>
  dynb.output %h : tensor<2xf32>
}

// -----

// An op with no adjoint yet on the way from a parameter to a loss is named,
// with its instance.
dynb.param @F : tensor<2x2x4x4xf32>
dynb.instance {
  %m = dynb.embedding @F [1] : tensor<2x4x4xf32>
  %p = dynb.maxpool2d %m : tensor<2x4x4xf32> -> tensor<2x2x2xf32>
  // expected-error @+1 {{'dynb.flatten' op (instance 0) is on the path from a parameter to a loss but cannot be differentiated by dynb-backward yet}}
  %f = dynb.flatten %p : tensor<2x2x2xf32> -> tensor<8xf32>
  %l = dynb.softmax_xent %f label 0 : tensor<8xf32> -> tensor<1xf32>
  dynb.output %f : tensor<8xf32>
}

// -----

// An op that no loss depends on needs no adjoint.
dynb.param @F : tensor<2x2x4x4xf32>
dynb.param @E : tensor<4x2xf32>
dynb.instance {
  %m = dynb.embedding @F [1] : tensor<2x4x4xf32>
  %p = dynb.maxpool2d %m : tensor<2x4x4xf32> -> tensor<2x2x2xf32>
  %x = dynb.embedding @E [1] : tensor<2xf32>
  %l = dynb.softmax_xent %x label 0 : tensor<2xf32> -> tensor<1xf32>
  dynb.output %x : tensor<2xf32>
}
