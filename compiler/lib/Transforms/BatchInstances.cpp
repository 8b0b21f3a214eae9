//===- BatchInstances.cpp - The dynb-batch pass
//----------------------------===//
//
// Turns a batch of instances into schedules of batched launches. The
// grouping decision is made by the batching library (Scheduler.h); this pass
// only translates between IR and that library's node graph.
//
//===----------------------------------------------------------------------===//
#include "dynb/Analysis/Signature.h"
#include "dynb/Batching/Scheduler.h"
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

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

/// Where a node's results live once its group has launched.
struct Placement {
  Operation *launch = nullptr; // the batched op
  int64_t row = 0;
};

class ScheduleEmitter {
public:
  ScheduleEmitter(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// Stacks the given (batched value, row) pairs; folds to the value itself
  /// when it takes every row of one value in order.
  Value gather(ArrayRef<std::pair<Value, int64_t>> rows, Type perInstance) {
    llvm::MapVector<Value, int64_t> sources;
    SmallVector<int64_t> pairs;
    pairs.reserve(rows.size() * 2);
    for (auto [v, r] : rows) {
      auto it = sources.insert({v, sources.size()}).first;
      pairs.push_back(it->second);
      pairs.push_back(r);
    }
    Value only = sources.front().first;
    if (sources.size() == 1 &&
        only.getType() == withBatch(perInstance, rows.size())) {
      bool identity = true;
      for (auto [i, vr] : llvm::enumerate(rows))
        identity &= vr.second == static_cast<int64_t>(i);
      if (identity)
        return only;
    }
    SmallVector<Value> srcs;
    for (auto &kv : sources)
      srcs.push_back(kv.first);
    return b.create<GatherOp>(loc, withBatch(perInstance, rows.size()), srcs,
                              b.getDenseI64ArrayAttr(pairs));
  }

  OpBuilder &b;
  Location loc;
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
      if (op.getDialect() != op.getContext()->getLoadedDialect<DynbDialect>() ||
          isa<InstanceOp, ScheduleOp, GatherOp, LookupOp, BatchedCallOp>(op) ||
          op.getNumRegions() != 0)
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
  MLIRContext *ctx = &getContext();
  // 1. The node graph: every op of every instance, in program order.
  BatchingGraph graph;
  SignatureTable signatures;
  SmallVector<Operation *, 0> nodes;
  DenseMap<Operation *, NodeId> nodeOf;
  SmallVector<NodeId, 4> deps;
  for (InstanceOp inst : chunk)
    for (Operation &op : inst.getBody().front().without_terminator()) {
      deps.clear();
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          deps.push_back(nodeOf.lookup(def));
      llvm::sort(deps);
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      NodeId id = graph.addNode(signatures.intern(&op), deps);
      nodeOf[&op] = id;
      nodes.push_back(&op);
    }

  // 2. The decision.
  BatchingPlan plan = scheduleBatches(graph, strat);
  uint64_t lowerBound = launchLowerBound(graph);

  // 3. The schedule.
  OpBuilder b(chunk.front());
  Location loc = chunk.front().getLoc();
  auto schedule = b.create<ScheduleOp>(loc, b.getStringAttr(toString(strat)),
                                       b.getI64IntegerAttr(firstInstance),
                                       b.getI64IntegerAttr(chunk.size()));
  Block *body = b.createBlock(&schedule.getBody());
  b.setInsertionPointToStart(body);
  ScheduleEmitter emitter(b, loc);

  SmallVector<Placement, 0> placement(nodes.size());
  auto batchedValue = [&](Value perInstance) -> std::pair<Value, int64_t> {
    auto res = cast<OpResult>(perInstance);
    Placement &p = placement[nodeOf.lookup(res.getOwner())];
    return {p.launch->getResult(res.getResultNumber()), p.row};
  };

  SmallVector<std::pair<Value, int64_t>> rows;
  for (size_t g = 0, e = plan.numGroups(); g < e; ++g) {
    ArrayRef<NodeId> group = plan.group(g);
    Operation *proto = nodes[group.front()];
    int64_t n = group.size();
    emitter.loc = proto->getLoc();
    SmallVector<Value> operands;
    for (unsigned p = 0; p < proto->getNumOperands(); ++p) {
      rows.clear();
      for (NodeId id : group)
        rows.push_back(batchedValue(nodes[id]->getOperand(p)));
      operands.push_back(emitter.gather(rows, proto->getOperand(p).getType()));
    }
    SmallVector<Type> resultTypes;
    for (Type t : proto->getResultTypes())
      resultTypes.push_back(withBatch(t, n));

    Operation *launch;
    if (auto emb = dyn_cast<EmbeddingOp>(proto)) {
      SmallVector<int64_t> indices;
      for (NodeId id : group)
        indices.push_back(cast<EmbeddingOp>(nodes[id]).getIndexAttr().getInt());
      launch = b.create<LookupOp>(proto->getLoc(), resultTypes.front(),
                                  emb.getTableAttr(),
                                  b.getDenseI64ArrayAttr(indices));
    } else if (auto call = dyn_cast<CallOp>(proto)) {
      launch = b.create<BatchedCallOp>(proto->getLoc(), resultTypes,
                                       call.getCalleeAttr(), operands);
    } else {
      // Per-instance ops work on the last dimension, so the batched form is
      // the same op on values with a leading batch dimension.
      OperationState state(proto->getLoc(), proto->getName());
      state.addOperands(operands);
      state.addAttributes(proto->getAttrs());
      state.addTypes(resultTypes);
      launch = b.create(state);
    }
    for (auto [row, id] : llvm::enumerate(group))
      placement[id] = {launch, static_cast<int64_t>(row)};
  }

  // 4. The outputs, stacked in instance order.
  auto firstOutputs =
      cast<OutputOp>(chunk.front().getBody().front().back()).getValues();
  SmallVector<Value> yielded;
  emitter.loc = loc;
  for (unsigned p = 0; p < firstOutputs.size(); ++p) {
    rows.clear();
    for (InstanceOp inst : chunk) {
      Value out = cast<OutputOp>(inst.getBody().front().back()).getValues()[p];
      rows.push_back(batchedValue(out));
    }
    yielded.push_back(emitter.gather(rows, firstOutputs[p].getType()));
  }
  b.create<YieldOp>(loc, yielded);

  schedule->setAttr("dynb.launches", b.getI64IntegerAttr(plan.numGroups()));
  schedule->setAttr("dynb.lower_bound", b.getI64IntegerAttr(lowerBound));
  schedule->setAttr("dynb.nodes", b.getI64IntegerAttr(nodes.size()));
  (void)ctx;

  if (!keepInstances)
    for (InstanceOp inst : chunk)
      inst.erase();
}
