//===- GpuKernelCompiler.h - Fused kernels as NVVM and PTX ------*- C++ -*-===//
//
// The GPU form of the kernels ModuleLowering makes (linalg.generic over
// [batch x width] memrefs): each elementwise loop nest becomes a gpu.launch
// of a 1-D grid, one thread an element, outlined into a gpu.module, lowered
// to NVVM and compiled to PTX by LLVM's NVPTX backend. No CUDA toolkit and
// no libdevice are needed: tanh and exp are expanded into polynomials first,
// as on the CPU, and what remains (floor, fabs, fma) are native PTX
// instructions.
//
// mapKernelsToGpu and lowerGpuModulesToNVVM run the dynb-kernels-to-gpu and
// dynb-gpu-to-nvvm pipelines (dynb/Transforms/Pipelines.h), which dynb-opt
// runs by name; their passes of our own (dynb-map-parallel-to-gpu,
// dynb-gpu-module-to-nvvm) are declared in dynb/Transforms/Passes.td.
//
// Kernel ABI (what a launcher passes): every memref argument an outlined
// kernel uses, in the order of the gpu.launch_func operands (see
// `dynbc compile --emit=gpu`), expanded as MLIR's memref descriptor:
// allocated pointer, aligned pointer, offset, sizes[2], strides[2] (index =
// i64). Block size is GpuTarget::blockSize; the grid is ceil(N*W / block)
// blocks, and no launch is made for an empty batch.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_JIT_GPUKERNELCOMPILER_H
#define DYNB_JIT_GPUKERNELCOMPILER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>

namespace dynb {

/// Which GPU the PTX is for.
struct GpuTarget {
  /// An NVPTX processor, e.g. sm_90 (Hopper) or sm_75 for PTX that any GPU
  /// from Turing on can run (the driver JIT-compiles it for newer ones).
  std::string chip = "sm_90";
  /// NVPTX features; the PTX ISA version the output declares.
  std::string features = "+ptx80";
  /// Threads a block.
  unsigned blockSize = 256;
};

/// One outlined kernel module compiled to PTX.
struct PtxModule {
  /// The gpu.module's symbol; the kernel entry inside has the same name.
  std::string name;
  std::string ptx;
};

/// One launch a host function makes: what a launcher needs to know.
struct GpuLaunch {
  /// The kernel function of `--emit=linalg` that makes the launch.
  std::string hostFunction;
  /// The gpu.module (PtxModule::name) and the kernel entry in it.
  std::string module, kernel;
  /// The kernel's arguments: for each, which argument of hostFunction it
  /// is.
  llvm::SmallVector<unsigned, 4> args;
};

/// The launches of a module that mapKernelsToGpu made, in order. Fails (with
/// a diagnostic at the launch) if a kernel argument is not a memref argument
/// of its host function, which would break the ABI above.
mlir::FailureOr<llvm::SmallVector<GpuLaunch>>
describeGpuLaunches(mlir::ModuleOp kernels);

/// Lowers a kernels module (linalg on memrefs, as ModuleLowering makes it)
/// in place to host functions that launch outlined GPU kernels (scf, memref,
/// arith and gpu dialects; the `--emit=gpu` stage).
mlir::LogicalResult mapKernelsToGpu(mlir::ModuleOp kernels,
                                    const GpuTarget &target);

/// Lowers the gpu.modules of a module that mapKernelsToGpu made to the LLVM
/// and NVVM dialects, in place; host functions are left as they are.
mlir::LogicalResult lowerGpuModulesToNVVM(mlir::ModuleOp kernels);

/// Translates each NVVM-lowered gpu.module to LLVM IR, optimises it at O3
/// and emits PTX for `target`.
mlir::FailureOr<llvm::SmallVector<PtxModule>>
compileGpuModulesToPtx(mlir::ModuleOp kernels, const GpuTarget &target);

/// The whole pipeline: mapKernelsToGpu, lowerGpuModulesToNVVM,
/// compileGpuModulesToPtx. Consumes `kernels`' linalg form.
mlir::FailureOr<llvm::SmallVector<PtxModule>>
compileKernelsToPtx(mlir::ModuleOp kernels, const GpuTarget &target);

} // namespace dynb

#endif // DYNB_JIT_GPUKERNELCOMPILER_H
