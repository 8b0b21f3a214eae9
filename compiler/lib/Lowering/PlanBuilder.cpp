//===- PlanBuilder.cpp - Schedules to runtime plans -----------------------===//
#include "dynb/Lowering/PlanBuilder.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringMap.h"

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
      : schedule(schedule), cache(cache), stats(stats) {}

  FailureOr<rt::Plan> run();

private:
  rt::BufferId paramBuffer(StringRef name);
  rt::Region fullRegion(rt::BufferId id) {
    const rt::BufferDesc &d = plan.buffers[id];
    return {id, 0, d.rows, 0, d.cols};
  }
  rt::Region newValue(int64_t rows, int64_t cols) {
    return fullRegion(plan.addArenaBuffer(rows, cols));
  }
  void emitGather(GatherOp op);
  /// A map step of a module (MapLowering.cpp's form) on resolved regions.
  rt::Step mapStep(const LoweredStep &s, ArrayRef<rt::Region> inputs,
                   const rt::Region &out);
  /// A copy of batched maps `r` between PyTorch's plain C x H x W and the
  /// runtime's map layout, in a fresh buffer.
  rt::Region relayoutMaps(const rt::Region &r, RankedTensorType type,
                          bool toMapLayout);
  void emitModule(const LoweredModule &m, Operation *launch);
  void emitDispatch(DispatchOp op, const LoweredModule &experts);
  /// A copy of `r` into a fresh buffer whose columns start at 0.
  rt::Region compact(const rt::Region &r);

  /// Gathers the concat's arguments straight into its buffer when every
  /// argument is a row copy made for this launch alone. On success the
  /// argument regions point into the concat buffer.
  bool placeConcatArgs(const LoweredStep &s, Operation *launch,
                       SmallVectorImpl<rt::Region> &args, rt::BufferId dst,
                       int64_t n);

  ScheduleOp schedule;
  KernelCache &cache;
  PlanStats &stats;
  rt::Plan plan;
  DenseMap<Value, rt::Region> regions;
  /// Gathers that copy rows: their step in plan.steps.
  DenseMap<Value, size_t> gatherSteps;
  llvm::StringMap<rt::BufferId> params;
};

} // namespace

rt::BufferId PlanEmitter::paramBuffer(StringRef name) {
  auto it = params.find(name);
  if (it != params.end())
    return it->second;
  auto module = schedule->getParentOfType<ModuleOp>();
  auto param = module.lookupSymbol<ParamOp>(name);
  assert(param && "the verifier checked every parameter reference");
  // A matrix as itself, a vector as one row, a stack of per-expert
  // matrices as their rows one after another.
  ArrayRef<int64_t> shape = param.getTensorType().getShape();
  int64_t cols = shape.back();
  // Rank 4 (a table of feature maps, convolution weights): one row per
  // entry of the first dimension, which is what a lookup copies.
  if (shape.size() == 4)
    cols = shape[1] * shape[2] * shape[3];
  int64_t rows = param.getTensorType().getNumElements() / cols;
  rt::BufferId id = plan.addParameterBuffer(name.str(), rows, cols);
  params[name] = id;
  return id;
}

rt::Region PlanEmitter::compact(const rt::Region &r) {
  rt::Region dst = newValue(r.rows, r.cols);
  rt::Step step;
  step.kind = rt::Step::Kind::Gather;
  step.gather.dst = dst;
  step.gather.srcCol = r.col;
  for (int64_t i = 0; i < r.rows; ++i)
    step.gather.sources.push_back({r.buffer, r.row + i});
  plan.steps.push_back(std::move(step));
  return dst;
}

