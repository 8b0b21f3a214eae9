//===- Run.cpp - A batch through the scheduler, PlanAssembler, executor ---===//
//
// The fast path's second half, with no MLIR: the BatchingGraph built while
// nodes were added goes through scheduleBatches (the library the
// `dynb-batch` pass uses); each group becomes one launch of its module's
// lowered steps through PlanAssembler (the code PlanBuilder uses); the
// plan runs on the engine's executor; each instance's outputs are copied
// out as rows.
//
//===----------------------------------------------------------------------===//
#include "EngineModel.h"
#include "dynb/Lowering/PlanAssembler.h"

#include "llvm/ADT/DenseMap.h"

#include <chrono>
#include <cstring>
#include <fmt/format.h>

using namespace dynb;
using namespace dynb::detail;

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
llvm::Error makeError(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Where a node's results live: row `row` of its group's launch.
struct Placement {
  uint32_t group;
  uint32_t row;
};

/// Compiles kernels of per-instance ops new to the engine. A batch with
/// per-instance ops takes the compile lock even when nothing is new: that
/// orders this thread's reads of OpInfo::lowered after the write.
llvm::Error compileNewOps(EngineModel &m, const BatchData &d,
                          const BatchingPlan &plan) {
  bool any = false;
  for (size_t g = 0, e = plan.numGroups(); g < e && !any; ++g)
    any = d.nodes[plan.group(g).front()]->kind == NodeKind::Op;
  if (!any)
    return llvm::Error::success();
  std::lock_guard<std::mutex> lock(m.compileMutex);
  for (size_t g = 0, e = plan.numGroups(); g < e; ++g) {
    const Node &n = *d.nodes[plan.group(g).front()];
    if (n.kind != NodeKind::Op)
      continue;
    auto *op = const_cast<OpInfo *>(static_cast<const OpInfo *>(n.info));
    if (!op->lowered)
      if (llvm::Error err = m.compileOp(*op))
        return err;
  }
  return llvm::Error::success();
}
} // namespace

llvm::Expected<Results> Engine::run(Batch &batch) {
  return run(batch, model_->options.strategy);
}

llvm::Expected<Results> Engine::run(Batch &batch, BatchingStrategy strategy) {
  BatchData &d = batch.data();
  // Whatever happens, the batch is spent: its values must not be reused.
  struct Reset {
    BatchData &d;
    ~Reset() { d.reset(); }
  } reset{d};
  if (&d.engine != this)
    return makeError("the batch was made for another engine");
  if (llvm::Error err = batch.error())
    return std::move(err);
  llvm::SmallVector<OperandRef, 0> wanted;
  llvm::SmallVector<uint32_t, 0> ends;
  for (const InstanceData &inst : d.instances) {
    wanted.append(inst.outputs.begin(), inst.outputs.end());
    ends.push_back(wanted.size());
  }
  Results results;
  if (llvm::Error err = runGraph(*model_, d, strategy, wanted, ends, results))
    return std::move(err);
  return std::move(results);
}

