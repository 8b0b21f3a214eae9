//===- KernelCompiler.h - Kernels from linalg to machine code ---*- C++ -*-===//
#ifndef DYNB_JIT_KERNELCOMPILER_H
#define DYNB_JIT_KERNELCOMPILER_H

#include "dynb/Lowering/ModuleLowering.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace dynb {

/// Lowers a kernels module (linalg on memrefs) to the LLVM dialect in place:
/// linalg to loops, tanh/exp to polynomials (so LLVM can vectorise them:
/// scalar libm calls cost more than the GEMMs), then to LLVM. Runs the
/// dynb-kernels-to-llvm pipeline (dynb/Transforms/Pipelines.h).
mlir::LogicalResult lowerKernelsToLLVMDialect(mlir::ModuleOp kernels);

/// The pass that expands tanh and exp into polynomials over arith ops
/// (dynb-expand-math, declared in dynb/Transforms/Passes.td); the GPU
/// pipeline uses it too, so PTX needs no libdevice.
std::unique_ptr<mlir::Pass> createExpandMathPass();

/// Translates an LLVM-dialect kernels module to LLVM IR, optimised at O3 for
/// this machine, and prints it.
mlir::LogicalResult printOptimizedLLVMIR(mlir::ModuleOp kernels,
                                         llvm::raw_ostream &os);

class KernelObjectStore;

enum class JitOutcome { Compiled, Loaded, NoKernels };

/// Lowers, JIT-compiles and resolves every kernel of `lowered`, filling
/// kernelFns and engine; consumes lowered.kernels' linalg form. With a
/// `store`, loads the kernels from it instead when it holds them (filling
/// kernelFns and loadedCode), and stores what it compiles. A module without
/// kernels (GEMMs alone) needs neither.
mlir::FailureOr<JitOutcome>
jitCompile(LoweredModule &lowered, const KernelObjectStore *store = nullptr);

} // namespace dynb

#endif // DYNB_JIT_KERNELCOMPILER_H
