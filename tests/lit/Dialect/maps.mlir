// RUN: dynb-opt %s | dynb-opt | FileCheck %s
// RUN: dynb-opt %s -mlir-print-op-generic | dynb-opt | FileCheck %s

// Feature maps: a residual unary module and a binary module of the CLEVR
// module network, and a classifier, print and parse back.

// CHECK: dynb.param @feats : tensor<2x8x6x6xf32>
dynb.param @feats : tensor<2x8x6x6xf32>
dynb.param @c1 : tensor<4x8x3x3xf32>
dynb.param @c1b : tensor<4xf32>
dynb.param @c2 : tensor<4x4x3x3xf32>
dynb.param @p : tensor<4x8x1x1xf32>
dynb.param @fc : tensor<5x36xf32>

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x6x6xf32>) -> tensor<4x6x6xf32> {
  // CHECK: %[[A:.*]] = dynb.conv2d %{{.*}} weight @c2 padding 1 : tensor<4x6x6xf32> -> tensor<4x6x6xf32>
  %a = dynb.conv2d %x weight @c2 padding 1 : tensor<4x6x6xf32> -> tensor<4x6x6xf32>
  // CHECK: dynb.relu %[[A]] : tensor<4x6x6xf32>
  %r = dynb.relu %a : tensor<4x6x6xf32>
  %b = dynb.conv2d %r weight @c2 bias @c1b padding 1 : tensor<4x6x6xf32> -> tensor<4x6x6xf32>
  %s = dynb.add %x, %b : tensor<4x6x6xf32>
  %y = dynb.relu %s : tensor<4x6x6xf32>
  return %y : tensor<4x6x6xf32>
}

// CHECK-LABEL: func.func @binary
func.func @binary(%x: tensor<4x6x6xf32>, %z: tensor<4x6x6xf32>) -> tensor<4x6x6xf32> {
  // CHECK: dynb.channel_concat %{{.*}}, %{{.*}} : (tensor<4x6x6xf32>, tensor<4x6x6xf32>) -> tensor<8x6x6xf32>
  %c = dynb.channel_concat %x, %z : (tensor<4x6x6xf32>, tensor<4x6x6xf32>) -> tensor<8x6x6xf32>
  // CHECK: dynb.conv2d %{{.*}} weight @p padding 0 : tensor<8x6x6xf32> -> tensor<4x6x6xf32>
  %p = dynb.conv2d %c weight @p padding 0 : tensor<8x6x6xf32> -> tensor<4x6x6xf32>
  return %p : tensor<4x6x6xf32>
}

// CHECK-LABEL: func.func @classifier
func.func @classifier(%x: tensor<4x6x6xf32>) -> tensor<5xf32> {
  // CHECK: %[[P:.*]] = dynb.maxpool2d %{{.*}} : tensor<4x6x6xf32> -> tensor<4x3x3xf32>
  %p = dynb.maxpool2d %x : tensor<4x6x6xf32> -> tensor<4x3x3xf32>
  // CHECK: dynb.flatten %[[P]] : tensor<4x3x3xf32> -> tensor<36xf32>
  %f = dynb.flatten %p : tensor<4x3x3xf32> -> tensor<36xf32>
  %y = dynb.linear %f weight @fc : tensor<36xf32> -> tensor<5xf32>
  return %y : tensor<5xf32>
}

// CHECK: dynb.instance
dynb.instance {
  // CHECK: dynb.embedding @feats[1] : tensor<8x6x6xf32>
  %f = dynb.embedding @feats [1] : tensor<8x6x6xf32>
  %s = dynb.conv2d %f weight @c1 bias @c1b padding 1 : tensor<8x6x6xf32> -> tensor<4x6x6xf32>
  %u = dynb.call @unary(%s) : (tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %b = dynb.call @binary(%s, %u) : (tensor<4x6x6xf32>, tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %y = dynb.call @classifier(%b) : (tensor<4x6x6xf32>) -> tensor<5xf32>
  dynb.output %y : tensor<5xf32>
}

// A batched lookup of maps keeps the map dimensions.
// CHECK: dynb.schedule
dynb.schedule depth first_instance 0 num_instances 2 launches 3 lower_bound 3 nodes 6 {
  // CHECK: dynb.lookup @feats [0, 1] : tensor<2x8x6x6xf32>
  %m = dynb.lookup @feats [0, 1] : tensor<2x8x6x6xf32>
  // CHECK: dynb.conv2d %{{.*}} weight @c1 bias @c1b padding 1 : tensor<2x8x6x6xf32> -> tensor<2x4x6x6xf32>
  %c = dynb.conv2d %m weight @c1 bias @c1b padding 1 : tensor<2x8x6x6xf32> -> tensor<2x4x6x6xf32>
  %y = dynb.batched_call @classifier(%c) : (tensor<2x4x6x6xf32>) -> tensor<2x5xf32>
  dynb.yield %y : tensor<2x5xf32>
}
