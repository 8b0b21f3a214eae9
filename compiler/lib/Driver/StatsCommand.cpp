//===- StatsCommand.cpp - dynbc stats: signatures, launches and bounds ----===//
#include "dynb/Analysis/InstanceGraph.h"
#include "dynb/Batching/BatchingGraph.h"
#include "dynb/Batching/Scheduler.h"
#include "dynb/Driver/Commands.h"
#include "dynb/Driver/StrategyList.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

using namespace mlir;
using namespace dynb;

namespace {

/// Launches, bound and group sizes of one strategy's schedules.
struct ScheduleSummary {
  uint64_t batches = 0, launches = 0, bound = 0;
  uint64_t minGroup = UINT64_MAX, maxGroup = 0, sumGroups = 0;
};

ScheduleSummary summarize(ModuleOp batched) {
  ScheduleSummary s;
  for (ScheduleOp schedule : batched.getOps<ScheduleOp>()) {
    ++s.batches;
    s.launches += schedule.getLaunches();
    s.bound += schedule.getLowerBound();
    for (Operation &op : schedule.getBody().front()) {
      if (isa<GatherOp, YieldOp>(op))
        continue;
      Type t = op.getNumOperands() ? op.getOperand(0).getType()
                                   : op.getResult(0).getType();
      uint64_t n = cast<RankedTensorType>(t).getDimSize(0);
      s.minGroup = std::min(s.minGroup, n);
      s.maxGroup = std::max(s.maxGroup, n);
      s.sumGroups += n;
    }
  }
  return s;
}

/// The first `batchSize` instances (all when 0) as the batching library
/// sees them, scheduled by `strategy`, as Graphviz DOT: a node per op, in
/// a cluster per instance, labelled with its launch and signature and
/// filled with its launch's colour (12 colours, in launch order); an edge
/// per dependency.
std::string scheduleDot(ModuleOp module, int64_t batchSize,
                        BatchingStrategy strategy) {
  llvm::SmallVector<InstanceOp, 0> chosen;
  for (InstanceOp inst : module.getOps<InstanceOp>()) {
    if (batchSize && int64_t(chosen.size()) == batchSize)
      break;
    chosen.push_back(inst);
  }
  InstanceGraph g = buildInstanceGraph(chosen);
  const BatchingGraph &graph = g.graph;
  llvm::ArrayRef<mlir::Operation *> nodes = g.nodes;
  llvm::ArrayRef<uint32_t> instanceOf = g.instanceOf;
  int64_t instances = chosen.size();
  BatchingPlan plan = scheduleBatches(graph, strategy);
  llvm::SmallVector<size_t, 0> launchOf(nodes.size());
  for (size_t g = 0; g < plan.numGroups(); ++g)
    for (NodeId n : plan.group(g))
      launchOf[n] = g;
  std::string out;
  llvm::raw_string_ostream os(out);
  os << fmt::format("// dynbc stats --dot: {} instances, {} nodes, {} "
                    "launches ({}), lower bound {}\n",
                    instances, nodes.size(), plan.numGroups(),
                    toString(strategy).str(), launchLowerBound(graph));
  os << "digraph schedule {\n  rankdir=BT;\n  node [shape=box, "
        "style=filled, colorscheme=set312, fontsize=10];\n";
  // One pass: buildInstanceGraph numbers each instance's nodes after the
  // previous instance's, so a cluster's nodes are contiguous.
  auto openCluster = [&](int64_t i) {
    os << fmt::format("  subgraph cluster_{} {{\n    label=\"instance "
                      "{}\";\n",
                      i, i);
  };
  int64_t open = 0;
  if (instances > 0)
    openCluster(0);
  for (size_t n = 0; n < nodes.size(); ++n) {
    assert((n == 0 || instanceOf[n] >= instanceOf[n - 1]) &&
           "instances' nodes are contiguous");
    while (open < int64_t(instanceOf[n])) {
      os << "  }\n";
      openCluster(++open);
    }
    // The op and what tells its signature apart (callee, table, weight).
    std::string what = nodes[n]->getName().stripDialect().str();
    llvm::raw_string_ostream whatOs(what);
    if (auto batchable = dyn_cast<BatchableOpInterface>(nodes[n]))
      batchable.describeSignature(whatOs);
    os << fmt::format("    n{} [label=\"L{}: {}\", fillcolor={}];\n", n,
                      launchOf[n], whatOs.str(), launchOf[n] % 12 + 1);
  }
  // Instances after the last node's (with no nodes) still get a cluster.
  while (instances > 0 && open < instances - 1) {
    os << "  }\n";
    openCluster(++open);
  }
  if (instances > 0)
    os << "  }\n";
  for (size_t n = 0; n < nodes.size(); ++n)
    for (NodeId d : graph.deps(NodeId(n)))
      os << fmt::format("  n{} -> n{};\n", d, n);
  os << "}\n";
  return out;
}

} // namespace

int dynb::runStatsCommand(Session &session,
                          const StatsCommandOptions &options) {
  auto strats = parseStrategyList(options.strategies, /*single=*/false);
  if (!strats)
    return commandError(llvm::toString(strats.takeError()));
  if (!options.dotPath.empty()) {
    std::string dot =
        scheduleDot(session.module(), options.batchSize, strats->front());
    if (int rc = writeText(options.dotPath, dot))
      return rc;
  }
  SignatureTable sigs;
  llvm::SmallVector<uint64_t> counts;
  uint64_t nodes = 0;
  for (InstanceOp inst : session.module().getOps<InstanceOp>())
    for (Operation &op : inst.getBody().front().without_terminator()) {
      SignatureId id = sigs.intern(&op);
      if (id >= counts.size())
        counts.resize(id + 1);
      ++counts[id];
      ++nodes;
    }
  llvm::raw_ostream &os = llvm::outs();
  os << fmt::format("instances:  {}\nnodes:      {}\nsignatures: {}\n",
                    session.numInstances(), nodes, sigs.size());
  for (size_t i = 0; i < sigs.size(); ++i)
    os << fmt::format("  {:>8} x {}\n", counts[i], sigs.describe(i));
  os << "every signature batches (no op of the dialect is "
        "excluded from batching)\n";
  os << fmt::format("\n{:<8} {:>8} {:>9} {:>12} {:>10} {:>26}\n", "strategy",
                    "batches", "launches", "lower bound", "ratio",
                    "group size min/mean/max");
  for (BatchingStrategy st : *strats) {
    auto batched = session.batch(st, options.batchSize);
    if (failed(batched))
      return 1;
    ScheduleSummary s = summarize(**batched);
    os << fmt::format("{:<8} {:>8} {:>9} {:>12} {:>10.2f} {:>14}/{:.1f}/{}\n",
                      toString(st).str(), s.batches, s.launches, s.bound,
                      s.bound ? double(s.launches) / s.bound : 0.0,
                      s.launches ? s.minGroup : 0,
                      s.launches ? double(s.sumGroups) / s.launches : 0.0,
                      s.maxGroup);
  }
  return 0;
}
