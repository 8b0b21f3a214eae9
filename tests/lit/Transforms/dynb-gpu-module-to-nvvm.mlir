// RUN: dynb-opt %s --pass-pipeline='builtin.module(gpu.module(dynb-gpu-module-to-nvvm))' -split-input-file -verify-diagnostics | FileCheck %s

// floor, fabs and fma stay LLVM intrinsics (single PTX instructions), where
// convert-gpu-to-nvvm would call libdevice's __nv_floorf and __nv_fabsf.
// CHECK-LABEL: gpu.module @k
// CHECK: llvm.func @k(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-SAME: nvvm.kernel
// CHECK: nvvm.read.ptx.sreg.ctaid.x
// CHECK: nvvm.read.ptx.sreg.tid.x
// CHECK: llvm.load
// CHECK: llvm.intr.floor
// CHECK: llvm.intr.fabs
// CHECK: llvm.intr.fma
// CHECK: llvm.store
// CHECK-NOT: __nv_
// CHECK-NOT: llvm.call
gpu.module @k {
  gpu.func @k(%a: memref<?xf32>) kernel {
    %bid = gpu.block_id x
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    %i = arith.addi %bid, %tid : index
    %in = arith.cmpi ult, %i, %n : index
    cf.cond_br %in, ^body, ^done
  ^body:
    %x = memref.load %a[%i] : memref<?xf32>
    %f = llvm.intr.floor(%x) : (f32) -> f32
    %g = llvm.intr.fabs(%f) : (f32) -> f32
    %h = llvm.intr.fma(%g, %x, %f) : (f32, f32, f32) -> f32
    memref.store %h, %a[%i] : memref<?xf32>
    cf.br ^done
  ^done:
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @m(%a: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %x = memref.load %a[%c0] : memref<?xf32>
    // expected-error @+1 {{'math.tanh' would need libdevice on the GPU: expand it (dynb-expand-math) or lower it to LLVM intrinsics (convert-math-to-llvm) first}}
    %t = math.tanh %x : f32
    memref.store %t, %a[%c0] : memref<?xf32>
    gpu.return
  }
}
