//===- PlanBuilder.cpp - Schedules to runtime plans -----------------------===//
//
// Reads a `dynb.schedule` op by op and hands each launch to PlanAssembler,
// which owns how launches become plan steps (shared with the Engine).
//
//===----------------------------------------------------------------------===//
#include "dynb/Lowering/PlanBuilder.h"
#include "dynb/Lowering/PlanAssembler.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace dynb;

namespace {

int64_t rowWidth(Type t) {
  auto r = cast<RankedTensorType>(t);
  int64_t w = 1;
  for (int64_t d : r.getShape().drop_front())
    w *= d;
  return w;
}

class PlanEmitter {
public:
  PlanEmitter(ScheduleOp schedule, KernelCache &cache, PlanStats &stats)
      : schedule(schedule), module(schedule->getParentOfType<ModuleOp>()),
        cache(cache),
        assembler([this](StringRef name) { return paramShape(name); }, stats) {}

  FailureOr<rt::Plan> run();

private:
  std::pair<int64_t, int64_t> paramShape(StringRef name) {
    auto param = module.lookupSymbol<ParamOp>(name);
    assert(param && "the verifier checked every parameter reference");
    // A matrix as itself, a vector as one row, a stack of per-expert
    // matrices as their rows one after another; rank 4 (a table of feature
    // maps, convolution weights): one row per entry of the first dimension,
    // which is what a lookup copies.
    ArrayRef<int64_t> shape = param.getTensorType().getShape();
    int64_t cols = shape.back();
    if (shape.size() == 4)
      cols = shape[1] * shape[2] * shape[3];
    return {param.getTensorType().getNumElements() / cols, cols};
  }
  void emitGather(GatherOp op);
  void emitLaunch(const LoweredSteps &m, Operation *launch);

  ScheduleOp schedule;
  ModuleOp module;
  KernelCache &cache;
  PlanAssembler assembler;
  DenseMap<Value, AssembledValue> values;
};

} // namespace

void PlanEmitter::emitGather(GatherOp op) {
  SmallVector<rt::Region> srcs;
  for (Value v : op.getSources())
    srcs.push_back(values.lookup(v).region);
  values[op.getResult()] =
      assembler.gather(srcs, op.getRows(), rowWidth(op.getType()));
}

void PlanEmitter::emitLaunch(const LoweredSteps &m, Operation *launch) {
  int64_t n = cast<RankedTensorType>(launch->getNumOperands()
                                         ? launch->getOperand(0).getType()
                                         : launch->getResult(0).getType())
                  .getDimSize(0);
  SmallVector<AssembledValue> args;
  for (Value v : launch->getOperands()) {
    AssembledValue a = values.lookup(v);
    // Only a copy made for this use alone may be redirected.
    if (!v.hasOneUse())
      a.copyStep = -1;
    args.push_back(a);
  }
  SmallVector<rt::Region> results;
  assembler.launch(m, n, args, results);
  for (auto [i, r] : llvm::enumerate(results))
    values[launch->getResult(i)] = {r, -1};
}

FailureOr<rt::Plan> PlanEmitter::run() {
  for (Operation &op : schedule.getBody().front()) {
    if (auto lookup = dyn_cast<LookupOp>(op)) {
      rt::Region dst = assembler.lookup(lookup.getTable(), lookup.getIndices());
      RankedTensorType type = lookup.getResult().getType();
      if (type.getRank() == 4)
        dst = assembler.relayoutMaps(dst, type.getDimSize(1),
                                     type.getDimSize(2), type.getDimSize(3),
                                     /*toMapLayout=*/true);
      values[lookup.getResult()] = {dst, -1};
    } else if (auto xent = dyn_cast<BatchedSoftmaxXentOp>(op)) {
      values[xent.getLoss()] = {
          assembler.softmaxXent(values.lookup(xent.getLogits()).region,
                                xent.getLabels()),
          -1};
    } else if (auto grad = dyn_cast<BatchedSoftmaxXentGradOp>(op)) {
      values[grad.getResult()] = {
          assembler.softmaxXentGrad(values.lookup(grad.getLogits()).region,
                                    grad.getLabels()),
          -1};
    } else if (auto grad = dyn_cast<LinearGradOp>(op)) {
      assembler.linearGrad(values.lookup(grad.getAdjoint()).region,
                           values.lookup(grad.getInput()).region,
                           grad.getWeight(),
                           grad.getBias() ? *grad.getBias() : StringRef());
    } else if (auto grad = dyn_cast<BatchedEmbeddingGradOp>(op)) {
      assembler.embeddingGrad(values.lookup(grad.getAdjoint()).region,
                              grad.getTable(), grad.getRows());
    } else if (auto zeros = dyn_cast<ZerosOp>(op)) {
      auto type = zeros.getResult().getType();
      values[zeros.getResult()] = {
          assembler.zeros(type.getDimSize(0), rowWidth(type)), -1};
    } else if (auto gather = dyn_cast<GatherOp>(op)) {
      emitGather(gather);
    } else if (auto yield = dyn_cast<YieldOp>(op)) {
      for (Value v : yield.getValues()) {
        auto type = cast<RankedTensorType>(v.getType());
        rt::Region r = values.lookup(v).region;
        // Outputs leave in PyTorch's plain C x H x W order.
        if (type.getRank() == 4)
          r = assembler.relayoutMaps(r, type.getDimSize(1), type.getDimSize(2),
                                     type.getDimSize(3),
                                     /*toMapLayout=*/false);
        assembler.addOutput(r);
      }
    } else if (auto dispatch = dyn_cast<DispatchOp>(op)) {
      auto experts = module.lookupSymbol<func::FuncOp>(dispatch.getExperts());
      FailureOr<const LoweredModule *> m = cache.getModule(experts);
      if (failed(m))
        return failure();
      DispatchLaunch d;
      d.x = values.lookup(dispatch.getInput()).region;
      d.gate = dispatch.getGate();
      if (auto noise = dispatch.getNoise()) {
        d.noise = *noise;
        d.noiseSeed = dispatch.getNoiseSeed();
      }
      d.topK = dispatch.getKAttr().getInt();
      d.outCols = rowWidth(dispatch.getResult().getType());
      values[dispatch.getResult()] = {assembler.dispatch(d, **m), -1};
    } else if (auto call = dyn_cast<BatchedCallOp>(op)) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      FailureOr<const LoweredModule *> m = cache.getModule(callee);
      if (failed(m))
        return failure();
      emitLaunch(**m, &op);
    } else {
      FailureOr<const LoweredModule *> m = cache.getOp(&op);
      if (failed(m))
        return failure();
      emitLaunch(**m, &op);
    }
  }
  return assembler.finish();
}

FailureOr<rt::Plan> dynb::buildPlan(ScheduleOp schedule, KernelCache &cache,
                                    PlanStats *stats) {
  PlanStats local;
  PlanEmitter emitter(schedule, cache, stats ? *stats : local);
  return emitter.run();
}
