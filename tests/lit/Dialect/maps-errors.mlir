// RUN: dynb-opt %s -split-input-file -verify-diagnostics

// Every verifier error of the feature-map ops.

dynb.param @w : tensor<4x8x3x3xf32>
func.func @f(%x: tensor<6x6x6xf32>) -> tensor<4x6x6xf32> {
  // expected-error @+1 {{input [6, 6, 6] has 6 channels but weight @w [4, 8, 3, 3] takes 8}}
  %y = dynb.conv2d %x weight @w padding 1 : tensor<6x6x6xf32> -> tensor<4x6x6xf32>
  return %y : tensor<4x6x6xf32>
}

// -----

dynb.param @w : tensor<4x8x3x3xf32>
func.func @f(%x: tensor<8x6x6xf32>) -> tensor<4x6x6xf32> {
  // expected-error @+1 {{result must be [4, 4, 4], got [4, 6, 6]}}
  %y = dynb.conv2d %x weight @w padding 0 : tensor<8x6x6xf32> -> tensor<4x6x6xf32>
  return %y : tensor<4x6x6xf32>
}

// -----

dynb.param @w : tensor<4x8xf32>
func.func @f(%x: tensor<8x6x6xf32>) -> tensor<4x6x6xf32> {
  // expected-error @+1 {{needs a rank-4 parameter as its weight, but @w has shape [4, 8]}}
  %y = dynb.conv2d %x weight @w padding 1 : tensor<8x6x6xf32> -> tensor<4x6x6xf32>
  return %y : tensor<4x6x6xf32>
}

// -----

dynb.param @w : tensor<4x8x3x3xf32>
dynb.param @b : tensor<5xf32>
func.func @f(%x: tensor<8x6x6xf32>) -> tensor<4x6x6xf32> {
  // expected-error @+1 {{bias @b has 5 elements, the weight has 4 output channels}}
  %y = dynb.conv2d %x weight @w bias @b padding 1 : tensor<8x6x6xf32> -> tensor<4x6x6xf32>
  return %y : tensor<4x6x6xf32>
}

// -----

dynb.param @w : tensor<4x8x3x3xf32>
func.func @f(%x: tensor<8x6x6xf32>) -> tensor<4x6x6xf32> {
  // expected-error @+1 {{padding -1 is negative}}
  %y = dynb.conv2d %x weight @w padding -1 : tensor<8x6x6xf32> -> tensor<4x6x6xf32>
  return %y : tensor<4x6x6xf32>
}

// -----

dynb.param @w : tensor<4x8x7x7xf32>
func.func @f(%x: tensor<8x4x4xf32>) -> tensor<4x1x1xf32> {
  // expected-error @+1 {{window 7x7 does not fit map [8, 4, 4] with padding 1}}
  %y = dynb.conv2d %x weight @w padding 1 : tensor<8x4x4xf32> -> tensor<4x1x1xf32>
  return %y : tensor<4x1x1xf32>
}

// -----

dynb.param @w : tensor<4x8x3x3xf32>
func.func @f(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{input [8] is not a feature map: it needs channels, height and width as its last three dimensions}}
  %y = dynb.conv2d %x weight @w padding 1 : tensor<8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<2x8x6x6xf32>) -> tensor<3x8x3x3xf32> {
  // expected-error @+1 {{result [3, 8, 3, 3] does not keep the leading dimensions of [2, 8, 6, 6]}}
  %y = dynb.maxpool2d %x : tensor<2x8x6x6xf32> -> tensor<3x8x3x3xf32>
  return %y : tensor<3x8x3x3xf32>
}

// -----

func.func @f(%x: tensor<8x7x7xf32>) -> tensor<8x4x4xf32> {
  // expected-error @+1 {{result must be [8, 3, 3], got [8, 4, 4]}}
  %y = dynb.maxpool2d %x : tensor<8x7x7xf32> -> tensor<8x4x4xf32>
  return %y : tensor<8x4x4xf32>
}

// -----

func.func @f(%x: tensor<8x1x6xf32>) -> tensor<8x0x3xf32> {
  // expected-error @+1 {{map [8, 1, 6] is smaller than the 2x2 window}}
  %y = dynb.maxpool2d %x : tensor<8x1x6xf32> -> tensor<8x0x3xf32>
  return %y : tensor<8x0x3xf32>
}

// -----

func.func @f(%x: tensor<8x3x3xf32>) -> tensor<70xf32> {
  // expected-error @+1 {{result must end in 72 ([8, 3, 3] flattened), got [70]}}
  %y = dynb.flatten %x : tensor<8x3x3xf32> -> tensor<70xf32>
  return %y : tensor<70xf32>
}

// -----

func.func @f(%x: tensor<4x6x6xf32>, %z: tensor<4x5x6xf32>) -> tensor<8x6x6xf32> {
  // expected-error @+1 {{input 1 [4, 5, 6] differs from input 0 [4, 6, 6] in other than the channels}}
  %c = dynb.channel_concat %x, %z : (tensor<4x6x6xf32>, tensor<4x5x6xf32>) -> tensor<8x6x6xf32>
  return %c : tensor<8x6x6xf32>
}

// -----

func.func @f(%x: tensor<4x6x6xf32>, %z: tensor<2x6x6xf32>) -> tensor<8x6x6xf32> {
  // expected-error @+1 {{result must be [6, 6, 6], got [8, 6, 6]}}
  %c = dynb.channel_concat %x, %z : (tensor<4x6x6xf32>, tensor<2x6x6xf32>) -> tensor<8x6x6xf32>
  return %c : tensor<8x6x6xf32>
}

// -----

func.func @f(%x: tensor<4x6x6xf32>) -> tensor<4x6x6xf32> {
  // expected-error @+1 {{needs at least two inputs}}
  %c = dynb.channel_concat %x : (tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  return %c : tensor<4x6x6xf32>
}

// -----

dynb.param @feats : tensor<2x8x6x6xf32>
dynb.instance {
  // expected-error @+1 {{result must be [8, 6, 6] (a row of @feats), got [8, 6, 5]}}
  %f = dynb.embedding @feats [1] : tensor<8x6x5xf32>
  dynb.output
}

// -----

// expected-error @+1 {{must be a vector, a matrix, a stack of matrices (one per expert) or a rank-4 tensor (convolution weights, a table of feature maps), got rank 5}}
dynb.param @w : tensor<1x2x3x4x5xf32>
