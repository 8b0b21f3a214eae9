//===- EngineErrorsTest.cpp - Misuse gives located errors, never a crash ==//
#include "EngineTestUtils.h"

using namespace dynb;
using namespace dynb::test;

namespace {

const char *kModel = R"({"dynb":1,"model":{"params":[
 {"name":"E","shape":[5,4]},{"name":"W","shape":[3,4]},{"name":"b","shape":[2]}],
"modules":[{"name":"cell","nodes":[{"op":"arg","shape":[4]},{"op":"arg","shape":[4]},
 {"op":"add","inputs":[0,1]},{"op":"tanh","inputs":[2]}],"outputs":[3,2]}]},
"instances":[]})";

struct EngineErrors : ::testing::Test {
  void SetUp() override {
    path = writeTemp("errors.json", kModel);
    EngineOptions o;
    o.modelPath = path;
    auto e = Engine::load(o);
    ASSERT_TRUE(bool(e)) << llvm::toString(e.takeError());
    engine = std::move(*e);
    E = llvm::cantFail(engine->param("E"));
    W = llvm::cantFail(engine->param("W"));
    b = llvm::cantFail(engine->param("b"));
    cell = llvm::cantFail(engine->module("cell"));
  }
  void TearDown() override { llvm::sys::fs::remove(path); }

  /// The error run() reports for `batch` (empty if it ran).
  std::string runError(Batch &batch) {
    auto r = engine->run(batch);
    return r ? std::string() : llvm::toString(r.takeError());
  }

  std::string path;
  std::unique_ptr<Engine> engine;
  Param E, W, b;
  Module cell;
};

#define EXPECT_HAS(haystack, needle)                                           \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST_F(EngineErrors, UnknownNamesAtLookup) {
  auto m = engine->module("nope");
  ASSERT_FALSE(bool(m));
  EXPECT_HAS(llvm::toString(m.takeError()), "unknown module 'nope'");
  auto p = engine->param("F");
  ASSERT_FALSE(bool(p));
  EXPECT_HAS(llvm::toString(p.takeError()), "unknown parameter 'F'");
}

TEST_F(EngineErrors, WrongWidthNamesInstanceAndNode) {
  Batch batch(*engine);
  Instance ok = batch.addInstance();
  Value x = ok.embedding(E, 1);
  ok.output(ok.call(cell, {x, x})[0]);
  Instance bad = batch.addInstance();
  Value y = bad.embedding(E, 2);
  Value s = bad.slice(y, 0, 2);
  auto r = bad.call(cell, {y, s}); // argument 1 has width 2
  EXPECT_FALSE(r[0].valid());
  EXPECT_FALSE(r[1].valid());
  bad.output(bad.tanh(r[0])); // follows from the error: no second message
  EXPECT_FALSE(batch.failed(0));
  EXPECT_TRUE(batch.failed(1));
  EXPECT_EQ(runError(batch),
            "instance 1, node 2 (call @cell): argument 1 has width 2, but "
            "@cell expects 4");
}

TEST_F(EngineErrors, ArgumentCountAndOpShapes) {
  Batch batch(*engine);
  Instance a = batch.addInstance();
  Value x = a.embedding(E, 0);
  a.call(cell, {x});
  EXPECT_EQ(runError(batch),
            "instance 0, node 1 (call @cell): @cell takes 2 arguments, got 1");

  Instance c = batch.addInstance();
  Value y = c.embedding(E, 0);
  c.add(y, c.slice(y, 1, 3));
  EXPECT_HAS(runError(batch), "instance 0, node 2 (add): operands have "
                              "widths 4 and 3");

  Instance d = batch.addInstance();
  d.slice(d.embedding(E, 0), 3, 2);
  EXPECT_HAS(runError(batch), "node 1 (slice): slice [3, 5) is outside a "
                              "value of width 4");

  Instance e = batch.addInstance();
  e.linear(e.embedding(E, 0), W, b); // bias [2] for a [3 x 4] weight
  EXPECT_HAS(runError(batch), "node 1 (linear): bias 'b' is not [3]");

  Instance f = batch.addInstance();
  f.linear(f.embedding(E, 0), E); // E is [5 x 4]: fine as a weight
  f.embedding(W, 7);
  EXPECT_HAS(runError(batch), "instance 0, node 2 (embedding W): index 7 is "
                              "outside table 'W' of 3 rows");

  Instance g = batch.addInstance();
  g.embedding(b, 0);
  EXPECT_HAS(runError(batch), "parameter 'b' is not a 2-D table");
  Instance h = batch.addInstance();
  h.concat({h.embedding(E, 0)});
  EXPECT_HAS(runError(batch), "a concat needs at least two operands");
}

