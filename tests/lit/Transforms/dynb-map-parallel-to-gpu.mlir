// RUN: dynb-opt %s --pass-pipeline='builtin.module(func.func(dynb-map-parallel-to-gpu{block-size=128}))' -split-input-file -verify-diagnostics | FileCheck %s

// A [rows x 4] loop nest: one 1-D launch over rows * 4 threads, none when
// that is 0; row and column from the thread's linear index.
// CHECK-LABEL: func.func @rows_cols
// CHECK-SAME: (%[[A:.*]]: memref<?x4xf32>, %[[B:.*]]: memref<?x4xf32>)
// CHECK: %[[N:.*]] = memref.dim %[[A]]
// CHECK: %[[NONEMPTY:.*]] = arith.cmpi ne, %[[TOTAL:.*]], %{{.*}} : index
// CHECK: scf.if %[[NONEMPTY]] {
// CHECK: %[[ROUNDED:.*]] = arith.addi %[[TOTAL]], %{{.*}} : index
// CHECK: %[[GRID:.*]] = arith.divui %[[ROUNDED]], %[[BLOCK:.*]] : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]], %{{.*}} = %[[ONE:.*]], %{{.*}} = %[[ONE]]) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCK]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]])
// The block size is the constant, not gpu.block_dim: the kernel is compiled
// for it.
// CHECK: %[[BASE:.*]] = arith.muli %[[BX]], %[[BLOCK]] : index
// CHECK: %[[ID:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %{{.*}} : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[COL:.*]] = arith.remui %[[ID]], %[[COLS:.*]] : index
// CHECK: %[[ROW:.*]] = arith.divui %[[ID]], %[[COLS]] : index
// CHECK: %[[J:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[I:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[X:.*]] = memref.load %[[A]][%[[I]], %[[J]]]
// CHECK: memref.store %[[X]], %[[B]][%[[I]], %[[J]]]
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel
// CHECK: return
// The block size is the pass option.
// CHECK-LABEL: func.func @strided
// CHECK: arith.constant 128 : index
func.func @rows_cols(%a: memref<?x4xf32>, %b: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %a, %c0 : memref<?x4xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c4) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<?x4xf32>
    memref.store %x, %b[%i, %j] : memref<?x4xf32>
    scf.reduce
  }
  return
}

// Lower bound 2, step 3: iteration t is index 2 + 3t.
// CHECK: gpu.launch blocks(%[[BX2:[a-z0-9]+]], {{.*}} threads(%[[TX2:[a-z0-9]+]],
// CHECK: %[[BASE2:.*]] = arith.muli %[[BX2]], %{{.*}} : index
// CHECK: %[[ID2:.*]] = arith.addi %[[BASE2]], %[[TX2]] : index
// CHECK: scf.if
// CHECK: %[[SCALED:.*]] = arith.muli %[[ID2]], %[[STEP:.*]] : index
// CHECK: %[[K:.*]] = arith.addi %[[LB:.*]], %[[SCALED]] : index
// CHECK: memref.load %{{.*}}[%[[K]]]
func.func @strided(%a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  scf.parallel (%k) = (%c2) to (%n) step (%c3) {
    %x = memref.load %a[%k] : memref<?xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %a[%k] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

func.func @reduction(%a: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %a, %c0 : memref<?xf32>
  // expected-error @+1 {{a parallel loop with reductions has no GPU mapping yet}}
  %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %x = memref.load %a[%i] : memref<?xf32>
    scf.reduce(%x : f32) {
    ^bb0(%l: f32, %rr: f32):
      %s = arith.addf %l, %rr : f32
      scf.reduce.return %s : f32
    }
  }
  return %r : f32
}
