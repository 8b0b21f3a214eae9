// RUN: dynb-opt %s -dynb-lower-launches | FileCheck %s

// One schedule of two launches of @cell (lowered once) and two batched adds
// of one signature at different batch sizes (lowered once, wrapped as a
// module of one op). Lookups, gathers and the yield run no code of their own.
dynb.param @E : tensor<10x4xf32>
dynb.param @W : tensor<4x4xf32>
func.func @cell(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  %s = dynb.sigmoid %y : tensor<4xf32>
  %h = dynb.mul %s, %y : tensor<4xf32>
  return %h : tensor<4xf32>
}
dynb.schedule agenda first_instance 0 num_instances 1 launches 5 lower_bound 5 nodes 5 {
  %x = dynb.lookup @E [1, 2] : tensor<2x4xf32>
  %h = dynb.batched_call @cell(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %a = dynb.add %h, %h : tensor<2x4xf32>
  %g = dynb.gather %a rows [0, 0] : (tensor<2x4xf32>) -> tensor<1x4xf32>
  %h2 = dynb.batched_call @cell(%g) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %b = dynb.add %h2, %h2 : tensor<1x4xf32>
  dynb.yield %b : tensor<1x4xf32>
}

// The input stays as it was; the kernels modules come after it.
// CHECK-LABEL: func.func @cell(
// CHECK: dynb.schedule
// CHECK: dynb.yield

// The linear is a GEMM step; the sigmoid and the mul that reads it fuse
// into one kernel over [N x 4] windows.
// CHECK-LABEL: module attributes {dynb.launch = "cell", dynb.steps = [
// CHECK-SAME: "module @cell: 2 steps, 2 local buffers [N x cols] (4, 4)",
// CHECK-SAME: "step 0: t0[:, 0:4] = gemm(arg0[:, 0:4], @W^T)   (oneDNN)",
// CHECK-SAME: "step 1: call @cell_k0(t0[:, 0:4], t1[:, 0:4])",
// CHECK-SAME: "results: t1[:, 0:4]"]}
// CHECK: func.func @cell_k0(%[[IN:.*]]: memref<?x4xf32, strided<[?, 1], offset: ?>> {llvm.noalias}, %[[OUT:.*]]: memref<?x4xf32, strided<[?, 1], offset: ?>> {llvm.noalias})
// CHECK-SAME: dynb.kernel = "fused sigmoid,mul"
// CHECK: linalg.generic {{.*}} ins(%[[IN]] : {{.*}}) outs(%[[OUT]] : {{.*}})
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK: linalg.yield

// CHECK-LABEL: module attributes {dynb.launch = "op_add_0"
// CHECK-SAME: "step 0: call @op_add_0_k0(arg0[:, 0:4], arg1[:, 0:4], t0[:, 0:4])"
// CHECK: func.func @op_add_0_k0(
// CHECK: arith.addf
// CHECK-NOT: module attributes