TEST_F(EngineErrors, HandlesFromAnotherBatchOrInstanceOrAStaleOne) {
  Batch first(*engine), second(*engine);
  Instance a = first.addInstance();
  Value x = a.embedding(E, 1);
  Instance b2 = second.addInstance();
  b2.tanh(x);
  EXPECT_EQ(runError(second), "instance 0, node 0 (tanh): operand 0 is a "
                              "value of another batch (or of this batch "
                              "before it was run or cleared)");

  Instance other = first.addInstance();
  other.tanh(x);
  EXPECT_EQ(runError(first), "instance 1, node 0 (tanh): operand 0 belongs "
                             "to instance 0: instances do not share values");

  // After a run, the old values are stale.
  Instance c = first.addInstance();
  Value y = c.embedding(E, 2);
  c.output(y);
  ASSERT_EQ(runError(first), "");
  Instance d = first.addInstance();
  d.output(y);
  EXPECT_HAS(runError(first), "value of another batch (or of this batch "
                              "before it was run or cleared)");

  // Handles of another engine's model.
  Batch third(*engine);
  Instance e = third.addInstance();
  e.call(Module{99}, {});
  e.embedding(Param{42}, 0);
  EXPECT_HAS(runError(third), "not a module of this engine's model");
}

TEST_F(EngineErrors, EmptyBatchesAndInstancesWithoutOutputsRun) {
  Batch batch(*engine);
  auto r = engine->run(batch);
  ASSERT_TRUE(bool(r));
  EXPECT_EQ(r->numInstances(), 0u);
  batch.addInstance();
  Instance i = batch.addInstance();
  i.output(i.embedding(E, 4));
  r = engine->run(batch);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->numOutputs(0), 0u);
  ASSERT_EQ(r->numOutputs(1), 1u);
  EXPECT_EQ(r->view(1, 0).shape[0], 4);
}

TEST_F(EngineErrors, DiscardedInstanceLetsTheOthersRun) {
  Batch batch(*engine);
  Instance bad = batch.addInstance();
  bad.embedding(E, -1);
  Instance good = batch.addInstance();
  good.output(good.call(cell, {good.embedding(E, 0), good.embedding(E, 1)})[1]);
  ASSERT_TRUE(batch.failed(0));
  batch.discard(0);
  auto r = engine->run(batch);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ(r->numOutputs(0), 0u);
  EXPECT_EQ(r->numOutputs(1), 1u);
}

TEST(EngineLoad, ModelBuiltInMemory) {
  // A model made by the application (here a string; any JSON writer works),
  // loaded without a file.
  EngineOptions o;
  o.modelJson = kModel;
  auto e = Engine::load(o);
  ASSERT_TRUE(bool(e)) << llvm::toString(e.takeError());
  Batch batch(**e);
  Instance i = batch.addInstance();
  Param E = llvm::cantFail((*e)->param("E"));
  Value x = i.embedding(E, 3);
  auto hc = i.call(llvm::cantFail((*e)->module("cell")), {x, x});
  i.output(hc[1]); // x + x
  i.output(x);
  auto r = (*e)->run(batch);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  for (int k = 0; k < 4; ++k)
    EXPECT_EQ(r->output(0, 0)[k], 2 * r->output(0, 1)[k]);

  // Its errors are located too, at the name given (default model.json).
  o.modelJson = R"({"dynb":1,"model":{"params":[],"modules":[{"name":"m",)"
                R"("nodes":[{"op":"tanh","inputs":[0]}],"outputs":[0]}]}})";
  e = Engine::load(o);
  ASSERT_FALSE(bool(e));
  EXPECT_HAS(llvm::toString(e.takeError()), "model.json:1:");
}

TEST(EngineLoad, ModelErrorsAreTheCliMessages) {
  EngineOptions o;
  o.modelPath = "/nonexistent/model.json";
  auto e = Engine::load(o);
  ASSERT_FALSE(bool(e));
  EXPECT_HAS(llvm::toString(e.takeError()), "/nonexistent/model.json");

  // A located error, as dynbc prints it: file:line:col, instance, node.
  std::string bad = writeTemp(
      "bad.json",
      R"({"dynb":1,"model":{"params":[{"name":"E","shape":[2,3]}],"modules":[]},)"
      "\n"
      R"("instances":[{"nodes":[{"op":"embedding","table":"E","index":9}],"outputs":[0]}]})");
  o.modelPath = bad;
  e = Engine::load(o);
  ASSERT_FALSE(bool(e));
  std::string msg = llvm::toString(e.takeError());
  EXPECT_HAS(msg, bad + ":1:1: error: instance 0, node 0 (embedding): index "
                        "9 is outside table 'E' of 2 rows");
  llvm::sys::fs::remove(bad);

  // Parameters that do not match the model.
  std::string model = writeTemp("m.json", kModel);
  o.modelPath = model;
  o.paramsPath = "/nonexistent/p.safetensors";
  e = Engine::load(o);
  ASSERT_FALSE(bool(e));
  EXPECT_HAS(llvm::toString(e.takeError()), "p.safetensors");
  llvm::sys::fs::remove(model);
}

} // namespace
