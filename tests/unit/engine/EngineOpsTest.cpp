//===- EngineOpsTest.cpp - Per-instance ops and calls vs the reference ----===//
//
// Graphs mixing every per-instance op with module calls are built twice,
// through the API and as interchange JSON, and the API's outputs are
// checked against the reference interpreter on the JSON.
//
//===----------------------------------------------------------------------===//
#include "EngineTestUtils.h"

#include "dynb/Reference/ReferenceGradient.h"
#include "dynb/Runtime/Optimizer.h"

using namespace dynb;
using namespace dynb::test;

namespace {

const char *kModel = R"({"params":[
 {"name":"E","shape":[10,6]},{"name":"W","shape":[4,6]},{"name":"b","shape":[4]},
 {"name":"V","shape":[6,6]}],
"modules":[{"name":"mix","nodes":[
 {"op":"arg","shape":[6]},{"op":"arg","shape":[4]},
 {"op":"linear","inputs":[0],"weight":"V"},{"op":"tanh","inputs":[2]},
 {"op":"slice","inputs":[3],"offset":2,"size":4},{"op":"mul","inputs":[4,1]}],
 "outputs":[5,3]}]})";

/// Builds the same graph through an Instance and as JSON nodes.
struct Twin {
  explicit Twin(Instance &inst) : inst(inst) {}
  Instance &inst;
  std::string json;
  int next = 0;
  llvm::DenseMap<uint64_t, std::string> refOf;

  std::string ref(Value v) {
    return refOf.lookup((uint64_t(v.node) << 8) | v.result);
  }
  Value node(Value v, const std::string &body) {
    json += (json.empty() ? "" : ",") + std::string("{") + body + "}";
    refOf[(uint64_t(v.node) << 8)] = std::to_string(next);
    return ++next, v;
  }
  Value embedding(Param E, int64_t row) {
    return node(inst.embedding(E, row),
                fmt::format(R"("op":"embedding","table":"E","index":{})", row));
  }
  Value unary(const char *op, Value v, Value x) {
    return node(v, fmt::format(R"("op":"{}","inputs":[{}])", op, ref(x)));
  }
  Value binary(const char *op, Value v, Value a, Value b) {
    return node(
        v, fmt::format(R"("op":"{}","inputs":[{},{}])", op, ref(a), ref(b)));
  }
};

/// Builds kInstances instances mixing every per-instance op with calls of
/// @mix and losses into `batch`, and returns them as interchange JSON.
std::string buildOpsBatch(Engine &engine, Batch &batch, int kInstances) {
  Param E = llvm::cantFail(engine.param("E"));
  Param W = llvm::cantFail(engine.param("W"));
  Param b = llvm::cantFail(engine.param("b"));
  Module mix = llvm::cantFail(engine.module("mix"));
  std::string instances;
  for (int i = 0; i < kInstances; ++i) {
    Instance inst = batch.addInstance();
    Twin t(inst);
    Value x = t.embedding(E, i % 10);
    Value y = t.node(inst.linear(x, W, b),
                     fmt::format(R"("op":"linear","inputs":[{}],)"
                                 R"("weight":"W","bias":"b")",
                                 t.ref(x)));
    Value z = t.unary("tanh", inst.tanh(y), y);
    // A loss on the linear's logits: not an output, still in the loss.
    t.node(inst.softmaxXent(y, i % 4),
           fmt::format(R"("op":"softmax_xent","inputs":[{}],"label":{})",
                       t.ref(y), i % 4));
    Value sl =
        t.node(inst.slice(x, 1, 4), fmt::format(R"("op":"slice","inputs":[{}],)"
                                                R"("offset":1,"size":4)",
                                                t.ref(x)));
    Value r = t.unary("relu", inst.relu(sl), sl);
    Value a = t.binary("add", inst.add(z, r), z, r);
    Value s = t.unary("sigmoid", inst.sigmoid(sl), sl);
    Value g = t.unary("neg", inst.neg(s), s);
    Value c = t.binary("concat", inst.concat({a, g}), a, g);
    std::string second;
    if (i % 2) {
      auto m = inst.call(mix, {x, a});
      t.node(m[0], fmt::format(R"("op":"call","module":"mix","inputs":[{},{}])",
                               t.ref(x), t.ref(a)));
      inst.output(c);
      inst.output(m[0]);
      second = "[" + t.ref(m[0]) + ",0]";
    } else {
      Value p = t.binary("mul", inst.mul(a, z), a, z);
      inst.output(c);
      inst.output(p);
      second = t.ref(p);
    }
    instances +=
        (i ? "," : "") + fmt::format(R"({{"nodes":[{}],"outputs":[{},{}]}})",
                                     t.json, t.ref(c), second);
  }
  return instances;
}

/// kModel with these instances (JSON), as a file.
std::string opsFile(const std::string &name, const std::string &instances) {
  return writeTemp(name, std::string(R"({"dynb":1,"model":)") + kModel +
                             R"(,"instances":[)" + instances + "]}");
}

