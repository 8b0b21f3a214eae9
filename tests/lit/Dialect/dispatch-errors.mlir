// RUN: dynb-opt %s -split-input-file -verify-diagnostics

// Every error of dynb.dispatch, expert modules and stacked parameters.

dynb.param @G : tensor<3x4xf32>
dynb.param @W : tensor<3x4x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 3 : i64} {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @G [0] : tensor<4xf32>
  // expected-error @+1 {{keeps the top 4 experts but gate @G scores only 3}}
  %y = dynb.dispatch %x gate @G experts @ffn top 4 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}

// -----

dynb.param @G : tensor<3x4xf32>
dynb.param @W : tensor<3x4x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 3 : i64} {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @G [0] : tensor<4xf32>
  // expected-error @+1 {{keeps the top 0 experts; k must be at least 1}}
  %y = dynb.dispatch %x gate @G experts @ffn top 0 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}

// -----

dynb.param @G : tensor<3x4xf32>
dynb.param @W : tensor<4x4xf32>
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @G [0] : tensor<4xf32>
  // expected-error @+1 {{module @plain is not an expert module: mark it with 'dynb.experts = 3 : i64'}}
  %y = dynb.dispatch %x gate @G experts @plain top 1 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}

// -----

dynb.param @G : tensor<3x4xf32>
dynb.param @W : tensor<2x4x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 2 : i64} {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @G [0] : tensor<4xf32>
  // expected-error @+1 {{module @ffn has dynb.experts = 2 but gate @G scores 3 experts}}
  %y = dynb.dispatch %x gate @G experts @ffn top 1 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}

// -----

dynb.param @G : tensor<3x5xf32>
dynb.param @E : tensor<3x4xf32>
dynb.param @W : tensor<3x4x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 3 : i64} {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @E [0] : tensor<4xf32>
  // expected-error @+1 {{input [4] does not end in 5, the columns of gate @G [3, 5]}}
  %y = dynb.dispatch %x gate @G experts @ffn top 1 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}

// -----

dynb.param @G : tensor<3x4xf32>
dynb.param @N : tensor<2x4xf32>
dynb.param @W : tensor<3x4x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 3 : i64} {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @G [0] : tensor<4xf32>
  // expected-error @+1 {{noise @N is [2, 4] but gate @G is [3, 4]}}
  %y = dynb.dispatch %x gate @G noise @N experts @ffn top 1 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}

// -----

dynb.param @G : tensor<3x4xf32>
dynb.param @W : tensor<3x6x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<6xf32> attributes {dynb.experts = 3 : i64} {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<6xf32>
  return %y : tensor<6xf32>
}
dynb.instance {
  %x = dynb.embedding @G [0] : tensor<4xf32>
  // expected-error @+1 {{result [4] does not end in 6, the width expert module @ffn returns}}
  %y = dynb.dispatch %x gate @G experts @ffn top 1 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}

// -----

dynb.param @G : tensor<3x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 3 : i64} {
  return %x : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @G [0] : tensor<4xf32>
  // expected-error @+1 {{input [4] and result [2, 4] must differ in the last dimension only}}
  %y = dynb.dispatch %x gate @G experts @ffn top 1 : tensor<4xf32> -> tensor<2x4xf32>
  dynb.output %y : tensor<2x4xf32>
}

// -----

dynb.param @W : tensor<3x4x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 2 : i64} {
  // expected-error @+1 {{weight @W [3, 4, 4] stacks 3 experts, but module @ffn has dynb.experts = 2}}
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dynb.param @W : tensor<4x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 2 : i64} {
  // expected-error @+1 {{needs a rank-3 parameter as its weight, but @W has shape [4, 4]}}
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dynb.param @W : tensor<2x4x4xf32>
dynb.param @b : tensor<2x5xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 2 : i64} {
  // expected-error @+1 {{bias @b has 5 elements, the weight has 4 rows}}
  %y = dynb.linear %x weight @W bias @b : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dynb.param @W : tensor<2x4x4xf32>
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs a rank-2 parameter as its weight, but @W has shape [2, 4, 4]}}
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dynb.param @E : tensor<3x4xf32>
dynb.param @W : tensor<3x4x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 3 : i64} {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @E [0] : tensor<4xf32>
  // expected-error @+1 {{calls expert module @ffn, which only 'dynb.dispatch' runs}}
  %y = dynb.call @ffn(%x) : (tensor<4xf32>) -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}
