//===- LowerLaunches.cpp - Each launch's kernels (dynb-lower-launches) ----===//
//
// The pass form of `dynbc compile --emit=linalg`: the same launches, the same
// lowering (lowerLaunch), the kernels kept in the IR so that the JIT and GPU
// pipelines can run on them in dynb-opt.
//
//===----------------------------------------------------------------------===//
#include "dynb/Lowering/ModuleLowering.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

namespace dynb {
#define GEN_PASS_DEF_LOWERLAUNCHES
#include "dynb/Transforms/Passes.h.inc"
} // namespace dynb

using namespace mlir;
using namespace dynb;

namespace {

/// printSteps' lines without their comment markers.
ArrayAttr stepLines(Builder &b, const LoweredModule &lowered) {
  std::string text;
  llvm::raw_string_ostream os(text);
  lowered.printSteps(os);
  SmallVector<StringRef> lines;
  StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
  SmallVector<Attribute> attrs;
  for (StringRef line : lines)
    attrs.push_back(b.getStringAttr(line.ltrim("/").ltrim()));
  return b.getArrayAttr(attrs);
}

struct LowerLaunchesPass
    : public dynb::impl::LowerLaunchesBase<LowerLaunchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringSet<> seen;
    SmallVector<std::unique_ptr<LoweredModule>> lowered;
    for (ScheduleOp schedule : module.getOps<ScheduleOp>())
      for (Operation &op : schedule.getBody().front()) {
        if (isa<GatherOp, YieldOp, LookupOp, BatchedSoftmaxXentOp,
                BatchedSoftmaxXentGradOp, LinearGradOp, BatchedEmbeddingGradOp,
                ZerosOp>(op))
          continue;
        if (!seen.insert(launchCodeKey(op)).second)
          continue;
        Operation *target = &op;
        if (auto call = dyn_cast<BatchedCallOp>(op))
          target = module.lookupSymbol<func::FuncOp>(call.getCallee());
        if (!target) {
          op.emitOpError("calls a module that is not in the module");
          return signalPassFailure();
        }
        // The name KernelCache::lowerOnly gives a batched op when nothing
        // is compiled yet, as in `dynbc compile`.
        std::string wrapper = "op_" + op.getName().stripDialect().str() + "_0";
        auto launch = lowerLaunch(target, wrapper);
        if (failed(launch))
          return signalPassFailure();
        lowered.push_back(std::move(*launch));
      }
    // Appended after the walk, which must see the schedules alone.
    Builder b(&getContext());
    for (std::unique_ptr<LoweredModule> &l : lowered) {
      ModuleOp kernels = l->kernels.release();
      kernels->setAttr("dynb.launch", b.getStringAttr(l->name));
      kernels->setAttr("dynb.steps", stepLines(b, *l));
      module.getBody()->push_back(kernels);
    }
  }
};

} // namespace