/// An engine on kModel, seeded with 7.
llvm::Expected<std::unique_ptr<Engine>> opsEngine(const std::string &path) {
  EngineOptions o;
  o.modelPath = path;
  o.seed = 7;
  return Engine::load(o);
}

TEST(EngineOps, EveryPerInstanceOpAndCallsMatchReference) {
  constexpr int kInstances = 23;
  std::string modelPath = opsFile("ops-model.json", "");
  auto engine = opsEngine(modelPath);
  ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());
  for (BatchingStrategy s : kEveryBatchingStrategy) {
    Batch batch(**engine);
    std::string instances = buildOpsBatch(**engine, batch, kInstances);
    std::string refPath = opsFile("ops.json", instances);
    Session session;
    ASSERT_TRUE(succeeded(session.loadGraphs(refPath)));
    ASSERT_FALSE(bool(session.seedParams(7)));
    auto ref = session.runReference();
    ASSERT_TRUE(succeeded(ref));
    auto got = (*engine)->run(batch, s);
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    ASSERT_EQ(got->numInstances(), size_t(kInstances));
    for (int i = 0; i < kInstances; ++i) {
      ASSERT_EQ(got->numOutputs(i), 2u);
      for (int p = 0; p < 2; ++p) {
        int64_t w = ref->widths[p];
        llvm::ArrayRef<float> want =
            llvm::ArrayRef<float>(ref->values[p]).slice(i * w, w);
        EXPECT_TRUE(close(got->output(i, p), want))
            << "instance " << i << " output " << p << " (" << toString(s).str()
            << ")";
      }
    }
    ASSERT_TRUE(ref->hasLoss);
    EXPECT_TRUE(got->hasLoss());
    EXPECT_NEAR(got->loss(), ref->loss, 1e-4) << toString(s).str();
    if (s != BatchingStrategy::None) {
      EXPECT_LT(got->stats().launches, got->stats().nodes / 4);
    }
    llvm::sys::fs::remove(refPath);
  }
  // One kernel per op signature, compiled on first use and reused by the
  // next batches.
  EXPECT_EQ((*engine)->stats().opKernelsCompiled, 9u);
  llvm::sys::fs::remove(modelPath);
}

// The embedded API's backward pass: the same graphs' gradients, batched by
// every strategy, against the reference gradient on the JSON; an optimizer
// step on Engine::parameters() changes what the next batch computes.
TEST(EngineOps, GradientOfEveryOpMatchesTheReferenceGradient) {
  constexpr int kInstances = 11;
  std::string modelPath = opsFile("grad-model.json", "");
  auto engine = opsEngine(modelPath);
  ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());
  for (BatchingStrategy s : kEveryBatchingStrategy) {
    Batch batch(**engine);
    std::string instances = buildOpsBatch(**engine, batch, kInstances);
    std::string refPath = opsFile("grad.json", instances);
    Session session;
    ASSERT_TRUE(succeeded(session.loadGraphs(refPath)));
    ASSERT_FALSE(bool(session.seedParams(7)));
    ReferenceGradient ref(session.module(), session.params());
    double refLoss = 0;
    for (InstanceOp inst : session.module().getOps<InstanceOp>()) {
      mlir::FailureOr<double> l = ref.accumulate(inst);
      ASSERT_TRUE(succeeded(l));
      refLoss += *l;
    }
    auto got = (*engine)->gradient(batch, s);
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    EXPECT_NEAR(got->loss, refLoss, 1e-4 * std::abs(refLoss));
    EXPECT_GE(got->launches, got->lowerBound);
    EXPECT_EQ(batch.numInstances(), 0u) << "the batch is spent";
    for (const auto &[name, want] : ref.gradients()) {
      const rt::ParamTensor *t = got->values.find(name);
      ASSERT_TRUE(t) << name;
      ASSERT_EQ(t->data.size(), want.size()) << name;
      double scale = 1e-6;
      for (double w : want)
        scale = std::max(scale, std::abs(w));
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(t->data[i], want[i], 1e-5 * scale)
            << name << "[" << i << "] (" << toString(s).str() << ")";
    }
    // A model file with instances of its own gives the same gradient:
    // the engine ignores the file's instances.
    if (s == BatchingStrategy::Agenda) {
      auto fromFile = opsEngine(refPath);
      ASSERT_TRUE(bool(fromFile)) << llvm::toString(fromFile.takeError());
      Batch again(**fromFile);
      buildOpsBatch(**fromFile, again, kInstances);
      auto same = (*fromFile)->gradient(again, s);
      ASSERT_TRUE(bool(same)) << llvm::toString(same.takeError());
      EXPECT_NEAR(same->loss, refLoss, 1e-4 * std::abs(refLoss));
    }
    llvm::sys::fs::remove(refPath);
  }

  // A step on the engine's parameters lowers the next batch's loss.
  rt::Optimizer sgd({rt::OptimizerOptions::Kind::Sgd, 0.01f});
  Batch first(**engine);
  buildOpsBatch(**engine, first, kInstances);
  auto before = (*engine)->gradient(first);
  ASSERT_TRUE(bool(before)) << llvm::toString(before.takeError());
  ASSERT_TRUE(sgd.step((*engine)->parameters(), before->values).isOk());
  Batch again(**engine);
  buildOpsBatch(**engine, again, kInstances);
  auto after = (*engine)->run(again);
  ASSERT_TRUE(bool(after)) << llvm::toString(after.takeError());
  EXPECT_LT(after->loss(), before->loss);

  // A batch with a recorded misuse is an error and runs nothing.
  Batch bad(**engine);
  Instance inst = bad.addInstance();
  inst.output(inst.tanh(Value{}));
  auto refused = (*engine)->gradient(bad);
  ASSERT_FALSE(bool(refused));
  llvm::consumeError(refused.takeError());
  llvm::sys::fs::remove(modelPath);
}

