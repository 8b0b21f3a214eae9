// RUN: dynb-opt %s | dynb-opt | FileCheck %s
// RUN: dynb-opt %s -mlir-print-op-generic | dynb-opt | FileCheck %s

// CHECK: dynb.param @E : tensor<10x4xf32>
dynb.param @E : tensor<10x4xf32>
dynb.param @W : tensor<12x4xf32>
dynb.param @b : tensor<12xf32>

// CHECK-LABEL: func.func @cell
func.func @cell(%x: tensor<4xf32>, %c: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK: %[[Y:.*]] = dynb.linear %{{.*}} weight @W bias @b : tensor<4xf32> -> tensor<12xf32>
  %y = dynb.linear %x weight @W bias @b : tensor<4xf32> -> tensor<12xf32>
  // CHECK: dynb.slice %[[Y]][4, 4] : tensor<12xf32> -> tensor<4xf32>
  %i = dynb.slice %y [0, 4] : tensor<12xf32> -> tensor<4xf32>
  %o = dynb.slice %y [4, 4] : tensor<12xf32> -> tensor<4xf32>
  %u = dynb.slice %y [8, 4] : tensor<12xf32> -> tensor<4xf32>
  // CHECK: dynb.sigmoid
  %si = dynb.sigmoid %i : tensor<4xf32>
  // CHECK: dynb.tanh
  %tu = dynb.tanh %u : tensor<4xf32>
  // CHECK: dynb.relu
  %ro = dynb.relu %o : tensor<4xf32>
  // CHECK: dynb.neg
  %ng = dynb.neg %ro : tensor<4xf32>
  // CHECK: dynb.mul
  %m = dynb.mul %si, %tu : tensor<4xf32>
  // CHECK: dynb.add
  %c2 = dynb.add %m, %c : tensor<4xf32>
  // CHECK: dynb.concat %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %cc = dynb.concat %ro, %c2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %h = dynb.slice %cc [0, 4] : tensor<8xf32> -> tensor<4xf32>
  return %h, %c2 : tensor<4xf32>, tensor<4xf32>
}

// CHECK: dynb.instance {
dynb.instance {
  // CHECK: %[[X:.*]] = dynb.embedding @E[3] : tensor<4xf32>
  %x = dynb.embedding @E [3] : tensor<4xf32>
  // CHECK: dynb.call @cell(%[[X]], %[[X]]) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %h, %c = dynb.call @cell(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  // CHECK: dynb.output %{{.*}} : tensor<4xf32>
  dynb.output %h : tensor<4xf32>
}

// CHECK: dynb.schedule depth first_instance 0 num_instances 2 launches 3 lower_bound 3 nodes 6 {
dynb.schedule depth first_instance 0 num_instances 2 launches 3 lower_bound 3 nodes 6 {
  // CHECK: dynb.lookup @E [1, 2] : tensor<2x4xf32>
  %x = dynb.lookup @E [1, 2] : tensor<2x4xf32>
  // CHECK: dynb.batched_call @cell
  %h, %c = dynb.batched_call @cell(%x, %x) : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  // CHECK: dynb.gather %{{.*}}, %{{.*}} rows [1, 1, 0, 0] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = dynb.gather %h, %c rows [1, 1, 0, 0] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK: dynb.linear %{{.*}} weight @W : tensor<2x4xf32> -> tensor<2x12xf32>
  %l = dynb.linear %g weight @W : tensor<2x4xf32> -> tensor<2x12xf32>
  // CHECK: dynb.yield %{{.*}} : tensor<2x4xf32>
  dynb.yield %g : tensor<2x4xf32>
}
