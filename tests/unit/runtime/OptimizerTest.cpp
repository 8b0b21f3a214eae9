//===- OptimizerTest.cpp - SGD, momentum, Adam, clipping, lazy rows -------===//
#include "dynb/Runtime/Optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace dynb::rt;

namespace {

ParameterStore store(std::vector<int64_t> shape, std::vector<float> data) {
  ParameterStore s;
  EXPECT_TRUE(s.add("W", std::move(shape), std::move(data)).isOk());
  return s;
}

const std::vector<float> &values(const ParameterStore &s) {
  return s.find("W")->data;
}

} // namespace

TEST(OptimizerTest, PlainSgdIsParamMinusLrTimesGradient) {
  OptimizerOptions o;
  o.kind = OptimizerOptions::Kind::Sgd;
  o.learningRate = 0.5f;
  Optimizer opt(o);
  ParameterStore p = store({2, 2}, {1, 2, 3, 4});
  ParameterStore g = store({2, 2}, {1, -1, 0.5f, 0});
  ASSERT_TRUE(opt.step(p, g).isOk());
  EXPECT_EQ(values(p), (std::vector<float>{0.5f, 2.5f, 2.75f, 4}));
  EXPECT_EQ(opt.steps(), 1);
}

TEST(OptimizerTest, SgdDefaultsToDyNetsLearningRate) {
  OptimizerOptions o;
  o.kind = OptimizerOptions::Kind::Sgd;
  EXPECT_FLOAT_EQ(o.effectiveLearningRate(), 0.1f);
  EXPECT_FLOAT_EQ(OptimizerOptions().effectiveLearningRate(), 0.001f);
}

TEST(OptimizerTest, MomentumAccumulatesVelocity) {
  OptimizerOptions o;
  o.kind = OptimizerOptions::Kind::Sgd;
  o.learningRate = 0.1f;
  o.momentum = 0.9f;
  Optimizer opt(o);
  ParameterStore p = store({1}, {0});
  ParameterStore g = store({1}, {1});
  // velocity 1, then 1.9, then 2.71: the parameter falls by lr times each.
  double expected = 0, velocity = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(opt.step(p, g).isOk());
    velocity = 0.9 * velocity + 1;
    expected -= 0.1 * velocity;
    EXPECT_NEAR(values(p)[0], expected, 1e-6);
  }
}

TEST(OptimizerTest, AdamMatchesItsDefinitionInDouble) {
  Optimizer opt; // Adam, lr 0.001
  ParameterStore p = store({3}, {0.5f, -0.25f, 1});
  std::vector<double> ref = {0.5, -0.25, 1}, m(3, 0), v(3, 0);
  const std::vector<std::vector<float>> grads = {
      {0.1f, -2, 0.003f}, {0.2f, 1, -0.5f}, {-0.3f, 0.5f, 0.25f}};
  for (size_t t = 0; t < grads.size(); ++t) {
    ParameterStore g = store({3}, grads[t]);
    ASSERT_TRUE(opt.step(p, g).isOk());
    for (size_t i = 0; i < 3; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * grads[t][i];
      v[i] = 0.999 * v[i] + 0.001 * double(grads[t][i]) * grads[t][i];
      double mHat = m[i] / (1 - std::pow(0.9, t + 1));
      double vHat = v[i] / (1 - std::pow(0.999, t + 1));
      ref[i] -= 0.001 * mHat / (std::sqrt(vHat) + 1e-8);
      EXPECT_NEAR(values(p)[i], ref[i], 1e-6) << "step " << t << " i " << i;
    }
  }
}

TEST(OptimizerTest, ClippingScalesByTheGlobalNorm) {
  OptimizerOptions o;
  o.kind = OptimizerOptions::Kind::Sgd;
  o.learningRate = 1;
  o.clipNorm = 2.5f;
  Optimizer opt(o);
  ParameterStore p;
  ASSERT_TRUE(p.add("a", {1}, {0}).isOk());
  ASSERT_TRUE(p.add("b", {1}, {0}).isOk());
  ParameterStore g;
  ASSERT_TRUE(g.add("a", {1}, {3}).isOk());
  ASSERT_TRUE(g.add("b", {1}, {4}).isOk());
  // The norm over both tensors is 5: each is halved.
  ASSERT_TRUE(opt.step(p, g).isOk());
  EXPECT_DOUBLE_EQ(opt.lastGradientNorm(), 5);
  EXPECT_FLOAT_EQ(p.find("a")->data[0], -1.5f);
  EXPECT_FLOAT_EQ(p.find("b")->data[0], -2);
  // Under the threshold, gradients pass unscaled.
  ParameterStore small;
  ASSERT_TRUE(small.add("a", {1}, {1}).isOk());
  ASSERT_TRUE(opt.step(p, small).isOk());
  EXPECT_FLOAT_EQ(p.find("a")->data[0], -2.5f);
}

