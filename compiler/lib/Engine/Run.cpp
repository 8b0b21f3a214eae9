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
#include "dynb/Batching/LaunchWalk.h"
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
    if (!op->lowered && op->kind != OpKind::SoftmaxXent)
      if (llvm::Error err = m.compileOp(*op))
        return err;
  }
  return llvm::Error::success();
}

/// Assembles a plan's launches as LaunchWalk visits it: gathers for the
/// stacked operands, then each group's lookup, dispatch or module launch.
class PlanLauncher {
public:
  PlanLauncher(EngineModel &m, BatchData &d, PlanAssembler &assembler,
               llvm::SmallVectorImpl<rt::Region> &groupResults,
               llvm::SmallVectorImpl<uint32_t> &groupStart)
      : m(m), d(d), assembler(assembler), groupResults(groupResults),
        groupStart(groupStart) {}

  void beginGroup(size_t, llvm::ArrayRef<NodeId> group) {
    proto = d.nodes[group.front()];
    args.clear();
    groupStart.push_back(groupResults.size());
  }
  unsigned numOperands(NodeId n) const { return d.nodes[n]->numOperands; }
  NodeResult operand(NodeId n, unsigned p) const {
    return d.nodes[n]->operands[p];
  }
  void addOperand(const StackedRows &rows) {
    OperandRef first = proto->operands[args.size()];
    args.push_back(
        stacked(rows, d.resultWidth(*d.nodes[first.node], first.result)));
  }

  /// The stacked rows as one batched value of `cols` columns.
  AssembledValue stacked(const StackedRows &rows, int64_t cols) {
    auto region = [&](LaunchResult r) {
      return groupResults[groupStart[r.group] + r.result];
    };
    if (rows.identity)
      return {region(rows.sources.front()), -1};
    sources.clear();
    for (LaunchResult r : rows.sources)
      sources.push_back(region(r));
    return assembler.gather(sources, rows.pairs, cols);
  }

  void launch(size_t, llvm::ArrayRef<NodeId> group) {
    if (proto->kind == NodeKind::Carried) {
      indices.clear();
      for (NodeId id : group)
        indices.push_back(d.nodes[id]->row);
      const auto *t = static_cast<const CarriedTable *>(proto->info);
      groupResults.push_back(
          assembler.hostLookup(t->values.data(), t->rows, t->cols, indices));
      return;
    }
    if (proto->kind == NodeKind::Embedding) {
      indices.clear();
      for (NodeId id : group)
        indices.push_back(d.nodes[id]->row);
      groupResults.push_back(assembler.lookup(
          static_cast<const ParamInfo *>(proto->info)->name, indices));
      return;
    }
    const auto *op = proto->kind == NodeKind::Op
                         ? static_cast<const OpInfo *>(proto->info)
                         : nullptr;
    if (op && op->kind == OpKind::SoftmaxXent) {
      // As PlanBuilder emits a dynb.batched_softmax_xent.
      indices.clear();
      for (NodeId id : group)
        indices.push_back(d.nodes[id]->row);
      groupResults.push_back(
          assembler.softmaxXent(args.front().region, indices));
      return;
    }
    if (op && op->kind == OpKind::Dispatch) {
      // As PlanBuilder emits a dynb.dispatch: one launch over the rows.
      DispatchLaunch launch;
      launch.x = args.front().region;
      launch.gate = m.params[op->a].name;
      if (op->noise >= 0) {
        launch.noise = llvm::StringRef(m.params[op->noise].name);
        launch.noiseSeed = op->noiseSeed;
      }
      launch.topK = op->topK;
      launch.outCols = op->resultWidth;
      groupResults.push_back(assembler.dispatch(launch, *op->lowered));
      return;
    }
    const LoweredSteps *lowered =
        op ? op->lowered
           : static_cast<const ModuleInfo *>(proto->info)->lowered;
    launched.clear();
    assembler.launch(*lowered, group.size(), args, launched);
    groupResults.append(launched.begin(), launched.end());
  }

private:
  EngineModel &m;
  BatchData &d;
  PlanAssembler &assembler;
  llvm::SmallVectorImpl<rt::Region> &groupResults;
  llvm::SmallVectorImpl<uint32_t> &groupStart;
  const Node *proto = nullptr;
  llvm::SmallVector<AssembledValue, 4> args;
  llvm::SmallVector<rt::Region, 8> sources;
  llvm::SmallVector<rt::Region, 2> launched;
  llvm::SmallVector<int64_t, 64> indices;
};
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
  if (!model_->executor)
    return makeError("this engine was loaded to plan only "
                     "(EngineOptions::planOnly); it cannot run batches");
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