void PlanEmitter::emitGather(GatherOp op) {
  ArrayRef<int64_t> pairs = op.getRows();
  int64_t n = pairs.size() / 2;
  // Consecutive rows of one value: a view, no copy.
  bool consecutive = true;
  for (int64_t i = 1; i < n && consecutive; ++i)
    consecutive = pairs[2 * i] == pairs[0] && pairs[2 * i + 1] == pairs[1] + i;
  if (consecutive) {
    rt::Region src = regions.lookup(op.getSources()[pairs[0]]);
    src.row += pairs[1];
    src.rows = n;
    regions[op.getResult()] = src;
    ++stats.gathersAsViews;
    return;
  }
  // One copy step reads every source at one column offset; sources that
  // are column windows at other offsets are compacted first (rare: only
  // modules that return slices produce them).
  SmallVector<rt::Region> srcs;
  for (Value v : op.getSources())
    srcs.push_back(regions.lookup(v));
  bool mixed = llvm::any_of(
      srcs, [&](const rt::Region &r) { return r.col != srcs.front().col; });
  if (mixed)
    for (rt::Region &r : srcs)
      if (r.col != 0)
        r = compact(r);

  rt::Region dst = newValue(n, rowWidth(op.getType()));
  rt::Step step;
  step.kind = rt::Step::Kind::Gather;
  step.gather.dst = dst;
  step.gather.srcCol = srcs.front().col;
  step.gather.sources.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    const rt::Region &src = srcs[pairs[2 * i]];
    step.gather.sources.push_back({src.buffer, src.row + pairs[2 * i + 1]});
  }
  gatherSteps[op.getResult()] = plan.steps.size();
  plan.steps.push_back(std::move(step));
  regions[op.getResult()] = dst;
  ++stats.gathersCopied;
}

bool PlanEmitter::placeConcatArgs(const LoweredStep &s, Operation *launch,
                                  SmallVectorImpl<rt::Region> &args,
                                  rt::BufferId dst, int64_t n) {
  if (s.concatArgs.empty())
    return false;
  SmallVector<size_t> steps;
  for (unsigned arg : s.concatArgs) {
    Value v = launch->getOperand(arg);
    auto it = gatherSteps.find(v);
    if (it == gatherSteps.end() || !v.hasOneUse())
      return false;
    steps.push_back(it->second);
  }
  unsigned inputs = s.concatArgs.size();
  for (unsigned i = 0; i < inputs; ++i) {
    const SlotRef &window = s.args[inputs + i];
    rt::Region into{dst, 0, n, window.col, window.cols};
    plan.steps[steps[i]].gather.dst = into;
    args[s.concatArgs[i]] = into;
  }
  ++stats.concatsPlaced;
  return true;
}

void PlanEmitter::emitModule(const LoweredModule &m, Operation *launch) {
  int64_t n = cast<RankedTensorType>(launch->getNumOperands()
                                         ? launch->getOperand(0).getType()
                                         : launch->getResult(0).getType())
                  .getDimSize(0);
  SmallVector<rt::Region> args;
  for (Value v : launch->getOperands())
    args.push_back(regions.lookup(v));
  SmallVector<rt::BufferId> locals;
  for (int64_t cols : m.localCols)
    locals.push_back(plan.addArenaBuffer(n, cols));
  auto resolve = [&](const SlotRef &s) {
    rt::Region base = s.kind == SlotRef::Kind::Arg
                          ? args[s.index]
                          : rt::Region{locals[s.index], 0, n, 0, 0};
    return rt::Region{base.buffer, base.row, n, base.col + s.col, s.cols};
  };
  // Placement first: it changes where the arguments live for every step.
  llvm::SmallBitVector placed(m.steps.size());
  for (auto [i, s] : llvm::enumerate(m.steps))
    if (!s.concatArgs.empty())
      placed[i] =
          placeConcatArgs(s, launch, args, locals[s.args.back().index], n);
  for (auto [i, s] : llvm::enumerate(m.steps)) {
    if (placed[i])
      continue;
    rt::Step step;
    if (s.kind == LoweredStep::Kind::Map) {
      SmallVector<rt::Region, 2> inputs;
      for (const SlotRef &a : s.args)
        inputs.push_back(resolve(a));
      step = mapStep(s, inputs, resolve(s.c));
    } else if (s.kind == LoweredStep::Kind::Gemm) {
      step.kind = rt::Step::Kind::Gemm;
      step.gemm.a = resolve(s.a);
      step.gemm.c = resolve(s.c);
      step.gemm.weight = paramBuffer(s.weight);
      step.gemm.hasBias = !s.bias.empty();
      if (step.gemm.hasBias)
        step.gemm.bias = paramBuffer(s.bias);
    } else {
      step.kind = rt::Step::Kind::Kernel;
      step.kernel.fn = m.kernelFns[s.kernel];
      step.kernel.name = m.kernelNames[s.kernel];
      step.kernel.rows = n;
      for (const SlotRef &a : s.args)
        step.kernel.args.push_back(resolve(a));
    }
    plan.steps.push_back(std::move(step));
  }
  for (auto [i, r] : llvm::enumerate(m.results))
    regions[launch->getResult(i)] = resolve(r);
}