TEST(OptimizerTest, LazyRowsLeaveUntouchedRowsAndTheirStateAlone) {
  OptimizerOptions o;
  o.lazyRows = true;
  Optimizer lazy(o);
  Optimizer dense; // the same Adam, every row updated
  ParameterStore p = store({3, 2}, {1, 1, 2, 2, 3, 3});
  ParameterStore q = store({3, 2}, {1, 1, 2, 2, 3, 3});
  ParameterStore rowOne = store({3, 2}, {0, 0, 1, -1, 0, 0});
  ASSERT_TRUE(lazy.step(p, rowOne).isOk());
  ASSERT_TRUE(dense.step(q, rowOne).isOk());
  // Rows 0 and 2 had no gradient: lazily they stay put; densely a zero
  // gradient with zero moments moves nothing either, so both agree.
  EXPECT_EQ(values(p), values(q));
  // Now row 0 alone: densely, row 1 keeps moving on its first moment;
  // lazily it does not.
  ParameterStore rowZero = store({3, 2}, {1, 1, 0, 0, 0, 0});
  ASSERT_TRUE(lazy.step(p, rowZero).isOk());
  ASSERT_TRUE(dense.step(q, rowZero).isOk());
  EXPECT_EQ(values(p)[0], values(q)[0]);
  EXPECT_NE(values(p)[2], values(q)[2]);
  EXPECT_FLOAT_EQ(values(p)[2], 2 - 0.001f);
  EXPECT_EQ(values(p)[4], 3);
}

TEST(OptimizerTest, BadGradientsAreRefusedBeforeAnythingChanges) {
  Optimizer opt;
  ParameterStore p = store({2}, {1, 2});
  ParameterStore unknown;
  ASSERT_TRUE(unknown.add("U", {2}, {1, 1}).isOk());
  Status s = opt.step(p, unknown);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "gradient 'U' names no parameter");
  ParameterStore wrongShape = store({1, 2}, {1, 1});
  s = opt.step(p, wrongShape);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(),
            "gradient 'W' has shape [1, 2] but the parameter has [2]");
  ParameterStore nan = store({2}, {1, std::nanf("")});
  s = opt.step(p, nan);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(),
            "gradient 'W' holds nan at element 1; the step is refused");
  EXPECT_EQ(values(p), (std::vector<float>{1, 2}));
  EXPECT_EQ(opt.steps(), 0);
}

TEST(OptimizerTest, SavedStateResumesTheSameRun) {
  std::vector<std::vector<float>> grads = {{1, -2}, {0.5f, 0.25f}, {-1, 3}};
  Optimizer whole;
  ParameterStore p = store({2}, {1, 2});
  for (const auto &g : grads) {
    ParameterStore gs = store({2}, g);
    ASSERT_TRUE(whole.step(p, gs).isOk());
  }
  Optimizer first;
  ParameterStore q = store({2}, {1, 2});
  for (size_t i = 0; i < 2; ++i) {
    ParameterStore gs = store({2}, grads[i]);
    ASSERT_TRUE(first.step(q, gs).isOk());
  }
  ParameterStore saved;
  first.saveState(saved);
  ASSERT_NE(saved.find(std::string(Optimizer::kStatePrefix) + "second/W"),
            nullptr);
  Optimizer resumed;
  ASSERT_TRUE(resumed.loadState(saved).isOk());
  EXPECT_EQ(saved.size(), 0u); // the state tensors are taken out
  EXPECT_EQ(resumed.steps(), 2);
  ParameterStore gs = store({2}, grads[2]);
  ASSERT_TRUE(resumed.step(q, gs).isOk());
  EXPECT_EQ(values(q), values(p));
}

TEST(OptimizerTest, StateOfAnotherKindIsRefused) {
  Optimizer adam;
  ParameterStore p = store({1}, {1});
  ParameterStore g = store({1}, {1});
  ASSERT_TRUE(adam.step(p, g).isOk());
  ParameterStore saved;
  adam.saveState(saved);
  OptimizerOptions o;
  o.kind = OptimizerOptions::Kind::Sgd;
  Optimizer sgd(o);
  Status s = sgd.loadState(saved);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "its optimizer state is Adam's, not SGD's");
  EXPECT_EQ(sgd.steps(), 0);
  ParameterStore empty;
  EXPECT_FALSE(Optimizer().loadState(empty).isOk());
}
