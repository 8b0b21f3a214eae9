//===- ApiBench.cpp - SST trees through the embedded API, timed -----------===//
//
// What an application embedding dynb pays: every pass builds each batch's
// graphs through Instance handles, runs it (schedule, plan assembly,
// execution) and reads the outputs. Prints one JSON object: trees/s and
// nodes/s over the median pass after a warm-up pass, and where the time
// went, split into the executor (gathers, GEMMs, kernels) and everything
// outside it, per node. bench/api.py drives it.
//
//===----------------------------------------------------------------------===//
#include "../examples/embed/SstTreeLstm.h"

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

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<MODEL.jsonl>"));
static cl::opt<std::string> treesPath(cl::Positional, cl::Required,
                                      cl::desc("<TREES.txt>"));
static cl::opt<unsigned> seed("seed", cl::init(1));
static cl::opt<unsigned> batchSize("batch-size", cl::init(64));
static cl::opt<unsigned> limit("limit", cl::init(0),
                               cl::desc("first N trees (0: all)"));
static cl::opt<unsigned> repeat("repeat", cl::init(5),
                                cl::desc("timed passes after the warm-up"));
static cl::opt<unsigned> threads("run-threads", cl::init(0),
                                 cl::desc("runtime threads (0: OpenMP's)"));
static cl::opt<std::string> strategyName("strategy", cl::init("agenda"));
static cl::opt<bool> noValidate("no-validate",
                                cl::desc("skip plan validation"));

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Pass {
  double total = 0, build = 0, schedule = 0, assemble = 0, run = 0, copy = 0,
         wait = 0;
  uint64_t nodes = 0, launches = 0;
  double check = 0; // a sum of outputs, so the work cannot be skipped
};
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "dynb embedded API benchmark\n");
  auto fail = [](Error e) {
    WithColor::error(errs(), "dynb-api-bench")
        << toString(std::move(e)) << "\n";
    return 1;
  };
  std::optional<BatchingStrategy> strategy =
      parseBatchingStrategy(strategyName);
  if (!strategy)
    return fail(createStringError(inconvertibleErrorCode(), "bad strategy"));
  EngineOptions options;
  options.modelPath = modelPath;
  options.seed = seed;
  options.strategy = *strategy;
  options.threads = threads;
  options.validatePlans = !noValidate;
  auto t0 = Clock::now();
  auto engine = Engine::load(options);
  if (!engine)
    return fail(engine.takeError());
  double loadSeconds = since(t0);
  auto file = sst::readSst(treesPath);
  if (!file)
    return fail(file.takeError());
  auto h = sst::TreeLstmHandles::resolve(**engine);
  if (!h)
    return fail(h.takeError());
  size_t n = (*file)->trees.numTrees();
  if (limit && limit < n)
    n = limit;

  Batch batch(**engine);
  SmallVector<std::pair<Value, Value>, 64> hc;
  auto onePass = [&](Pass &p) -> Error {
    auto start = Clock::now();
    for (size_t first = 0; first < n; first += batchSize) {
      size_t last = std::min<size_t>(n, first + batchSize);
      auto b0 = Clock::now();
      for (size_t t = first; t < last; ++t) {
        Instance inst = batch.addInstance();
        sst::buildTree(inst, **file, t, *h, hc);
      }
      p.build += since(b0);
      auto r = (*engine)->run(batch);
      if (!r)
        return r.takeError();
      const BatchStats &s = r->stats();
      p.schedule += s.scheduleSeconds;
      p.assemble += s.assembleSeconds;
      p.run += s.runSeconds;
      p.copy += s.copySeconds;
      p.wait += s.waitSeconds;
      p.nodes += s.nodes;
      p.launches += s.launches;
      for (size_t i = 0; i < r->numInstances(); ++i)
        p.check += r->output(i, 0)[0];
    }
    p.total = since(start);
    return Error::success();
  };
  Pass warm;
  if (Error e = onePass(warm))
    return fail(std::move(e));
  std::vector<Pass> passes(repeat ? repeat : 1);
  for (Pass &p : passes)
    if (Error e = onePass(p))
      return fail(std::move(e));
  std::sort(passes.begin(), passes.end(),
            [](const Pass &a, const Pass &b) { return a.total < b.total; });
  const Pass &m = passes[passes.size() / 2];
  double outside = m.total - m.run;
  outs() << fmt::format(
      "{{\"strategy\": \"{}\", \"batch_size\": {}, \"trees\": {}, "
      "\"nodes\": {}, \"launches\": {}, \"passes\": {}, "
      "\"pass_s\": {:.6f}, \"trees_per_s\": {:.1f}, \"nodes_per_s\": {:.1f}, "
      "\"build_us_per_node\": {:.4f}, \"schedule_us_per_node\": {:.4f}, "
      "\"assemble_us_per_node\": {:.4f}, \"copy_us_per_node\": {:.4f}, "
      "\"executor_us_per_node\": {:.4f}, \"outside_us_per_node\": {:.4f}, "
      "\"load_s\": {:.3f}, \"jit_s\": {:.3f}, \"check\": {:.6g}}}\n",
      strategyName.getValue(), batchSize.getValue(), n, m.nodes, m.launches,
      passes.size(), m.total, n / m.total, m.nodes / m.total,
      1e6 * m.build / m.nodes, 1e6 * m.schedule / m.nodes,
      1e6 * m.assemble / m.nodes, 1e6 * m.copy / m.nodes, 1e6 * m.run / m.nodes,
      1e6 * outside / m.nodes, loadSeconds, (*engine)->stats().jitSeconds,
      m.check);
  return 0;
}