void PlanEmitter::emitDispatch(DispatchOp op, const LoweredModule &experts) {
  int64_t tokens = op.getInput().getType().getDimSize(0);
  int64_t k = op.getKAttr().getInt();
  int64_t routed = tokens * k;
  rt::Step step;
  step.kind = rt::Step::Kind::Dispatch;
  rt::DispatchStep &d = step.dispatch;
  d.x = regions.lookup(op.getInput());
  d.gateWeight = paramBuffer(op.getGate());
  d.experts = plan.buffers[d.gateWeight].rows;
  d.topK = k;
  d.logits = plan.addArenaBuffer(tokens, d.experts);
  if (auto noise = op.getNoise()) {
    d.hasNoise = true;
    d.noiseWeight = paramBuffer(*noise);
    d.noiseSeed = op.getNoiseSeed();
    d.noiseLogits = plan.addArenaBuffer(tokens, d.experts);
  }
  // The expert module's buffers hold every routed row; the runtime runs its
  // GEMMs on each expert's window of them.
  d.routedIn = newValue(routed, experts.argCols.front());
  SmallVector<rt::BufferId> locals;
  for (int64_t cols : experts.localCols)
    locals.push_back(plan.addArenaBuffer(routed, cols));
  auto resolve = [&](const SlotRef &s) {
    rt::BufferId buffer =
        s.kind == SlotRef::Kind::Arg ? d.routedIn.buffer : locals[s.index];
    return rt::Region{buffer, 0, routed, s.col, s.cols};
  };
  for (const LoweredStep &s : experts.steps) {
    rt::Step inner;
    if (s.kind == LoweredStep::Kind::Gemm) {
      inner.kind = rt::Step::Kind::Gemm;
      inner.gemm.a = resolve(s.a);
      inner.gemm.c = resolve(s.c);
      inner.gemm.weight = paramBuffer(s.weight);
      inner.gemm.hasBias = !s.bias.empty();
      if (inner.gemm.hasBias)
        inner.gemm.bias = paramBuffer(s.bias);
    } else {
      inner.kind = rt::Step::Kind::Kernel;
      inner.kernel.fn = experts.kernelFns[s.kernel];
      inner.kernel.name = experts.kernelNames[s.kernel];
      inner.kernel.rows = routed;
      for (const SlotRef &a : s.args)
        inner.kernel.args.push_back(resolve(a));
    }
    d.body.push_back(std::move(inner));
  }
  d.routedOut = resolve(experts.results.front());
  d.out = newValue(tokens, rowWidth(op.getResult().getType()));
  regions[op.getResult()] = d.out;
  plan.steps.push_back(std::move(step));
}

