// RUN: dynb-opt %s -split-input-file -verify-diagnostics

dynb.param @W : tensor<6x2xf32>
func.func @f(%dz: tensor<5xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{input [5] does not end in 6, the rows of @W [6, 2]}}
  %x = dynb.linear_transpose %dz weight @W : tensor<5xf32> -> tensor<2xf32>
  return %x : tensor<2xf32>
}

// -----

dynb.param @W : tensor<6x2xf32>
func.func @f(%dz: tensor<6xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{result must be [2], got [3]}}
  %x = dynb.linear_transpose %dz weight @W : tensor<6xf32> -> tensor<3xf32>
  return %x : tensor<3xf32>
}

// -----

func.func @f(%d: tensor<2xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{input of width 2 at offset 5 does not fit in 6}}
  %p = dynb.pad %d [5] : tensor<2xf32> -> tensor<6xf32>
  return %p : tensor<6xf32>
}

// -----

func.func @f(%d: tensor<2x2xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{input [2, 2] and result [6] must differ in the last dimension only}}
  %p = dynb.pad %d [0] : tensor<2x2xf32> -> tensor<6xf32>
  return %p : tensor<6xf32>
}
