// RUN: dynb-opt %s -dynb-kernels-to-llvm | FileCheck %s

// A kernel as dynb-lower-launches makes it: tanh over [N x 8] windows.
#map = affine_map<(d0, d1) -> (d0, d1)>
!win = memref<?x8xf32, strided<[?, 1], offset: ?>>
func.func @k(%a: !win {llvm.noalias}, %b: !win {llvm.noalias})
    attributes {llvm.emit_c_interface} {
  linalg.generic {indexing_maps = [#map, #map],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : !win) outs(%b : !win) {
  ^bb0(%x: f32, %out: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  }
  return
}

// The JIT's pipeline: a loop nest over the descriptor's fields, the
// polynomial as LLVM intrinsics, and the C interface the runtime calls.
// CHECK-LABEL: llvm.func @k(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64
// CHECK: llvm.cond_br
// CHECK: llvm.intr.fma
// CHECK-NOT: math.
// CHECK: llvm.store
// CHECK-LABEL: llvm.func @_mlir_ciface_k(%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias})
// CHECK: llvm.call @k(