llvm::Error detail::assembleGraph(EngineModel &m, BatchData &d,
                                  BatchingStrategy strategy,
                                  llvm::ArrayRef<OperandRef> wanted,
                                  llvm::ArrayRef<uint32_t> ends,
                                  const AssembleOptions &options,
                                  AssembledGraph &out) {
  out = AssembledGraph();
  auto t0 = Clock::now();
  // Signature ids in first-use order, as the dynb-batch pass interns them:
  // the same groups in the same order, so the same plan (SignatureTable).
  // A copy: a builder that reads values adds nodes to the batch after
  // this run, with the engine's own ids.
  BatchingGraph graph = d.graph;
  graph.renumberSignaturesByFirstUse();
  BatchingPlan plan = scheduleBatches(graph, strategy);
  if (options.lowerBound)
    out.lowerBound = launchLowerBound(graph);
  out.scheduleSeconds = since(t0);
  out.launches = plan.numGroups();

  t0 = Clock::now();
  if (llvm::Error err = compileNewOps(m, d, plan))
    return err;
  out.compileSeconds = since(t0);

  t0 = Clock::now();
  PlanAssembler assembler(
      [&](llvm::StringRef name) {
        const ParamInfo &p = m.params[m.paramIds.lookup(name)];
        return std::make_pair(p.rows, p.cols);
      },
      out.planStats);
  size_t numGroups = plan.numGroups();
  // Results of group g: groupResults[groupStart[g] ...].
  llvm::SmallVector<rt::Region, 0> &groupResults = out.groupResults;
  llvm::SmallVector<uint32_t, 0> &groupStart = out.groupStart;
  groupStart.reserve(numGroups + 1);
  groupResults.reserve(numGroups * 2);
  LaunchWalk walk(plan, d.nodes.size());
  PlanLauncher launcher(m, d, assembler, groupResults, groupStart);
  walk.run(launcher);
  groupStart.push_back(groupResults.size());

  llvm::SmallVector<OperandRef, 64> refs;
  if (options.stackOutputs) {
    // Output p of every instance, stacked in instance order (the CLI's
    // outputs; every instance has the same number of outputs).
    size_t perInstance = ends.empty() ? 0 : ends.front();
    for (size_t p = 0; p < perInstance; ++p) {
      refs.clear();
      for (size_t i = 0; i < ends.size(); ++i)
        refs.push_back(wanted[ends[i] - perInstance + p]);
      const Node &first = *d.nodes[refs.front().node];
      assembler.addOutput(
          launcher
              .stacked(walk.stack(refs),
                       d.resultWidth(first, refs.front().result))
              .region);
    }
  } else {
    // Outputs: the launches' own regions, kept live to the end of the plan;
    // the wanted rows are copied out after the run.
    llvm::DenseMap<uint32_t, bool> isOutput;
    for (OperandRef ref : wanted) {
      uint32_t slot = groupStart[walk.placement(ref.node).group] + ref.result;
      if (isOutput.try_emplace(slot, true).second)
        assembler.addOutput(groupResults[slot]);
    }
  }
  out.placement = walk.takePlacement();
  out.plan = assembler.finish();
  out.assembleSeconds = since(t0);
  return llvm::Error::success();
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

  AssembledGraph assembled;
  if (llvm::Error err =
          assembleGraph(m, d, strategy, wanted, ends, {}, assembled))
    return err;
  stats.scheduleSeconds = assembled.scheduleSeconds;
  stats.launches = assembled.launches;
  stats.compileSeconds = assembled.compileSeconds;
  stats.assembleSeconds = assembled.assembleSeconds;
  rt::Plan &runPlan = assembled.plan;
  size_t floats = 0;
  for (OperandRef ref : wanted)
    floats += d.resultWidth(*d.nodes[ref.node], ref.result);

  auto t0 = Clock::now();
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
      LaunchRow at = assembled.placement[ref.node];
      const rt::Region &r =
          assembled.groupResults[assembled.groupStart[at.group] + ref.result];
      const float *row =
          m.executor->rowPointer(runPlan, r.buffer, r.row + at.row);
      float *dst = results.appendOutput(r.cols);
      std::memcpy(dst, row + r.col, r.cols * sizeof(float));
    }
    results.endInstance();
  }
  // Read before the next run may reuse the arena.
  results.setLoss(m.executor->loss(runPlan), !runPlan.losses.empty());
  lock.unlock();
  stats.copySeconds = since(t0);
  return llvm::Error::success();
}
