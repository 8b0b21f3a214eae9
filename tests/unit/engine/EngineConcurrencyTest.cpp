//===- EngineConcurrencyTest.cpp - Many callers, one engine ---------------===//
#include "EngineTestUtils.h"
#include "dynb/Engine/MicroBatcher.h"

#include <atomic>
#include <thread>

using namespace dynb;
using namespace dynb::test;

namespace {

struct Shared {
  std::string modelPath;
  std::vector<std::vector<float>> reference;
  std::unique_ptr<sst::SstFile> file;
};

Shared &shared() {
  static Shared *s = [] {
    auto *s = new Shared;
    s->modelPath = sstModel(16, 160);
    s->reference = referenceOutputs(s->modelPath, 5);
    auto f = sst::readSst(sstDev());
    EXPECT_TRUE(bool(f));
    if (f)
      s->file = std::move(*f);
    return s;
  }();
  return *s;
}

std::unique_ptr<Engine> loadEngine() {
  EngineOptions o;
  o.modelPath = shared().modelPath;
  o.seed = 5;
  auto e = Engine::load(o);
  EXPECT_TRUE(bool(e)) << llvm::toString(e.takeError());
  return e ? std::move(*e) : nullptr;
}

TEST(EngineConcurrency, SixThreadsRunTheirOwnBatches) {
  Shared &s = shared();
  ASSERT_EQ(s.reference.size(), 160u);
  std::unique_ptr<Engine> engine = loadEngine();
  ASSERT_TRUE(engine);
  auto h = llvm::cantFail(sst::TreeLstmHandles::resolve(*engine));
  constexpr int kThreads = 6;
  std::vector<std::string> failures(kThreads);
  std::vector<int> checked(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      llvm::SmallVector<std::pair<Value, Value>, 64> hc;
      // Each caller takes every kThreads-th tree, in batches of 7, with its
      // own strategy, three times over.
      BatchingStrategy strategy = BatchingStrategy(t % 3);
      for (int round = 0; round < 3; ++round) {
        Batch batch(*engine);
        std::vector<size_t> mine;
        for (size_t i = t; i < s.reference.size(); i += kThreads) {
          Instance inst = batch.addInstance();
          sst::buildTree(inst, *s.file, i, h, hc);
          mine.push_back(i);
          if (mine.size() == 7 || i + kThreads >= s.reference.size()) {
            auto r = engine->run(batch, strategy);
            if (!r) {
              failures[t] = llvm::toString(r.takeError());
              return;
            }
            for (size_t k = 0; k < mine.size(); ++k) {
              auto c = close(r->output(k, 0), s.reference[mine[k]]);
              if (!c) {
                failures[t] = fmt::format("tree {}: {}", mine[k], c.message());
                return;
              }
              ++checked[t];
            }
            mine.clear();
          }
        }
      }
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], "") << "thread " << t;
    EXPECT_GT(checked[t], 3 * 20) << "thread " << t;
  }
}

TEST(EngineConcurrency, MicroBatcherGathersCallersAndAnswersEachItsOwn) {
  Shared &s = shared();
  std::unique_ptr<Engine> engine = loadEngine();
  ASSERT_TRUE(engine);
  auto h = llvm::cantFail(sst::TreeLstmHandles::resolve(*engine));
  MicroBatcherOptions mo;
  mo.maxInstances = 16;
  // Long enough that a loaded or sanitized machine still fills batches
  // before the deadline: the count checked below is then no measure of
  // how fast the submitting threads were scheduled.
  mo.maxDelay = std::chrono::seconds(1);
  MicroBatcher batcher(*engine, mo);
  constexpr int kThreads = 8;
  std::vector<std::string> failures(kThreads);
  std::atomic<int> answered{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      // Submit all of this caller's trees first, then collect: requests
      // from several callers are in flight together.
      std::vector<
          std::pair<size_t, std::future<llvm::Expected<InstanceOutputs>>>>
          pending;
      for (size_t i = t; i < s.reference.size(); i += kThreads)
        pending.emplace_back(i, batcher.submit([&, i](Instance &inst) {
          llvm::SmallVector<std::pair<Value, Value>, 64> hc;
          sst::buildTree(inst, *s.file, i, h, hc);
        }));
      for (auto &[i, f] : pending) {
        llvm::Expected<InstanceOutputs> out = f.get();
        if (!out) {
          failures[t] = llvm::toString(out.takeError());
          return;
        }
        if (out->outputs.size() != 1) {
          failures[t] = "wrong output count";
          return;
        }
        auto c = close(out->outputs[0], s.reference[i]);
        if (!c) {
          failures[t] = fmt::format("tree {}: {}", i, c.message());
          return;
        }
        ++answered;
      }
    });
  for (auto &th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_EQ(answered.load(), 160);
  // Batched: far fewer runs than requests (each run holds up to 16).
  EXPECT_LE(batcher.batchesRun(), 160u / 4);
  EXPECT_GE(batcher.batchesRun(), 10u);
}

TEST(EngineConcurrency, MicroBatcherFailsOnlyTheCallerThatErred) {
  Shared &s = shared();
  std::unique_ptr<Engine> engine = loadEngine();
  ASSERT_TRUE(engine);
  auto h = llvm::cantFail(sst::TreeLstmHandles::resolve(*engine));
  MicroBatcherOptions mo;
  mo.maxInstances = 8;
  // The batch is full at the eighth request; the deadline only has to be
  // later than the eight submits under any load, for the one-batch check.
  mo.maxDelay = std::chrono::seconds(30);
  MicroBatcher batcher(*engine, mo);
  std::vector<std::future<llvm::Expected<InstanceOutputs>>> futures;
  for (size_t i = 0; i < 8; ++i)
    futures.push_back(batcher.submit([&, i](Instance &inst) {
      if (i == 3) {
        inst.embedding(h.E, 1 << 30); // outside the table
        return;
      }
      llvm::SmallVector<std::pair<Value, Value>, 64> hc;
      sst::buildTree(inst, *s.file, i, h, hc);
    }));
  for (size_t i = 0; i < 8; ++i) {
    llvm::Expected<InstanceOutputs> out = futures[i].get();
    if (i == 3) {
      ASSERT_FALSE(bool(out));
      std::string msg = llvm::toString(out.takeError());
      EXPECT_NE(msg.find("node 0 (embedding E): index 1073741824 is outside "
                         "table 'E'"),
                std::string::npos)
          << msg;
      continue;
    }
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    EXPECT_TRUE(close(out->outputs[0], s.reference[i])) << "tree " << i;
  }
  EXPECT_EQ(batcher.batchesRun(), 1u);
}

} // namespace
