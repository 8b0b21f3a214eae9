//===- EngineSstTest.cpp - SST trees through the API vs the reference -----===//
#include "EngineTestUtils.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace dynb;
using namespace dynb::test;

namespace {

/// 300 dev trees at hdim 8: the CLI's input and its reference outputs,
/// made once for the suite.
struct SstFixture : ::testing::Test {
  static void SetUpTestSuite() {
    modelPath = new std::string(sstModel(8, kTrees));
    reference = new std::vector<std::vector<float>>(
        referenceOutputs(*modelPath, kSeed));
    auto f = sst::readSst(sstDev());
    ASSERT_TRUE(bool(f)) << llvm::toString(f.takeError());
    file = f->release();
  }
  static void TearDownTestSuite() {
    llvm::sys::fs::remove(*modelPath);
    delete modelPath;
    delete reference;
    delete file;
  }

  static std::unique_ptr<Engine> load(BatchingStrategy s) {
    EngineOptions o;
    o.modelPath = *modelPath;
    o.seed = kSeed;
    o.strategy = s;
    auto e = Engine::load(o);
    EXPECT_TRUE(bool(e)) << llvm::toString(e.takeError());
    return e ? std::move(*e) : nullptr;
  }

  static constexpr int kTrees = 300;
  static constexpr uint64_t kSeed = 3;
  static std::string *modelPath;
  static std::vector<std::vector<float>> *reference;
  static sst::SstFile *file;
};
std::string *SstFixture::modelPath;
std::vector<std::vector<float>> *SstFixture::reference;
sst::SstFile *SstFixture::file;

struct StrategyCase {
  BatchingStrategy strategy;
  size_t batchSize;
};

class EveryStrategy : public SstFixture,
                      public ::testing::WithParamInterface<StrategyCase> {};

TEST_P(EveryStrategy, MatchesReferenceOnSstDevTrees) {
  auto [strategy, batchSize] = GetParam();
  std::unique_ptr<Engine> engine = load(strategy);
  ASSERT_TRUE(engine);
  auto h = sst::TreeLstmHandles::resolve(*engine);
  ASSERT_TRUE(bool(h)) << llvm::toString(h.takeError());
  ASSERT_EQ(reference->size(), size_t(kTrees));
  Batch batch(*engine);
  llvm::SmallVector<std::pair<Value, Value>, 64> hc;
  size_t nodes = 0;
  for (size_t first = 0; first < kTrees; first += batchSize) {
    size_t last = std::min<size_t>(kTrees, first + batchSize);
    for (size_t t = first; t < last; ++t) {
      Instance inst = batch.addInstance();
      sst::buildTree(inst, *file, t, *h, hc);
    }
    auto r = engine->run(batch);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    ASSERT_EQ(r->numInstances(), last - first);
    nodes += r->stats().nodes;
    for (size_t t = first; t < last; ++t) {
      ASSERT_EQ(r->numOutputs(t - first), 1u);
      EXPECT_EQ(r->view(t - first, 0).shape[0], 8);
      EXPECT_TRUE(close(r->output(t - first, 0), (*reference)[t]))
          << "tree " << t << " (" << toString(strategy).str() << ")";
    }
    // Batching happened: fewer launches than nodes (none: one each).
    if (strategy == BatchingStrategy::None) {
      EXPECT_EQ(r->stats().launches, r->stats().nodes);
    } else if (last - first > 1) {
      EXPECT_LT(r->stats().launches * 5, r->stats().nodes);
    }
    EXPECT_EQ(batch.numNodes(), 0u) << "run empties the batch";
  }
  // Every tree node is an embedding + leaf call or an internal call.
  size_t treeNodes = 0;
  for (size_t t = 0; t < kTrees; ++t)
    for (const ptb::PtbNode &n : file->trees.tree(t))
      treeNodes += n.isPreterminal() ? 2 : 1;
  EXPECT_EQ(nodes, treeNodes);
  // Nothing was compiled after load: only modules, no per-op kernels.
  EXPECT_EQ(engine->stats().opKernelsCompiled, 0u);
  EXPECT_EQ(engine->stats().modulesCompiled + engine->stats().modulesLoaded,
            2u);
}

INSTANTIATE_TEST_SUITE_P(
    Api, EveryStrategy,
    ::testing::Values(StrategyCase{BatchingStrategy::None, 64},
                      StrategyCase{BatchingStrategy::Depth, 64},
                      StrategyCase{BatchingStrategy::Agenda, 64},
                      StrategyCase{BatchingStrategy::Depth, 300},
                      StrategyCase{BatchingStrategy::Agenda, 300},
                      StrategyCase{BatchingStrategy::Agenda, 1}),
    [](const auto &info) {
      return toString(info.param.strategy).str() + "_batch" +
             std::to_string(info.param.batchSize);
    });

TEST_F(SstFixture, OneEngineRunsManyBatchesAndStrategies) {
  std::unique_ptr<Engine> engine = load(BatchingStrategy::Agenda);
  ASSERT_TRUE(engine);
  auto h = sst::TreeLstmHandles::resolve(*engine);
  ASSERT_TRUE(bool(h));
  llvm::SmallVector<std::pair<Value, Value>, 64> hc;
  // Odd batch sizes and every strategy on one engine: the arena grows and
  // is reused, the kernels stay compiled.
  size_t t = 0;
  for (auto s : {BatchingStrategy::Depth, BatchingStrategy::None,
                 BatchingStrategy::Agenda, BatchingStrategy::Depth}) {
    Batch batch(*engine);
    size_t first = t;
    for (int k = 0; k < 37 && t < kTrees; ++k, ++t) {
      Instance inst = batch.addInstance();
      sst::buildTree(inst, *file, t, *h, hc);
    }
    auto r = engine->run(batch, s);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    for (size_t i = first; i < t; ++i)
      EXPECT_TRUE(close(r->output(i - first, 0), (*reference)[i]))
          << "tree " << i;
  }
}

TEST_F(SstFixture, SamePlansAsDynbcBitForBit) {
  // dynbc's path (dynb-batch pass, PlanBuilder) and the API's (the node
  // arena, PlanAssembler) share the scheduler and the plan assembly, so
  // with the same groups they run the same steps: equal outputs, to the
  // bit, and the same launch count.
  for (BatchingStrategy s : {BatchingStrategy::Depth, BatchingStrategy::None,
                             BatchingStrategy::Agenda}) {
    Session session;
    ASSERT_TRUE(succeeded(session.loadGraphs(*modelPath)));
    ASSERT_FALSE(bool(session.seedParams(kSeed)));
    RunOptions ro;
    ro.strategy = s;
    ro.batchSize = 64;
    auto cli = session.run(ro);
    ASSERT_TRUE(succeeded(cli));
    std::unique_ptr<Engine> engine = load(s);
    ASSERT_TRUE(engine);
    auto h = llvm::cantFail(sst::TreeLstmHandles::resolve(*engine));
    Batch batch(*engine);
    llvm::SmallVector<std::pair<Value, Value>, 64> hc;
    uint64_t launches = 0;
    for (size_t first = 0; first < kTrees; first += 64) {
      size_t last = std::min<size_t>(kTrees, first + 64);
      for (size_t t = first; t < last; ++t) {
        Instance inst = batch.addInstance();
        sst::buildTree(inst, *file, t, h, hc);
      }
      auto r = engine->run(batch);
      ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
      launches += r->stats().launches;
      for (size_t t = first; t < last; ++t) {
        llvm::ArrayRef<float> got = r->output(t - first, 0);
        llvm::ArrayRef<float> want =
            llvm::ArrayRef<float>(cli->outputs.values[0]).slice(t * 8, 8);
        ASSERT_EQ(got, want)
            << "tree " << t << " (" << toString(s).str() << ")";
      }
    }
    EXPECT_EQ(launches, cli->launches);
  }
}

TEST(Docs, ReadmeExampleIsTheCompiledFile) {
  auto readme = llvm::MemoryBuffer::getFile(DYNB_SOURCE_DIR "/README.md");
  auto example = llvm::MemoryBuffer::getFile(
      DYNB_SOURCE_DIR "/examples/embed/readme-example.cpp");
  ASSERT_TRUE(readme && example);
  std::string fenced = "```cpp\n" + (*example)->getBuffer().str() + "```\n";
  EXPECT_NE((*readme)->getBuffer().find(fenced), llvm::StringRef::npos)
      << "README.md must contain examples/embed/readme-example.cpp verbatim "
         "in a ```cpp block";
}

} // namespace
