// RUN: dynb-opt %s | dynb-opt | FileCheck %s
// RUN: dynb-opt %s -mlir-print-op-generic | dynb-opt | FileCheck %s

// A mixture of 3 experts with stacked parameters; the dispatch prints and
// parses back, with and without noise.

// CHECK: dynb.param @W1 : tensor<3x8x4xf32>
dynb.param @X : tensor<5x4xf32>
dynb.param @W_gate : tensor<3x4xf32>
dynb.param @W_noise : tensor<3x4xf32>
dynb.param @W1 : tensor<3x8x4xf32>
dynb.param @b1 : tensor<3x8xf32>
dynb.param @W2 : tensor<3x6x8xf32>
dynb.param @b2 : tensor<3x6xf32>

// CHECK-LABEL: func.func @ffn
// CHECK-SAME: attributes {dynb.experts = 3 : i64}
func.func @ffn(%x: tensor<4xf32>) -> tensor<6xf32> attributes {dynb.experts = 3 : i64} {
  // CHECK: dynb.linear %{{.*}} weight @W1 bias @b1 : tensor<4xf32> -> tensor<8xf32>
  %h = dynb.linear %x weight @W1 bias @b1 : tensor<4xf32> -> tensor<8xf32>
  %r = dynb.relu %h : tensor<8xf32>
  %y = dynb.linear %r weight @W2 bias @b2 : tensor<8xf32> -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// CHECK-LABEL: dynb.instance
dynb.instance {
  %x = dynb.embedding @X [0] : tensor<4xf32>
  // CHECK: %[[Y:.*]] = dynb.dispatch %{{.*}} gate @W_gate experts @ffn top 2 : tensor<4xf32> -> tensor<6xf32>
  %y = dynb.dispatch %x gate @W_gate experts @ffn top 2 : tensor<4xf32> -> tensor<6xf32>
  // CHECK: dynb.dispatch %{{.*}} gate @W_gate noise @W_noise experts @ffn top 3 {noise_seed = 7 : i64} : tensor<4xf32> -> tensor<6xf32>
  %z = dynb.dispatch %x gate @W_gate noise @W_noise experts @ffn top 3 {noise_seed = 7 : i64} : tensor<4xf32> -> tensor<6xf32>
  %s = dynb.add %y, %z : tensor<6xf32>
  dynb.output %s : tensor<6xf32>
}

// The batched form: the same op on a leading batch dimension.
// CHECK-LABEL: dynb.schedule
dynb.schedule depth first_instance 0 num_instances 2 launches 2 lower_bound 2 nodes 4 {
  %x = dynb.lookup @X [0, 1] : tensor<2x4xf32>
  // CHECK: dynb.dispatch %{{.*}} gate @W_gate experts @ffn top 1 : tensor<2x4xf32> -> tensor<2x6xf32>
  %y = dynb.dispatch %x gate @W_gate experts @ffn top 1 : tensor<2x4xf32> -> tensor<2x6xf32>
  dynb.yield %y : tensor<2x6xf32>
}
