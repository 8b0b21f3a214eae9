//===- EngineTaskTest.cpp - Builders that branch on computed values -------===//
//
// A hand-written router: each instance scores its vector with a linear
// router, reads the score, and calls module `a` or `b` depending on it,
// three times. The engine must batch every round across instances, and
// the values read and the outputs must match the reference interpreter on
// the graphs the builders chose.
//
//===----------------------------------------------------------------------===//
#include "EngineTestUtils.h"
#include "dynb/Engine/Task.h"

using namespace dynb;
using namespace dynb::test;

namespace {

const char *kModel = R"({"params":[
 {"name":"E","shape":[10,6]},{"name":"R","shape":[2,6]},
 {"name":"Wa","shape":[6,6]},{"name":"Wb","shape":[6,6]},{"name":"bb","shape":[6]}],
"modules":[
 {"name":"a","nodes":[{"op":"arg","shape":[6]},{"op":"linear","inputs":[0],"weight":"Wa"},
   {"op":"tanh","inputs":[1]}],"outputs":[2]},
 {"name":"b","nodes":[{"op":"arg","shape":[6]},{"op":"linear","inputs":[0],"weight":"Wb",
   "bias":"bb"},{"op":"sigmoid","inputs":[1]},{"op":"add","inputs":[2,0]}],"outputs":[3]}]})";

struct Routed {
  std::vector<bool> toA;
  std::vector<std::vector<float>> scores;
};

/// kInstances routers of kHops reads each, for every strategy.
void checkRouters(int kInstances, int kHops) {
  std::string modelPath =
      writeTemp("router.json", std::string(R"({"dynb":1,"model":)") + kModel +
                                   R"(,"instances":[]})");
  EngineOptions o;
  o.modelPath = modelPath;
  o.seed = 11;
  auto engine = Engine::load(o);
  ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());
  Param E = llvm::cantFail((*engine)->param("E"));
  Param R = llvm::cantFail((*engine)->param("R"));
  Module a = llvm::cantFail((*engine)->module("a"));
  Module b = llvm::cantFail((*engine)->module("b"));

  for (BatchingStrategy s : kEveryBatchingStrategy) {
    std::vector<Routed> routed(kInstances);
    std::vector<TaskBuilder> builders;
    for (int i = 0; i < kInstances; ++i)
      builders.push_back([&, i](Instance inst) -> BuildTask {
        Value x = inst.embedding(E, (i * 7) % 10);
        for (int hop = 0; hop < kHops; ++hop) {
          Value score = inst.linear(x, R);
          std::vector<float> v = co_await read(inst, score);
          bool toA = v.size() == 2 && v[0] > v[1];
          routed[i].toA.push_back(toA);
          routed[i].scores.push_back(v);
          x = inst.call(toA ? a : b, {x})[0];
        }
        inst.output(x);
      });
    Batch batch(**engine);
    auto got = runTasks(**engine, batch, builders, s);
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    EXPECT_EQ(got->stats().rounds, uint32_t(kHops + 1));
    ASSERT_EQ(got->numInstances(), size_t(kInstances));

    // The graphs the builders chose, as JSON, with the scores as outputs.
    std::string instances;
    int routesToA = 0;
    for (int i = 0; i < kInstances; ++i) {
      std::string nodes = fmt::format(
          R"({{"op":"embedding","table":"E","index":{}}})", (i * 7) % 10);
      int x = 0, next = 1;
      std::string scoreRefs;
      for (int hop = 0; hop < kHops; ++hop) {
        nodes +=
            fmt::format(R"(,{{"op":"linear","inputs":[{}],"weight":"R"}})", x);
        scoreRefs += fmt::format(",{}", next++);
        nodes += fmt::format(R"(,{{"op":"call","module":"{}","inputs":[{}]}})",
                             routed[i].toA[hop] ? "a" : "b", x);
        routesToA += routed[i].toA[hop];
        x = next++;
      }
      instances += (i ? "," : "") +
                   fmt::format(R"({{"nodes":[{}],"outputs":[[{},0]{}]}})",
                               nodes, x, scoreRefs);
    }
    // Both branches were taken: the test exercises real routing.
    EXPECT_GT(routesToA, 5);
    EXPECT_LT(routesToA, kInstances * kHops - 5);
    std::string refPath = writeTemp(
        "router-ref.json", std::string(R"({"dynb":1,"model":)") + kModel +
                               R"(,"instances":[)" + instances + "]}");
    Session session;
    ASSERT_TRUE(succeeded(session.loadGraphs(refPath)));
    ASSERT_FALSE(bool(session.seedParams(11)));
    auto ref = session.runReference();
    ASSERT_TRUE(succeeded(ref));
    for (int i = 0; i < kInstances; ++i) {
      EXPECT_TRUE(close(got->output(i, 0),
                        llvm::ArrayRef<float>(ref->values[0]).slice(i * 6, 6)))
          << "instance " << i << " (" << toString(s).str() << ")";
      for (int hop = 0; hop < kHops; ++hop)
        EXPECT_TRUE(
            close(routed[i].scores[hop],
                  llvm::ArrayRef<float>(ref->values[1 + hop]).slice(i * 2, 2)))
            << "instance " << i << " hop " << hop;
    }
    // Batched, and each round runs its own nodes only: a few launches a
    // round (the carried values, the router, a and b), not a few per
    // earlier hop as well.
    if (s != BatchingStrategy::None) {
      EXPECT_LT(got->stats().launches, got->stats().nodes);
      EXPECT_LE(got->stats().launches, 5u * (kHops + 1));
    }
    llvm::sys::fs::remove(refPath);
  }
  llvm::sys::fs::remove(modelPath);
}

