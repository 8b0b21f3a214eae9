//===- Pipelines.h - dynb's pass pipelines, registered by name --*- C++ -*-===//
//
// The pipelines after dynb-lower-launches, as functions that the JIT and the
// GPU compiler call and dynb-opt runs by name, so that each stage of `dynbc
// compile --emit` is one pipeline (docs/emit-stages.md). Each runs on a
// kernels module, the nested `builtin.module`s dynb-lower-launches makes:
//
//   dynb-opt --pass-pipeline='builtin.module(dynb-lower-launches,
//       builtin.module(dynb-kernels-to-llvm))'
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_TRANSFORMS_PIPELINES_H
#define DYNB_TRANSFORMS_PIPELINES_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace dynb {

/// dynb-kernels-to-llvm: linalg on memrefs to the LLVM dialect, what the JIT
/// translates and compiles: linalg to loops, tanh and exp to polynomials
/// (dynb-expand-math), strided memrefs to plain address arithmetic, then
/// scf, math, arith, memref, func and cf to LLVM.
void buildKernelsToLLVMPipeline(mlir::OpPassManager &pm);

struct KernelsToGpuOptions
    : public mlir::PassPipelineOptions<KernelsToGpuOptions> {
  Option<unsigned> blockSize{*this, "block-size",
                             llvm::cl::desc("Threads a block"),
                             llvm::cl::init(256)};
};

/// dynb-kernels-to-gpu: linalg on memrefs to host functions that launch
/// outlined kernels (`--emit=gpu`): linalg to scf.parallel, tanh and exp to
/// polynomials, each loop nest a 1-D gpu.launch (dynb-map-parallel-to-gpu),
/// constants and memref.dim sunk into the launch so that the outlined
/// kernel takes the memrefs alone.
void buildKernelsToGpuPipeline(mlir::OpPassManager &pm,
                               const KernelsToGpuOptions &options);

/// dynb-gpu-to-nvvm: the gpu.modules dynb-kernels-to-gpu outlined, to the
/// LLVM and NVVM dialects without libdevice (dynb-gpu-module-to-nvvm); host
/// functions stay as they are. The NVPTX backend takes it from there.
void buildGpuToNVVMPipeline(mlir::OpPassManager &pm);

/// Registers the three pipelines by name, for dynb-opt.
void registerDynbPipelines();

/// Registers the dialects the pipelines' inputs and outputs hold, for tools
/// that parse them (dynb-opt reading `--emit=linalg` or `--emit=gpu`).
void registerPipelineDialects(mlir::DialectRegistry &registry);

} // namespace dynb

#endif // DYNB_TRANSFORMS_PIPELINES_H
