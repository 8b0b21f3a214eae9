//===- BatchInstances.cpp - The dynb-batch pass
//----------------------------===//
//
// Turns a batch of instances into schedules of batched launches. The
// grouping decision is made by the batching library (Scheduler.h); this pass
// only translates between IR and that library's node graph.
//
//===----------------------------------------------------------------------===//
#include "dynb/Analysis/InstanceGraph.h"
#include "dynb/Batching/LaunchWalk.h"
#include "dynb/Batching/Scheduler.h"
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

namespace dynb {
#define GEN_PASS_DEF_BATCHINSTANCES
#include "dynb/Transforms/Passes.h.inc"
} // namespace dynb

using namespace mlir;
using namespace dynb;

namespace {

RankedTensorType withBatch(Type perInstance, int64_t n) {
  auto t = llvm::cast<RankedTensorType>(perInstance);
  SmallVector<int64_t> shape = {n};
  llvm::append_range(shape, t.getShape());
  return RankedTensorType::get(shape, t.getElementType());
}

/// The schedule's strategy attribute; the dialect's enum mirrors the batching
/// library's, which has no MLIR.
ScheduleStrategy toScheduleStrategy(BatchingStrategy s) {
  switch (s) {
  case BatchingStrategy::None:
    return ScheduleStrategy::none;
  case BatchingStrategy::Depth:
    return ScheduleStrategy::depth;
  case BatchingStrategy::Agenda:
    return ScheduleStrategy::agenda;
  }
  llvm_unreachable("unknown batching strategy");
}

/// Emits a schedule's launches as LaunchWalk visits the plan: gathers for
/// the stacked operands, then the batched op of each group.
class ScheduleEmitter {
public:
  ScheduleEmitter(OpBuilder &b, ArrayRef<Operation *> nodes,
                  const DenseMap<Operation *, NodeId> &nodeOf, size_t numGroups)
      : b(b), nodes(nodes), nodeOf(nodeOf), launches(numGroups) {}

  unsigned numOperands(NodeId n) { return nodes[n]->getNumOperands(); }
  NodeResult operand(NodeId n, unsigned p) {
    return resultOf(nodes[n]->getOperand(p));
  }
  NodeResult resultOf(Value perInstance) const {
    auto res = cast<OpResult>(perInstance);
    return {nodeOf.lookup(res.getOwner()), res.getResultNumber()};
  }

  void addOperand(const StackedRows &rows) {
    Operation *proto = nodes[group.front()];
    operands.push_back(stacked(
        rows, proto->getOperand(operands.size()).getType(), proto->getLoc()));
  }

  /// The stacked rows as a batched value of per-instance type
  /// `perInstance`.
  Value stacked(const StackedRows &rows, Type perInstance, Location loc) {
    auto source = [&](LaunchResult r) {
      return launches[r.group]->getResult(r.result);
    };
    if (rows.identity)
      return source(rows.sources.front());
    SmallVector<Value> srcs;
    for (LaunchResult r : rows.sources)
      srcs.push_back(source(r));
    return b.create<GatherOp>(loc,
                              withBatch(perInstance, rows.pairs.size() / 2),
                              srcs, b.getDenseI64ArrayAttr(rows.pairs));
  }

  void beginGroup(size_t, ArrayRef<NodeId> members) {
    group = members;
    operands.clear();
  }

  void launch(size_t g, ArrayRef<NodeId> members) {
    Operation *proto = nodes[members.front()];
    int64_t n = members.size();
    SmallVector<Type> resultTypes;
    for (Type t : proto->getResultTypes())
      resultTypes.push_back(withBatch(t, n));

    SmallVector<Operation *, 16> memberOps;
    for (NodeId id : members)
      memberOps.push_back(nodes[id]);
    // checkInstances admitted only batchable ops.
    Operation *launch = cast<BatchableOpInterface>(proto).buildLaunch(
        b, memberOps, resultTypes, operands);
    launches[g] = launch;
  }

private:
  OpBuilder &b;
  ArrayRef<Operation *> nodes;
  const DenseMap<Operation *, NodeId> &nodeOf;
  SmallVector<Operation *, 0> launches;
  ArrayRef<NodeId> group;
  SmallVector<Value> operands;
};

struct BatchInstancesPass
    : public dynb::impl::BatchInstancesBase<BatchInstancesPass> {
  using BatchInstancesBase::BatchInstancesBase;

  void runOnOperation() override;

private:
  LogicalResult checkInstances(MutableArrayRef<InstanceOp> instances);
  void emitSchedule(MutableArrayRef<InstanceOp> chunk, int64_t firstInstance,
                    BatchingStrategy strat);
};

} // namespace

