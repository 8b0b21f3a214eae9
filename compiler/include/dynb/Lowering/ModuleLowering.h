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

#include "dynb/Lowering/LoweredSteps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>

namespace mlir {
class ExecutionEngine;
}
namespace llvm::orc {
class LLJIT;
}

namespace dynb {

/// The batch-size-independent form of a module: its steps (LoweredSteps)
/// and the MLIR it was compiled from.
struct LoweredModule : LoweredSteps {
  /// The kernels in linalg form (what `--emit=linalg` prints).
  mlir::OwningOpRef<mlir::ModuleOp> kernels;
  /// Filled by the JIT: the engine that compiled the kernels, or the JIT
  /// that loaded them from the persistent kernel cache.
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::unique_ptr<llvm::orc::LLJIT> loadedCode;

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

/// A batched per-instance op of a schedule (`dynb.linear`, `dynb.add`, ...)
/// as a module `name` of one op on per-instance values, built in the op's
/// context in a new module put in `holder`.
mlir::func::FuncOp wrapBatchedOp(mlir::Operation *batchedOp,
                                 llvm::StringRef name,
                                 mlir::OwningOpRef<mlir::ModuleOp> &holder);

/// Lowers what one launch runs, as `dynbc compile --emit=linalg` and the
/// dynb-lower-launches pass show it: a callee `func.func`, the expert module
/// of a `dynb.dispatch` (under a header line saying how the runtime runs
/// the dispatch), or a batched op wrapped as module `wrapperName`.
mlir::FailureOr<std::unique_ptr<LoweredModule>>
lowerLaunch(mlir::Operation *calleeOrBatchedOp, llvm::StringRef wrapperName);

/// What identifies the code one launch of a schedule runs: the callee of a
/// batched call; for any other op its name, attributes and per-instance
/// operand shapes (rank and last dimension), so batched ops of different
/// batch sizes share it. Launches of one key lower to the same kernels.
std::string launchCodeKey(mlir::Operation &launch);

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
