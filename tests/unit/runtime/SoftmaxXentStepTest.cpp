//===- SoftmaxXentStepTest.cpp - Loss steps and the plan's loss total -----===//
#include "RuntimeTestUtils.h"
#include "dynb/Runtime/Executor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

/// Rows of logits looked up from a table, then a loss step on them.
struct LossPlan {
  ParameterStore params;
  Plan plan;
  BufferId logits, loss;
  std::vector<float> table = {1.0f,  2.0f, 3.0f,  // row 0
                              -50.f, 40.f, 100.f, // row 1: large logits
                              0.5f,  0.5f, 0.5f}; // row 2: uniform

  explicit LossPlan(std::vector<int64_t> labels) {
    EXPECT_TRUE(params.add("Z", {3, 3}, table).isOk());
    BufferId z = plan.addParameterBuffer("Z", 3, 3);
    logits = plan.addArenaBuffer(3, 3);
    loss = plan.addArenaBuffer(3, 1);
    plan.steps.push_back(
        gatherStep(wholeBuffer(plan, logits), 0, {{z, 0}, {z, 1}, {z, 2}}));
    SoftmaxXentStep step;
    step.logits = wholeBuffer(plan, logits);
    step.labels = std::move(labels);
    step.loss = wholeBuffer(plan, loss);
    plan.steps.push_back(std::move(step));
    plan.losses.push_back(wholeBuffer(plan, loss));
    planArena(plan);
  }
};

double expectedLoss(const float *z, int64_t label) {
  double top = std::max({double(z[0]), double(z[1]), double(z[2])});
  double sum = 0;
  for (int c = 0; c < 3; ++c)
    sum += std::exp(double(z[c]) - top);
  return top + std::log(sum) - double(z[label]);
}

} // namespace

TEST(SoftmaxXentStep, WritesEachRowsLossAndTheirSum) {
  LossPlan lp({2, 0, 1});
  Executor executor(lp.params);
  ASSERT_TRUE(executor.validate(lp.plan).isOk());
  Status status = executor.run(lp.plan);
  ASSERT_TRUE(status.isOk()) << status.message();
  double total = 0;
  for (int64_t r = 0; r < 3; ++r) {
    double want =
        expectedLoss(lp.table.data() + 3 * r, std::vector<int64_t>{2, 0, 1}[r]);
    float got = *executor.rowPointer(lp.plan, lp.loss, r);
    EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, want)) << "row " << r;
    EXPECT_TRUE(std::isfinite(got)) << "row " << r;
    total += got;
  }
  // Row 1 picks the smallest of large logits: finite, about 150.
  EXPECT_NEAR(*executor.rowPointer(lp.plan, lp.loss, 1), 150.0, 1e-3);
  // Row 2 is uniform: log 3.
  EXPECT_NEAR(*executor.rowPointer(lp.plan, lp.loss, 2), std::log(3.0), 1e-6);
  EXPECT_DOUBLE_EQ(executor.loss(lp.plan), total);
}

TEST(SoftmaxXentStep, ValidationRejectsBadLabelsAndShapes) {
  {
    LossPlan lp({0, 3, 1});
    Status s = Executor(lp.params).validate(lp.plan);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("label 3 of row 1 is outside [0, 3)"),
              std::string::npos)
        << s.message();
  }
  {
    LossPlan lp({0, 1});
    Status s = Executor(lp.params).validate(lp.plan);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("2 labels for 3 rows"), std::string::npos)
        << s.message();
  }
  {
    LossPlan lp({0, 1, 2});
    lp.plan.losses.push_back(wholeBuffer(lp.plan, lp.logits));
    Status s = Executor(lp.params).validate(lp.plan);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("loss 1: has 3 cols, not 1"), std::string::npos)
        << s.message();
  }
}

TEST(SoftmaxXentStep, LossTermsOutliveTheirStep) {
  // A buffer planned after the loss step must not reuse the loss buffer:
  // the total is read after the run.
  LossPlan lp({0, 0, 0});
  BufferId later = lp.plan.addArenaBuffer(3, 1);
  lp.plan.steps.push_back(
      gatherStep(wholeBuffer(lp.plan, later), 0,
                 {{lp.logits, 0}, {lp.logits, 1}, {lp.logits, 2}}));
  planArena(lp.plan);
  EXPECT_NE(lp.plan.buffers[later].arenaOffset,
            lp.plan.buffers[lp.loss].arenaOffset);
}

// The gradient form writes softmax minus the one-hot label per row (finite
// for large logits, summing to 0 over the classes) and is no loss term.
TEST(SoftmaxXentStep, GradientRowsAreSoftmaxMinusTheOneHotLabel) {
  ParameterStore params;
  std::vector<float> table = {1.0f, 2.0f, 3.0f, -50.f, 40.f, 100.f};
  ASSERT_TRUE(params.add("Z", {2, 3}, table).isOk());
  Plan plan;
  BufferId z = plan.addParameterBuffer("Z", 2, 3);
  BufferId grad = plan.addArenaBuffer(2, 3);
  SoftmaxXentStep step;
  step.logits = wholeBuffer(plan, z);
  step.labels = {2, 0};
  step.loss = wholeBuffer(plan, grad);
  step.gradient = true;
  plan.steps.push_back(std::move(step));
  plan.outputs.push_back(wholeBuffer(plan, grad));
  planArena(plan);
  Executor executor(params);
  ASSERT_TRUE(executor.validate(plan).isOk());
  Status status = executor.run(plan);
  ASSERT_TRUE(status.isOk()) << status.message();
  for (int64_t r = 0; r < 2; ++r) {
    const float *zr = table.data() + 3 * r;
    double top = std::max({double(zr[0]), double(zr[1]), double(zr[2])});
    double sum = 0;
    for (int c = 0; c < 3; ++c)
      sum += std::exp(double(zr[c]) - top);
    const float *got = executor.rowPointer(plan, grad, r);
    double total = 0;
    for (int c = 0; c < 3; ++c) {
      double want = std::exp(double(zr[c]) - top) / sum -
                    (c == std::vector<int64_t>{2, 0}[r] ? 1.0 : 0.0);
      EXPECT_NEAR(got[c], want, 1e-7) << "row " << r << " class " << c;
      total += got[c];
    }
    EXPECT_NEAR(total, 0.0, 1e-6);
  }
  EXPECT_EQ(executor.loss(plan), 0.0);

  // A gradient region must be as wide as the logits.
  plan.steps[0].softmaxXent().loss.cols = 1;
  Status bad = executor.validate(plan);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("gradient is [2 x 1] for [2 x 3] logits"),
            std::string::npos)
      << bad.message();
}
