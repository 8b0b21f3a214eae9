// RUN: dynb-opt %s -dynb-kernels-to-gpu=block-size=64 | FileCheck %s --check-prefix=GPU

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

// The GPU pipeline: one guarded 1-D launch of 64-thread blocks, the kernel
// outlined with the memrefs as its only arguments.
// GPU-LABEL: func.func @k(
// GPU-SAME: %[[A:[a-z0-9]+]]: memref<?x8xf32
// GPU-SAME: %[[B:[a-z0-9]+]]: memref<?x8xf32
// GPU: scf.if
// GPU: gpu.launch_func @k_kernel::@k_kernel blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%c64, %{{.*}}, %{{.*}}) args(%[[A]] : {{.*}}, %[[B]] : {{.*}})
// GPU-LABEL: gpu.module @k_kernel
// GPU: gpu.func @k_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// GPU-NOT: math.tanh
// GPU: math.fma
// GPU: gpu.return
