//===- Tasks.cpp - Rounds of batched runs for builders that read values ---===//
//
// Each round resumes every builder that is ready; a builder stops at its
// next read (registering it with the batch) or at its end. A round's run
// computes only the nodes added since the last run: what they read of
// earlier rounds enters as Carried leaves, rows of host tables that keep
// every value computed so far. So a round costs what its own nodes cost,
// however many rounds came before (`tools/dev bench rounds`).
//
//===----------------------------------------------------------------------===//
#include "EngineModel.h"
#include "dynb/Engine/Task.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <deque>
#include <fmt/format.h>

using namespace dynb;
using namespace dynb::detail;

void ValueRead::await_suspend(std::coroutine_handle<>) noexcept {
  BatchData &d = inst_.batch()->data();
  d.pendingReads.push_back(this);
}

namespace {

/// Runs a batch's nodes a round at a time and keeps every result.
class RoundRunner {
public:
  RoundRunner(Engine &engine, BatchData &d, BatchingStrategy strategy)
      : engine(engine), d(d), strategy(strategy) {}

  /// Runs the nodes added since the last call, their reads of earlier
  /// values as Carried leaves, and keeps all their results.
  llvm::Error runNewNodes();
  /// A result computed by an earlier runNewNodes.
  llvm::ArrayRef<float> value(OperandRef ref) const {
    const Where &w = where[resultStart[ref.node] + ref.result];
    const CarriedTable &t = tables[w.table];
    return llvm::ArrayRef<float>(t.values).slice(w.row * t.cols, t.cols);
  }

  BatchStats spent;
  double loss = 0;
  bool hasLoss = false;
  uint32_t runs = 0;

private:
  struct Where {
    uint32_t table;
    int64_t row;
  };
  uint32_t tableOf(int64_t cols) {
    auto [it, added] = tableOfWidth.try_emplace(cols, tables.size());
    if (added)
      tables.push_back(CarriedTable{cols, 0, {}});
    return it->second;
  }

  Engine &engine;
  BatchData &d;
  BatchingStrategy strategy;
  /// A deque: Carried nodes point at their table.
  std::deque<CarriedTable> tables;
  llvm::DenseMap<int64_t, uint32_t> tableOfWidth;
  /// Node n's results are where[resultStart[n] ...].
  std::vector<uint32_t> resultStart;
  std::vector<Where> where;
  uint32_t computed = 0;
};

llvm::Error RoundRunner::runNewNodes() {
  ++runs;
  uint32_t first = computed, end = d.nodes.size();
  if (first == end)
    return llvm::Error::success();
  // The round's own graph: the earlier results it reads first (as
  // leaves), then its nodes, their operands renumbered.
  BatchData round(engine);
  llvm::DenseMap<uint64_t, NodeId> leafOf;
  llvm::SmallVector<OperandRef, 0> leaves;
  uint32_t maxSignature = 0;
  for (uint32_t k = first; k < end; ++k) {
    const Node &n = *d.nodes[k];
    maxSignature = std::max(maxSignature, n.signature);
    for (unsigned p = 0; p < n.numOperands; ++p) {
      OperandRef ref = n.operands[p];
      if (ref.node >= first)
        continue;
      uint64_t key = (uint64_t(ref.node) << 32) | ref.result;
      if (leafOf.try_emplace(key, leaves.size()).second)
        leaves.push_back(ref);
    }
  }
  round.nodes.reserve(leaves.size() + end - first);
  for (OperandRef ref : leaves) {
    const Where &w = where[resultStart[ref.node] + ref.result];
    // A signature per table, apart from the round's own.
    uint32_t signature = maxSignature + 1 + w.table;
    round.nodes.push_back(new (round.arena.Allocate<Node>()) Node{
        NodeKind::Carried, 0, signature, d.nodes[ref.node]->instance,
        &tables[w.table], w.row, nullptr});
    round.graph.addNode(signature, {});
  }
  auto leafCount = static_cast<uint32_t>(leaves.size());
  llvm::SmallVector<NodeId, 8> deps;
  llvm::SmallVector<OperandRef, 0> wanted;
  for (uint32_t k = first; k < end; ++k) {
    const Node &n = *d.nodes[k];
    auto *refs = round.arena.Allocate<OperandRef>(n.numOperands);
    deps.clear();
    for (unsigned p = 0; p < n.numOperands; ++p) {
      OperandRef ref = n.operands[p];
      if (ref.node < first)
        refs[p] = {leafOf.lookup((uint64_t(ref.node) << 32) | ref.result), 0};
      else
        refs[p] = {leafCount + (ref.node - first), ref.result};
      deps.push_back(refs[p].node);
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    Node *copy = new (round.arena.Allocate<Node>()) Node(n);
    copy->operands = refs;
    round.nodes.push_back(copy);
    round.graph.addNode(n.signature, deps);
    for (uint32_t r = 0, e = d.numResults(n); r < e; ++r)
      wanted.push_back({leafCount + (k - first), r});
  }
  uint32_t ends[] = {static_cast<uint32_t>(wanted.size())};
  Results out;
  if (llvm::Error err =
          runGraph(engine.model(), round, strategy, wanted, ends, out))
    return err;

  // Keep every result: a later round may read any of them.
  resultStart.resize(end);
  size_t j = 0;
  for (uint32_t k = first; k < end; ++k) {
    resultStart[k] = where.size();
    for (uint32_t r = 0, e = d.numResults(*d.nodes[k]); r < e; ++r, ++j) {
      llvm::ArrayRef<float> v = out.output(0, j);
      uint32_t t = tableOf(v.size());
      CarriedTable &table = tables[t];
      table.values.insert(table.values.end(), v.begin(), v.end());
      where.push_back({t, table.rows++});
    }
  }
  computed = end;

  const BatchStats &rs = out.stats();
  spent.scheduleSeconds += rs.scheduleSeconds;
  spent.assembleSeconds += rs.assembleSeconds;
  spent.compileSeconds += rs.compileSeconds;
  spent.waitSeconds += rs.waitSeconds;
  spent.runSeconds += rs.runSeconds;
  spent.copySeconds += rs.copySeconds;
  spent.launches += rs.launches;
  loss += out.loss();
  hasLoss |= out.hasLoss();
  return llvm::Error::success();
}

} // namespace

llvm::Expected<Results> dynb::runTasks(Engine &engine, Batch &batch,
                                       llvm::ArrayRef<TaskBuilder> builders,
                                       std::optional<BatchingStrategy> s) {
  BatchData &d = batch.data();
  EngineModel &m = engine.model();
  // Whatever happens, the batch is spent; the suspended frames (declared
  // after, so destroyed first) go before it.
  struct Reset {
    BatchData &d;
    ~Reset() { d.reset(); }
  } reset{d};
  if (&d.engine != &engine || batch.numInstances() != 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "runTasks needs an empty batch of this engine");
  if (!m.executor)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "this engine was loaded to plan only (EngineOptions::planOnly); it "
        "cannot run batches");
  std::vector<BuildTask> tasks;
  tasks.reserve(builders.size());
  for (const TaskBuilder &build : builders)
    tasks.push_back(build(batch.addInstance()));

