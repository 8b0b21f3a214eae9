//===- StatsCommand.cpp - dynbc stats: signatures, launches and bounds ----===//
#include "dynb/Analysis/Signature.h"
#include "dynb/Driver/Commands.h"
#include "dynb/Driver/StrategyList.h"

#include "mlir/IR/BuiltinTypes.h"
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

} // namespace

int dynb::runStatsCommand(Session &session,
                          const StatsCommandOptions &options) {
  auto strats = parseStrategyList(options.strategies, /*single=*/false);
  if (!strats)
    return commandError(llvm::toString(strats.takeError()));
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
