// RUN: dynb-opt %s -split-input-file -verify-diagnostics -dynb-grad

// Feature maps are not differentiated yet: the op is named, located.
dynb.param @p : tensor<4x4x3x3xf32>
func.func @stem(%x: tensor<4x6x6xf32>) -> tensor<4x6x6xf32> {
  // expected-error @+1 {{'dynb.conv2d' op cannot be differentiated by dynb-grad yet}}
  %y = dynb.conv2d %x weight @p padding 1 : tensor<4x6x6xf32> -> tensor<4x6x6xf32>
  return %y : tensor<4x6x6xf32>
}

// -----

// Nor are expert modules (their parameters are stacked per expert).
dynb.param @W1 : tensor<3x6x4xf32>
// expected-error @+1 {{is an expert module: dynb-grad cannot differentiate those yet}}
func.func @ffn(%x: tensor<4xf32>) -> tensor<6xf32> attributes {dynb.experts = 3 : i64} {
  %y = dynb.linear %x weight @W1 : tensor<4xf32> -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

// The names the pass writes must be free.
// expected-error @+1 {{cannot be differentiated: the module's name for its forward or adjoint, @cell_adj, is taken}}
func.func @cell(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = dynb.tanh %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @cell_adj(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