rt::Step PlanEmitter::mapStep(const LoweredStep &s, ArrayRef<rt::Region> inputs,
                              const rt::Region &out) {
  rt::Step step;
  step.kind = rt::Step::Kind::Map;
  step.map = s.map;
  // Map steps read whole rows; a column window is copied out first.
  for (const rt::Region &r : inputs)
    step.map.inputs.push_back(
        r.col == 0 && r.cols == plan.buffers[r.buffer].cols ? r : compact(r));
  step.map.out = out;
  if (s.map.op == rt::MapStep::Op::Conv) {
    step.map.weight = paramBuffer(s.weight);
    step.map.hasBias = !s.bias.empty();
    if (step.map.hasBias)
      step.map.bias = paramBuffer(s.bias);
  }
  return step;
}

rt::Region PlanEmitter::relayoutMaps(const rt::Region &r, RankedTensorType type,
                                     bool toMapLayout) {
  rt::Step step;
  step.kind = rt::Step::Kind::Map;
  rt::MapStep &m = step.map;
  m.op = toMapLayout ? rt::MapStep::Op::ToMapLayout
                     : rt::MapStep::Op::FromMapLayout;
  m.channels = type.getDimSize(1);
  m.height = type.getDimSize(2);
  m.width = type.getDimSize(3);
  // Map steps read whole rows.
  m.inputs.push_back(
      r.col == 0 && r.cols == plan.buffers[r.buffer].cols ? r : compact(r));
  m.out = newValue(r.rows, r.cols);
  rt::Region out = m.out;
  plan.steps.push_back(std::move(step));
  return out;
}

FailureOr<rt::Plan> PlanEmitter::run() {
  for (Operation &op : schedule.getBody().front()) {
    if (auto lookup = dyn_cast<LookupOp>(op)) {
      ArrayRef<int64_t> idx = lookup.getIndices();
      rt::Region dst =
          newValue(idx.size(), rowWidth(lookup.getResult().getType()));
      rt::Step step;
      step.kind = rt::Step::Kind::Gather;
      step.gather.dst = dst;
      rt::BufferId table = paramBuffer(lookup.getTable());
      for (int64_t i : idx)
        step.gather.sources.push_back({table, i});
      plan.steps.push_back(std::move(step));
      if (lookup.getResult().getType().getRank() == 4)
        dst = relayoutMaps(dst, lookup.getResult().getType(),
                           /*toMapLayout=*/true);
      regions[lookup.getResult()] = dst;
      ++stats.launches;
    } else if (auto gather = dyn_cast<GatherOp>(op)) {
      emitGather(gather);
    } else if (auto yield = dyn_cast<YieldOp>(op)) {
      for (Value v : yield.getValues()) {
        auto type = cast<RankedTensorType>(v.getType());
        plan.outputs.push_back(
            type.getRank() == 4
                ? relayoutMaps(regions.lookup(v), type, /*toMapLayout=*/false)
                : regions.lookup(v));
      }
    } else if (auto dispatch = dyn_cast<DispatchOp>(op)) {
      auto experts =
          schedule->getParentOfType<ModuleOp>().lookupSymbol<func::FuncOp>(
              dispatch.getExperts());
      FailureOr<const LoweredModule *> m = cache.getModule(experts);
      if (failed(m))
        return failure();
      emitDispatch(dispatch, **m);
      ++stats.launches;
    } else if (auto call = dyn_cast<BatchedCallOp>(op)) {
      auto callee =
          schedule->getParentOfType<ModuleOp>().lookupSymbol<func::FuncOp>(
              call.getCallee());
      FailureOr<const LoweredModule *> m = cache.getModule(callee);
      if (failed(m))
        return failure();
      emitModule(**m, &op);
      ++stats.launches;
    } else {
      FailureOr<const LoweredModule *> m = cache.getOp(&op);
      if (failed(m))
        return failure();
      emitModule(**m, &op);
      ++stats.launches;
    }
  }
  rt::planArena(plan);
  return std::move(plan);
}

FailureOr<rt::Plan> dynb::buildPlan(ScheduleOp schedule, KernelCache &cache,
                                    PlanStats *stats) {
  PlanStats local;
  PlanEmitter emitter(schedule, cache, stats ? *stats : local);
  return emitter.run();
}