llvm::Error detail::runGraph(EngineModel &m, BatchData &d,
                             BatchingStrategy strategy,
                             llvm::ArrayRef<OperandRef> wanted,
                             llvm::ArrayRef<uint32_t> ends, Results &results) {
  BatchStats &stats = results.mutableStats();
  stats.instances = ends.size();
  stats.nodes = d.nodes.size();
  if (d.nodes.empty()) {
    for (size_t i = 0; i < ends.size(); ++i)
      results.endInstance();
    return llvm::Error::success();
  }

  auto t0 = Clock::now();
  BatchingPlan plan = scheduleBatches(d.graph, strategy);
  stats.scheduleSeconds = since(t0);
  stats.launches = plan.numGroups();

  t0 = Clock::now();
  if (llvm::Error err = compileNewOps(m, d, plan))
    return err;
  stats.compileSeconds = since(t0);

  t0 = Clock::now();
  PlanStats planStats;
  PlanAssembler assembler(
      [&](llvm::StringRef name) {
        const ParamInfo &p = m.params[m.paramIds.lookup(name)];
        return std::make_pair(p.rows, p.cols);
      },
      planStats);
  size_t numGroups = plan.numGroups();
  llvm::SmallVector<Placement, 0> placement(d.nodes.size());
  // Results of group g: groupResults[groupStart[g] ...].
  llvm::SmallVector<rt::Region, 0> groupResults;
  llvm::SmallVector<uint32_t, 0> groupStart;
  groupStart.reserve(numGroups + 1);
  groupResults.reserve(numGroups * 2);

  llvm::SmallVector<int64_t, 64> indices, pairs;
  llvm::SmallVector<rt::Region, 8> sources;
  llvm::SmallDenseMap<uint64_t, unsigned, 8> sourceIndex;
  llvm::SmallVector<AssembledValue, 4> args;
  llvm::SmallVector<rt::Region, 2> launched;
  for (size_t g = 0; g < numGroups; ++g) {
    llvm::ArrayRef<NodeId> group = plan.group(g);
    const Node &proto = *d.nodes[group.front()];
    int64_t n = group.size();
    groupStart.push_back(groupResults.size());
    if (proto.kind == NodeKind::Embedding) {
      indices.clear();
      for (NodeId id : group)
        indices.push_back(d.nodes[id]->row);
      groupResults.push_back(assembler.lookup(
          static_cast<const ParamInfo *>(proto.info)->name, indices));
    } else {
      args.clear();
      for (unsigned p = 0; p < proto.numOperands; ++p) {
        sources.clear();
        sourceIndex.clear();
        pairs.clear();
        for (NodeId id : group) {
          OperandRef ref = d.nodes[id]->operands[p];
          Placement at = placement[ref.node];
          uint32_t slot = groupStart[at.group] + ref.result;
          auto [it, inserted] = sourceIndex.try_emplace(slot, sources.size());
          if (inserted)
            sources.push_back(groupResults[slot]);
          pairs.push_back(it->second);
          pairs.push_back(at.row);
        }
        args.push_back(
            assembler.gather(sources, pairs,
                             d.resultWidth(*d.nodes[proto.operands[p].node],
                                           proto.operands[p].result)));
      }
      const LoweredSteps *lowered =
          proto.kind == NodeKind::Call
              ? static_cast<const ModuleInfo *>(proto.info)->lowered
              : static_cast<const OpInfo *>(proto.info)->lowered;
      launched.clear();
      assembler.launch(*lowered, n, args, launched);
      groupResults.append(launched.begin(), launched.end());
    }
    for (auto [row, id] : llvm::enumerate(group))
      placement[id] = {uint32_t(g), uint32_t(row)};
  }
  groupStart.push_back(groupResults.size());

  // Outputs: the launches' own regions, kept live to the end of the plan;
  // the wanted rows are copied out after the run.
  llvm::DenseMap<uint32_t, bool> isOutput;
  size_t floats = 0;
  for (OperandRef ref : wanted) {
    uint32_t slot = groupStart[placement[ref.node].group] + ref.result;
    if (isOutput.try_emplace(slot, true).second)
      assembler.addOutput(groupResults[slot]);
    floats += groupResults[slot].cols;
  }
  rt::Plan runPlan = assembler.finish();
  stats.assembleSeconds = since(t0);

  t0 = Clock::now();
  std::unique_lock<std::mutex> lock(m.runMutex);
  stats.waitSeconds = since(t0);
  t0 = Clock::now();
  if (m.options.validatePlans)
    if (rt::Status s = m.executor->validate(runPlan))
      return makeError("invalid plan: " + s.message());
  if (rt::Status s = m.executor->run(runPlan))
    return makeError("run failed: " + s.message());
  stats.runSeconds = since(t0);

  t0 = Clock::now();
  results.reserve(ends.size(), wanted.size(), floats);
  size_t next = 0;
  for (uint32_t end : ends) {
    for (; next < end; ++next) {
      OperandRef ref = wanted[next];
      const rt::Region &r =
          groupResults[groupStart[placement[ref.node].group] + ref.result];
      const float *row = m.executor->rowPointer(
          runPlan, r.buffer, r.row + placement[ref.node].row);
      float *dst = results.appendOutput(r.cols);
      std::memcpy(dst, row + r.col, r.cols * sizeof(float));
    }
    results.endInstance();
  }
  lock.unlock();
  stats.copySeconds = since(t0);
  return llvm::Error::success();
}