TEST(EngineTasks, RouterReadsScoresAndStaysBatched) { checkRouters(40, 3); }

// A reader of many rounds (as a parser that reads at every step) reads
// values carried over from every earlier round.
TEST(EngineTasks, ManyRoundsRunEachNodeOnce) { checkRouters(8, 40); }

// Loss nodes of every round count once: the rounds' losses sum to the loss
// of the same graph run in one go.
TEST(EngineTasks, LossesOfEveryRoundAddUp) {
  std::string modelPath =
      writeTemp("router3.json", std::string(R"({"dynb":1,"model":)") + kModel +
                                    R"(,"instances":[]})");
  EngineOptions o;
  o.modelPath = modelPath;
  o.seed = 5;
  auto engine = Engine::load(o);
  ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());
  Param E = llvm::cantFail((*engine)->param("E"));
  Param R = llvm::cantFail((*engine)->param("R"));
  Module a = llvm::cantFail((*engine)->module("a"));
  constexpr int kInstances = 12, kSteps = 4;
  // Reads or not, the same graph; `reads` says whether to read.
  auto build = [&](Instance inst, int i, bool reads) -> BuildTask {
    Value x = inst.embedding(E, i % 10);
    for (int step = 0; step < kSteps; ++step) {
      Value s = inst.linear(x, R);
      inst.softmaxXent(s, (i + step) % 2);
      if (reads)
        co_await read(inst, s);
      x = inst.call(a, {x})[0];
    }
    inst.output(x);
  };
  std::vector<TaskBuilder> builders;
  for (int i = 0; i < kInstances; ++i)
    builders.push_back([&, i](Instance inst) { return build(inst, i, true); });
  Batch batch(**engine);
  auto rounds = runTasks(**engine, batch, builders);
  ASSERT_TRUE(bool(rounds)) << llvm::toString(rounds.takeError());
  EXPECT_EQ(rounds->stats().rounds, uint32_t(kSteps + 1));

  Batch whole(**engine);
  for (int i = 0; i < kInstances; ++i) {
    BuildTask t = build(whole.addInstance(), i, false);
    t.resume();
    ASSERT_TRUE(t.done());
  }
  auto once = (*engine)->run(whole);
  ASSERT_TRUE(bool(once)) << llvm::toString(once.takeError());
  ASSERT_TRUE(rounds->hasLoss() && once->hasLoss());
  EXPECT_NEAR(rounds->loss(), once->loss(), 1e-5 * std::abs(once->loss()));
  EXPECT_GT(once->loss(), 0.0);
  for (int i = 0; i < kInstances; ++i)
    EXPECT_TRUE(close(rounds->output(i, 0), once->output(i, 0)))
        << "instance " << i;
  llvm::sys::fs::remove(modelPath);
}

TEST(EngineTasks, BadReadFailsWithLocatedError) {
  std::string modelPath =
      writeTemp("router2.json", std::string(R"({"dynb":1,"model":)") + kModel +
                                    R"(,"instances":[]})");
  EngineOptions o;
  o.modelPath = modelPath;
  auto engine = Engine::load(o);
  ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());
  Param E = llvm::cantFail((*engine)->param("E"));
  Value foreign;
  std::vector<TaskBuilder> builders = {
      [&](Instance inst) -> BuildTask {
        foreign = inst.embedding(E, 1);
        inst.output(foreign);
        co_return;
      },
      [&](Instance inst) -> BuildTask {
        inst.embedding(E, 2);
        co_await read(inst, foreign); // instance 0's value
      }};
  Batch batch(**engine);
  auto got = runTasks(**engine, batch, builders);
  ASSERT_FALSE(bool(got));
  EXPECT_EQ(llvm::toString(got.takeError()),
            "instance 1, read after node 1: the value read is not one of "
            "this instance's values in this batch");
  llvm::sys::fs::remove(modelPath);
}

} // namespace
