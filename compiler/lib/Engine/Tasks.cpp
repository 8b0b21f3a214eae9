//===- Tasks.cpp - Rounds of batched runs for builders that read values ---===//
//
// Each round resumes every builder that is ready; a builder stops at its
// next read (registering it with the batch) or at its end. The reads of a
// round are answered by one run of the graph built so far, through the
// same runGraph as Engine::run. Earlier rounds' nodes run again in later
// rounds: the runtime's arena does not keep values between runs (see
// docs/api.md).
//
//===----------------------------------------------------------------------===//
#include "EngineModel.h"
#include "dynb/Engine/Task.h"

#include <fmt/format.h>

using namespace dynb;
using namespace dynb::detail;

void ValueRead::await_suspend(std::coroutine_handle<>) noexcept {
  BatchData &d = inst_.batch()->data();
  d.pendingReads.push_back(this);
}

llvm::Expected<Results> dynb::runTasks(Engine &engine, Batch &batch,
                                       llvm::ArrayRef<TaskBuilder> builders,
                                       std::optional<BatchingStrategy> s) {
  BatchData &d = batch.data();
  EngineModel &m = engine.model();
  BatchingStrategy strategy = s.value_or(m.options.strategy);
  if (&d.engine != &engine || batch.numInstances() != 0) {
    d.reset();
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "runTasks needs an empty batch of this engine");
  }
  std::vector<BuildTask> tasks;
  tasks.reserve(builders.size());
  for (const TaskBuilder &build : builders)
    tasks.push_back(build(batch.addInstance()));

  BatchStats spent;
  uint32_t rounds = 0;
  std::vector<ValueRead *> reads;
  llvm::SmallVector<OperandRef, 0> wanted;
  llvm::SmallVector<uint32_t, 0> ends;
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
    wanted.clear();
    ends.clear();
    ready.clear();
    for (ValueRead *r : reads) {
      Value v = r->value();
      uint32_t inst = r->instance().index();
      ready.push_back(inst);
      bool ok = v.batch == d.tag && v.valid() && v.node < d.nodes.size() &&
                d.nodes[v.node]->instance == inst &&
                v.result < d.numResults(*d.nodes[v.node]);
      if (ok) {
        wanted.push_back({v.node, v.result});
      } else if (v.valid() && d.instances[inst].error.empty()) {
        d.instances[inst].error = fmt::format(
            "instance {}, read after node {}: the value read is not one of "
            "this instance's values in this batch",
            inst, d.instances[inst].numNodes);
        if (d.firstFailed == ~0u || inst < d.firstFailed)
          d.firstFailed = inst;
      }
      ends.push_back(wanted.size());
    }
    if (llvm::Error err = batch.error()) {
      tasks.clear(); // destroys the suspended frames first
      d.reset();
      return std::move(err);
    }
    Results round;
    if (llvm::Error err = runGraph(m, d, strategy, wanted, ends, round)) {
      tasks.clear();
      d.reset();
      return std::move(err);
    }
    for (size_t k = 0; k < reads.size(); ++k)
      if (round.numOutputs(k))
        reads[k]->setValues(round.output(k, 0));
    const BatchStats &rs = round.stats();
    spent.scheduleSeconds += rs.scheduleSeconds;
    spent.assembleSeconds += rs.assembleSeconds;
    spent.compileSeconds += rs.compileSeconds;
    spent.waitSeconds += rs.waitSeconds;
    spent.runSeconds += rs.runSeconds;
    spent.copySeconds += rs.copySeconds;
    spent.launches += rs.launches;
    ++rounds;
  }
  tasks.clear();
  llvm::Expected<Results> results = engine.run(batch, strategy);
  if (!results)
    return results.takeError();
  BatchStats &st = results->mutableStats();
  st.rounds = rounds + 1;
  st.scheduleSeconds += spent.scheduleSeconds;
  st.assembleSeconds += spent.assembleSeconds;
  st.compileSeconds += spent.compileSeconds;
  st.waitSeconds += spent.waitSeconds;
  st.runSeconds += spent.runSeconds;
  st.copySeconds += spent.copySeconds;
  st.launches += spent.launches;
  return results;
}
