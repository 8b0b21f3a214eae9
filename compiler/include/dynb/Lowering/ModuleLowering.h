//===- ModuleLowering.h - A module body as GEMM and kernel steps -*- C++
//-*-===//
//
// A module (a func.func of per-instance dynb ops) is lowered once, for any
// batch size: linear ops become GEMM steps that the runtime hands to oneDNN,
// and the elementwise ops between them fuse into kernels, each one
// `linalg.generic` over [batch x width] memrefs whose batch is a runtime
// dimension. Slices become column windows, never copies.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_LOWERING_MODULELOWERING_H
#define DYNB_LOWERING_MODULELOWERING_H

#include "dynb/Runtime/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>

namespace mlir {
class ExecutionEngine;
}

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

/// The batch-size-independent form of a module.
struct LoweredModule {
  std::string name;
  /// Comment lines printSteps() puts first (how a dispatch runs the module).
  std::string header;
  llvm::SmallVector<int64_t, 4> argCols;
  llvm::SmallVector<int64_t, 8> localCols;
  llvm::SmallVector<LoweredStep, 8> steps;
  llvm::SmallVector<SlotRef, 2> results;
  /// Kernel symbol names in `kernels`, indexed by LoweredStep::kernel.
  llvm::SmallVector<std::string, 4> kernelNames;
  /// The kernels in linalg form (what `--emit=linalg` prints).
  mlir::OwningOpRef<mlir::ModuleOp> kernels;
  /// Filled by the JIT.
  llvm::SmallVector<rt::KernelFn, 4> kernelFns;
  std::unique_ptr<mlir::ExecutionEngine> engine;

  LoweredModule();
  ~LoweredModule();
  /// One line a step, for `--emit=linalg` and debugging.
  void printSteps(llvm::raw_ostream &os) const;
};

/// Lowers `fn`'s body. Kernel names start with `kernelPrefix`. Emits a
/// diagnostic at the offending op and fails on an op that cannot be lowered
/// (calls inside modules, embeddings, values that are not 1-D per instance).
mlir::FailureOr<std::unique_ptr<LoweredModule>>
lowerModuleBody(mlir::func::FuncOp fn, llvm::StringRef kernelPrefix);

/// Whether `op` is a feature-map op that lowers to a map step.
bool isMapOp(mlir::Operation *op);

/// The map step of a feature-map op on the given input slots, its result
/// in `out` (a new local the caller made). `fuseRelu` runs a ReLU after a
/// convolution (oneDNN post-op).
LoweredStep lowerMapOp(mlir::Operation *op, llvm::ArrayRef<SlotRef> inputs,
                       SlotRef out, bool fuseRelu);

/// Loads the dialects the lowering and the JIT create ops of.
void loadLoweringDialects(mlir::MLIRContext &ctx);

} // namespace dynb

#endif // DYNB_LOWERING_MODULELOWERING_H