const char *kMoeModel = R"({"params":[
 {"name":"X","shape":[12,6]},{"name":"G","shape":[4,6]},{"name":"N","shape":[4,6]},
 {"name":"W1","shape":[4,5,6]},{"name":"b1","shape":[4,5]}],
"modules":[{"name":"expert","experts":4,"nodes":[
 {"op":"arg","shape":[6]},
 {"op":"linear","inputs":[0],"weight":"W1","bias":"b1"},
 {"op":"tanh","inputs":[1]}],"outputs":[2]}]})";

TEST(EngineOps, DispatchesMatchReference) {
  constexpr int kInstances = 19;
  std::string modelPath =
      writeTemp("moe-model.json", std::string(R"({"dynb":1,"model":)") +
                                      kMoeModel + R"(,"instances":[]})");
  EngineOptions o;
  o.modelPath = modelPath;
  o.seed = 11;
  auto engine = Engine::load(o);
  ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());
  Param X = llvm::cantFail((*engine)->param("X"));
  Param G = llvm::cantFail((*engine)->param("G"));
  Param N = llvm::cantFail((*engine)->param("N"));
  Experts expert = llvm::cantFail((*engine)->experts("expert"));
  // Expert modules are dispatched, never called.
  llvm::Expected<Module> asModule = (*engine)->module("expert");
  EXPECT_FALSE(bool(asModule));
  llvm::consumeError(asModule.takeError());

  for (BatchingStrategy s : kEveryBatchingStrategy) {
    Batch batch(**engine);
    std::string instances;
    for (int i = 0; i < kInstances; ++i) {
      Instance inst = batch.addInstance();
      Value x = inst.embedding(X, (i * 5) % 12);
      Value y;
      std::string node;
      if (i % 2) {
        y = inst.dispatch(x, G, expert, 2, N, 3);
        node = R"("top":2,"noise":"N","noise_seed":3)";
      } else {
        y = inst.dispatch(x, G, expert, 1);
        node = R"("top":1)";
      }
      inst.output(inst.relu(y));
      instances +=
          (i ? "," : "") +
          fmt::format(R"({{"nodes":[{{"op":"embedding","table":"X",)"
                      R"("index":{}}},{{"op":"dispatch","inputs":[0],)"
                      R"("gate":"G","experts":"expert",{}}},)"
                      R"({{"op":"relu","inputs":[1]}}],"outputs":[2]}})",
                      (i * 5) % 12, node);
    }
    std::string refPath =
        writeTemp("moe.json", std::string(R"({"dynb":1,"model":)") + kMoeModel +
                                  R"(,"instances":[)" + instances + "]}");
    std::vector<std::vector<float>> want = referenceOutputs(refPath, 11);
    ASSERT_EQ(want.size(), size_t(kInstances));
    auto got = (*engine)->run(batch, s);
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    EXPECT_FALSE(got->hasLoss()); // no loss nodes: none reported
    for (int i = 0; i < kInstances; ++i)
      EXPECT_TRUE(close(got->output(i, 0), want[i]))
          << "instance " << i << " (" << toString(s).str() << ")";
    // The embedding, a launch per dispatch signature, one relu.
    if (s == BatchingStrategy::Agenda) {
      EXPECT_EQ(got->stats().launches, 4u);
    }
    llvm::sys::fs::remove(refPath);
  }

  // Misuse is a located error, as for any op.
  Batch bad(**engine);
  Instance inst = bad.addInstance();
  Value x = inst.embedding(X, 0);
  inst.output(inst.dispatch(x, G, expert, 5));
  llvm::Error e = bad.error();
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e))
                .find("instance 0, node 1 (dispatch): keeps the top 5 of 4"),
            std::string::npos);
  llvm::sys::fs::remove(modelPath);
}

} // namespace
