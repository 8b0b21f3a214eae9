//===- ModelBuilderTest.cpp - Models built in C++ load like model files ---===//
#include "dynb/Engine/ModelBuilder.h"
#include "dynb/Engine/Engine.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

using namespace dynb;

namespace {

/// A one-module model: y = relu(W x + b) and its slice.
ModelBuilder smallModel(llvm::StringRef weight = "W") {
  ModelBuilder model("small");
  model.param("E", {5, 4});
  model.param("W", {6, 4});
  model.param("b", {6});
  ModuleBuilder m = model.module("f");
  ModuleValue y = m.relu(m.linear(m.arg({4}), weight, "b"));
  m.output(y);
  m.output(m.slice(y, 2, 3));
  return model;
}

std::vector<float> runAll(Engine &engine) {
  Batch batch(engine);
  auto E = engine.param("E");
  auto f = engine.module("f");
  EXPECT_TRUE(E && f);
  for (int64_t row = 0; row < 5; ++row) {
    Instance inst = batch.addInstance();
    auto r = inst.call(*f, {inst.embedding(*E, row)});
    inst.output(r[0]);
    inst.output(r[1]);
  }
  auto results = engine.run(batch);
  EXPECT_TRUE(bool(results));
  std::vector<float> out;
  if (!results) {
    llvm::consumeError(results.takeError());
    return out;
  }
  for (size_t i = 0; i < results->numInstances(); ++i)
    for (size_t k = 0; k < results->numOutputs(i); ++k)
      for (float x : results->output(i, k))
        out.push_back(x);
  return out;
}

TEST(ModelBuilder, RunsAsTheSameModelReadFromText) {
  ModelBuilder built = smallModel();
  EngineOptions fromBuilder;
  fromBuilder.model = std::make_shared<ModelBuilder>(smallModel());
  fromBuilder.seed = 4;
  auto a = Engine::load(fromBuilder);
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());

  // The same model as interchange text.
  llvm::json::Object doc{{"dynb", 1},
                         {"model", llvm::json::Object(built.model())},
                         {"instances", llvm::json::Array()}};
  EngineOptions fromText;
  fromText.modelJson = llvm::formatv("{0}", llvm::json::Value(std::move(doc)));
  fromText.seed = 4;
  auto b = Engine::load(fromText);
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());

  std::vector<float> x = runAll(**a), y = runAll(**b);
  ASSERT_EQ(x.size(), 5u * (6 + 3));
  EXPECT_EQ(x, y);
  EXPECT_EQ((*a)->options().modelPath, "small");
}

TEST(ModelBuilder, MistakesAreLocatedAtTheModuleAndNode) {
  EngineOptions options;
  options.model = std::make_shared<ModelBuilder>(smallModel("V"));
  auto engine = Engine::load(options);
  ASSERT_FALSE(bool(engine));
  std::string message = llvm::toString(engine.takeError());
  EXPECT_NE(message.find("small"), std::string::npos) << message;
  EXPECT_NE(message.find("module 'f', node 1 (linear)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'V'"), std::string::npos) << message;

  // Shapes are checked by the verifier as for a file.
  ModelBuilder wide("wide");
  wide.param("W", {6, 4});
  ModuleBuilder m = wide.module("g");
  ModuleValue x = m.arg({4});
  m.output(m.add(x, m.linear(x, "W")));
  options.model = std::make_shared<ModelBuilder>(std::move(wide));
  auto bad = Engine::load(options);
  ASSERT_FALSE(bool(bad));
  message = llvm::toString(bad.takeError());
  EXPECT_NE(message.find("module 'g'"), std::string::npos) << message;
}

} // namespace