LogicalResult
BatchInstancesPass::checkInstances(MutableArrayRef<InstanceOp> instances) {
  auto outputTypes = [](InstanceOp inst) {
    return cast<OutputOp>(inst.getBody().front().back()).getValues().getTypes();
  };
  TypeRange first = outputTypes(instances.front());
  for (auto [i, inst] : llvm::enumerate(instances)) {
    if (outputTypes(inst) != first) {
      InFlightDiagnostic d = inst.emitOpError()
                             << "(instance " << i
                             << ") has outputs of other types than instance 0; "
                                "outputs are stacked, so every instance must "
                                "return the same number and types";
      d.attachNote(instances.front().getLoc()) << "instance 0 is here";
      return failure();
    }
    for (Operation &op : inst.getBody().front().without_terminator())
      if (!isa<BatchableOpInterface>(op))
        return op.emitOpError()
               << "cannot appear in an instance (instance " << i << ")";
  }
  return success();
}

void BatchInstancesPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<BatchingStrategy> strat = parseBatchingStrategy(strategy);
  if (!strat) {
    module.emitError() << "unknown batching strategy '" << strategy
                       << "' (expected none, depth or agenda)";
    return signalPassFailure();
  }
  if (batchSize < 0) {
    module.emitError() << "batch-size must be >= 0, got " << batchSize;
    return signalPassFailure();
  }
  SmallVector<InstanceOp> instances(module.getOps<InstanceOp>());
  if (instances.empty())
    return;
  if (failed(checkInstances(instances)))
    return signalPassFailure();

  int64_t chunkSize = batchSize == 0 ? instances.size() : batchSize;
  for (int64_t first = 0; first < static_cast<int64_t>(instances.size());
       first += chunkSize) {
    int64_t n = std::min<int64_t>(chunkSize, instances.size() - first);
    emitSchedule(MutableArrayRef<InstanceOp>(instances).slice(first, n), first,
                 *strat);
  }
}

void BatchInstancesPass::emitSchedule(MutableArrayRef<InstanceOp> chunk,
                                      int64_t firstInstance,
                                      BatchingStrategy strat) {
  // 1. The node graph: every op of every instance, in program order.
  InstanceGraph g = buildInstanceGraph(chunk);

  // 2. The decision.
  BatchingPlan plan = scheduleBatches(g.graph, strat);
  uint64_t lowerBound = launchLowerBound(g.graph);

  // 3. The schedule.
  OpBuilder b(chunk.front());
  Location loc = chunk.front().getLoc();
  auto schedule = b.create<ScheduleOp>(
      loc, toScheduleStrategy(strat), firstInstance, chunk.size(),
      plan.numGroups(), lowerBound, g.nodes.size());
  Block *body = b.createBlock(&schedule.getBody());
  b.setInsertionPointToStart(body);
  ScheduleEmitter emitter(b, g.nodes, g.nodeOf, plan.numGroups());
  LaunchWalk walk(plan, g.nodes.size());
  walk.run(emitter);

  // 4. The outputs, stacked in instance order.
  auto outputsOf = [](InstanceOp inst) {
    return cast<OutputOp>(inst.getBody().front().back()).getValues();
  };
  SmallVector<Value> yielded;
  SmallVector<NodeResult> rows;
  for (auto [p, first] : llvm::enumerate(outputsOf(chunk.front()))) {
    rows.clear();
    for (InstanceOp inst : chunk)
      rows.push_back(emitter.resultOf(outputsOf(inst)[p]));
    yielded.push_back(emitter.stacked(walk.stack(rows), first.getType(), loc));
  }
  b.create<YieldOp>(loc, yielded);

  if (!keepInstances)
    for (InstanceOp inst : chunk)
      inst.erase();
}