  RoundRunner rounds(engine, d, s.value_or(m.options.strategy));
  std::vector<ValueRead *> reads;
  llvm::SmallVector<bool, 0> readOk;
  // Every task is ready at first; later, exactly those that read.
  std::vector<size_t> ready(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i)
    ready[i] = i;
  while (true) {
    for (size_t i : ready)
      if (!tasks[i].done())
        tasks[i].resume();
    reads.assign(d.pendingReads.begin(), d.pendingReads.end());
    d.pendingReads.clear();
    if (reads.empty())
      break;
    // Check the reads like operands; a bad one fails its instance.
    ready.clear();
    readOk.clear();
    for (ValueRead *r : reads) {
      Value v = r->value();
      uint32_t inst = r->instance().index();
      ready.push_back(inst);
      bool ok = v.batch == d.tag && v.valid() && v.node < d.nodes.size() &&
                d.nodes[v.node]->instance == inst &&
                v.result < d.numResults(*d.nodes[v.node]);
      readOk.push_back(ok);
      if (!ok && v.valid() && d.instances[inst].error.empty()) {
        d.instances[inst].error = fmt::format(
            "instance {}, read after node {}: the value read is not one of "
            "this instance's values in this batch",
            inst, d.instances[inst].numNodes);
        if (d.firstFailed == ~0u || inst < d.firstFailed)
          d.firstFailed = inst;
      }
    }
    if (llvm::Error err = batch.error())
      return std::move(err);
    if (llvm::Error err = rounds.runNewNodes())
      return std::move(err);
    for (size_t k = 0; k < reads.size(); ++k)
      if (readOk[k]) {
        Value v = reads[k]->value();
        reads[k]->setValues(rounds.value({v.node, v.result}));
      }
  }
  tasks.clear();
  if (llvm::Error err = batch.error())
    return std::move(err);
  if (llvm::Error err = rounds.runNewNodes())
    return std::move(err);

  Results results;
  size_t outputs = 0;
  for (const InstanceData &inst : d.instances)
    outputs += inst.outputs.size();
  results.reserve(d.instances.size(), outputs, 0);
  for (const InstanceData &inst : d.instances) {
    for (OperandRef ref : inst.outputs) {
      llvm::ArrayRef<float> v = rounds.value(ref);
      std::copy(v.begin(), v.end(), results.appendOutput(v.size()));
    }
    results.endInstance();
  }
  results.setLoss(rounds.loss, rounds.hasLoss);
  BatchStats &st = results.mutableStats();
  st = rounds.spent;
  st.instances = d.instances.size();
  st.nodes = d.nodes.size();
  st.rounds = rounds.runs;
  return results;
}
