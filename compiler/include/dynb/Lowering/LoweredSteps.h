//===- LoweredSteps.h - A lowered module's steps, without MLIR --*- C++ -*-===//
//
// The batch-size-independent form of a module as plain data: GEMM steps,
// kernel steps over column windows, and the compiled kernels' entry points.
// ModuleLowering produces it; PlanAssembler turns it into runtime steps. It
// holds no MLIR, so the embedded API's fast path can use it without MLIR
// headers.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_LOWERING_LOWEREDSTEPS_H
#define DYNB_LOWERING_LOWEREDSTEPS_H

#include "dynb/Runtime/Plan.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace dynb {

/// A column window of one of the module's arguments or local buffers; the
/// window spans every row (the batch).
struct SlotRef {
  enum class Kind : uint8_t { Arg, Local };
  Kind kind = Kind::Local;
  unsigned index = 0;
  int64_t col = 0;
  int64_t cols = 0;
};

struct LoweredStep {
  /// Map: a feature-map op the runtime runs with oneDNN (MapLowering.cpp).
  enum class Kind : uint8_t { Gemm, Kernel, Map };
  Kind kind = Kind::Kernel;
  // Gemm: c = a * weight^T (+ bias).
  SlotRef a, c;
  std::string weight, bias;
  /// In an expert module: weight and bias are stacked per expert and the
  /// GEMM reads the running expert's slice.
  bool perExpert = false;
  /// Gemm: a ReLU on c, fused as a oneDNN post-op (the linear's only use).
  bool relu = false;
  /// Gemm: c = a * weight, the weight as stored (dynb.linear_transpose).
  bool weightAsStored = false;
  // Kernel: kernels[kernel] called on args (inputs, then outputs).
  unsigned kernel = 0;
  llvm::SmallVector<SlotRef, 8> args;
  /// A concat whose inputs are all whole module arguments: input i is
  /// argument concatArgs[i], copied to the window args[n + i]. A caller
  /// that gathers those arguments anyway may gather them straight into the
  /// windows and skip this step.
  llvm::SmallVector<unsigned, 4> concatArgs;
  /// Map: the runtime step without its regions and buffers; its inputs are
  /// `args`, its output `c`, its convolution weight and bias `weight` and
  /// `bias`.
  rt::MapStep map;
};

/// Everything about a lowered module that plan assembly reads.
struct LoweredSteps {
  std::string name;
  /// Comment lines printSteps() puts first (how a dispatch runs the module).
  std::string header;
  llvm::SmallVector<int64_t, 4> argCols;
  llvm::SmallVector<int64_t, 8> localCols;
  llvm::SmallVector<LoweredStep, 8> steps;
  llvm::SmallVector<SlotRef, 2> results;
  /// Kernel symbol names, indexed by LoweredStep::kernel.
  llvm::SmallVector<std::string, 4> kernelNames;
  /// Filled by the JIT, indexed like kernelNames.
  llvm::SmallVector<rt::KernelFn, 4> kernelFns;
};

} // namespace dynb

#endif // DYNB_LOWERING_LOWEREDSTEPS_H
