//===- RoundsBench.cpp - Builders that read at every step, timed by rounds ===//
//
// What a builder that reads a value at every step pays per round as the
// rounds add up (a parser choosing shift or reduce, a router choosing a
// module): each of --instances instances scores its state with a linear
// router, reads the score, and calls module `a` or `b` on the state, for
// --rounds reads. runTasks runs each round's new nodes only, so the time
// per round should not grow with the rounds before it. Prints one JSON
// object per round count: the median wall time of runTasks (building,
// scheduling, planning and running included) over --repeat passes after a
// warm-up, per round and per node. bench/rounds.py drives it.
//
//===----------------------------------------------------------------------===//
#include "dynb/Engine/ModelBuilder.h"
#include "dynb/Engine/Task.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <vector>

using namespace llvm;
using namespace dynb;

static cl::list<unsigned> roundCounts("rounds", cl::CommaSeparated,
                                      cl::desc("reads per instance (a list)"));
static cl::opt<unsigned> instances("instances", cl::init(64));
static cl::opt<unsigned> hdim("hdim", cl::init(64));
static cl::opt<unsigned> repeat("repeat", cl::init(5),
                                cl::desc("timed passes after the warm-up"));
static cl::opt<unsigned> threads("run-threads", cl::init(0),
                                 cl::desc("runtime threads (0: OpenMP's)"));
static cl::opt<std::string> strategyName("strategy", cl::init("agenda"));

namespace {
using Clock = std::chrono::steady_clock;

ModelBuilder routerModel(int64_t h) {
  ModelBuilder model("router");
  model.param("E", {16, h});
  model.param("R", {2, h});
  model.param("Wa", {h, h});
  model.param("Wb", {h, h});
  model.param("bb", {h});
  ModuleBuilder a = model.module("a");
  a.output(a.tanh(a.linear(a.arg({h}), "Wa")));
  ModuleBuilder b = model.module("b");
  ModuleValue x = b.arg({h});
  b.output(b.add(b.sigmoid(b.linear(x, "Wb", "bb")), x));
  return model;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "dynb rounds benchmark\n");
  auto fail = [](Error e) {
    WithColor::error(errs(), "dynb-rounds-bench")
        << toString(std::move(e)) << "\n";
    return 1;
  };
  std::vector<unsigned> counts(roundCounts.begin(), roundCounts.end());
  if (counts.empty())
    counts = {4, 16, 64, 256};
  auto strategy = parseBatchingStrategy(strategyName);
  if (!strategy)
    return fail(createStringError(inconvertibleErrorCode(),
                                  "unknown strategy '" + strategyName + "'"));

  EngineOptions options;
  options.model = std::make_shared<ModelBuilder>(routerModel(hdim));
  options.seed = 1;
  options.strategy = *strategy;
  options.threads = threads;
  auto engine = Engine::load(options);
  if (!engine)
    return fail(engine.takeError());
  Param E = cantFail((*engine)->param("E"));
  Param R = cantFail((*engine)->param("R"));
  Module a = cantFail((*engine)->module("a"));
  Module b = cantFail((*engine)->module("b"));

  for (unsigned rounds : counts) {
    std::vector<TaskBuilder> builders;
    for (unsigned i = 0; i < instances; ++i)
      builders.push_back([&, i, rounds](Instance inst) -> BuildTask {
        Value x = inst.embedding(E, i % 16);
        for (unsigned r = 0; r < rounds; ++r) {
          std::vector<float> s = co_await read(inst, inst.linear(x, R));
          x = inst.call(s.size() == 2 && s[0] > s[1] ? a : b, {x})[0];
        }
        inst.output(x);
      });
    std::vector<double> seconds;
    BatchStats stats;
    double check = 0;
    for (unsigned pass = 0; pass <= repeat; ++pass) {
      Batch batch(**engine);
      auto t0 = Clock::now();
      auto results = runTasks(**engine, batch, builders);
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!results)
        return fail(results.takeError());
      check += results->output(0, 0)[0];
      stats = results->stats();
      if (pass > 0)
        seconds.push_back(s);
    }
    std::sort(seconds.begin(), seconds.end());
    double median = seconds[seconds.size() / 2];
    outs() << fmt::format(
        R"({{"rounds":{},"instances":{},"hdim":{},"strategy":"{}","runs":{},)"
        R"("nodes":{},"launches":{},"seconds":{:.6f},"us_per_round":{:.2f},)"
        R"("us_per_node":{:.4f},"run_seconds":{:.6f},"check":{:.6g}}})"
        "\n",
        rounds, unsigned(instances), unsigned(hdim), strategyName, stats.rounds,
        stats.nodes, stats.launches, median, 1e6 * median / stats.rounds,
        1e6 * median / stats.nodes, stats.runSeconds, check);
    outs().flush();
  }
  return 0;
}
