//===- embed-treelstm.cpp - SST trees through the embedded API ------------===//
//
// An application embedding dynb: it loads the TreeLSTM model once, then
// builds each batch of trees with Instance handles (as a server would per
// request), runs it, and prints each tree's root h. With --threads-submit N
// it submits the trees from N threads through a MicroBatcher instead.
//
//===----------------------------------------------------------------------===//
#include "SstTreeLstm.h"
#include "dynb/Engine/MicroBatcher.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <thread>

using namespace llvm;
using namespace dynb;

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<MODEL.json|.jsonl|.mlir>"));
static cl::opt<std::string> treesPath(cl::Positional, cl::Required,
                                      cl::desc("<TREES.txt>"));
static cl::opt<std::string> paramsPath("params", cl::desc("safetensors file"),
                                       cl::value_desc("P.safetensors"));
static cl::opt<unsigned> seed("seed", cl::init(1),
                              cl::desc("seed, without --params"));
static cl::opt<unsigned> limit("limit", cl::init(8),
                               cl::desc("trees to run (0: all)"));
static cl::opt<unsigned> batchSize("batch-size", cl::init(64),
                                   cl::desc("trees a batch"));
static cl::opt<std::string> strategyName("strategy", cl::init("agenda"),
                                         cl::desc("none, depth or agenda"));
static cl::opt<unsigned>
    submitThreads("threads-submit", cl::init(0),
                  cl::desc("submit from N threads through a MicroBatcher"));

static int fail(Error e) {
  WithColor::error(errs(), "embed-treelstm") << toString(std::move(e)) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "dynb embedded API example\n");
  std::optional<BatchingStrategy> strategy =
      parseBatchingStrategy(strategyName);
  if (!strategy)
    return fail(createStringError(inconvertibleErrorCode(),
                                  "unknown strategy '" + strategyName + "'"));
  EngineOptions options;
  options.modelPath = modelPath;
  options.paramsPath = paramsPath;
  options.seed = seed;
  options.strategy = *strategy;
  auto engine = Engine::load(options);
  if (!engine)
    return fail(engine.takeError());
  auto file = sst::readSst(treesPath);
  if (!file)
    return fail(file.takeError());
  auto handles = sst::TreeLstmHandles::resolve(**engine);
  if (!handles)
    return fail(handles.takeError());
  size_t n = (*file)->trees.numTrees();
  if (limit && limit < n)
    n = limit;

  std::vector<std::vector<float>> roots(n);
  if (submitThreads) {
    MicroBatcherOptions mb;
    mb.maxInstances = batchSize;
    MicroBatcher batcher(**engine, mb);
    std::vector<std::thread> threads;
    std::vector<std::string> errors(submitThreads);
    for (unsigned t = 0; t < submitThreads; ++t)
      threads.emplace_back([&, t] {
        for (size_t i = t; i < n; i += submitThreads) {
          auto future = batcher.submit([&, i](Instance &inst) {
            SmallVector<std::pair<Value, Value>, 64> hc;
            sst::buildTree(inst, **file, i, *handles, hc);
          });
          Expected<InstanceOutputs> out = future.get();
          if (!out) {
            errors[t] = toString(out.takeError());
            return;
          }
          roots[i] = out->outputs.front();
        }
      });
    for (std::thread &t : threads)
      t.join();
    for (std::string &e : errors)
      if (!e.empty())
        return fail(createStringError(inconvertibleErrorCode(), e));
  } else {
    Batch batch(**engine);
    SmallVector<std::pair<Value, Value>, 64> hc;
    for (size_t first = 0; first < n; first += batchSize) {
      size_t last = std::min<size_t>(n, first + batchSize);
      for (size_t i = first; i < last; ++i) {
        Instance inst = batch.addInstance();
        sst::buildTree(inst, **file, i, *handles, hc);
      }
      auto results = (*engine)->run(batch);
      if (!results)
        return fail(results.takeError());
      for (size_t i = first; i < last; ++i) {
        ArrayRef<float> h = results->output(i - first, 0);
        roots[i].assign(h.begin(), h.end());
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    outs() << "tree " << i << ":";
    for (size_t k = 0; k < std::min<size_t>(4, roots[i].size()); ++k)
      outs() << " " << format("%.6f", roots[i][k]);
    outs() << (roots[i].size() > 4 ? " ...\n" : "\n");
  }
  return 0;
}
