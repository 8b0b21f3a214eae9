//===- ParamGradStepTest.cpp - Parameter-gradient and fill steps ----------===//
#include "RuntimeTestUtils.h"
#include "dynb/Runtime/Executor.h"

#include <gtest/gtest.h>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

/// dy [m x n] and x [m x k] looked up from parameters, then a linear's
/// gradient step into W [n x k] and b [n], and a rows step into E.
struct GradPlan {
  int64_t m, n, k;
  ParameterStore params, grads;
  Plan plan;
  std::vector<float> dy, x;

  GradPlan(int64_t m, int64_t n, int64_t k, std::vector<int64_t> rows = {})
      : m(m), n(n), k(k), dy(randomValues(size_t(m * n), 1)),
        x(randomValues(size_t(m * k), 2)) {
    EXPECT_TRUE(params.add("DY", {m, n}, dy).isOk());
    EXPECT_TRUE(params.add("X", {m, k}, x).isOk());
    EXPECT_TRUE(params.add("W", {n, k}, std::vector<float>(n * k)).isOk());
    EXPECT_TRUE(params.add("b", {n}, std::vector<float>(n)).isOk());
    EXPECT_TRUE(params.add("E", {6, n}, std::vector<float>(6 * n)).isOk());
    for (const char *name : {"W", "b", "E"})
      EXPECT_TRUE(
          grads
              .add(name, params.find(name)->shape,
                   std::vector<float>(params.find(name)->data.size(), 0.5f))
              .isOk());
    BufferId dyBuf = plan.addParameterBuffer("DY", m, n);
    BufferId xBuf = plan.addParameterBuffer("X", m, k);
    ParamGradStep lin;
    lin.op = ParamGradStep::Op::Linear;
    lin.dy = wholeBuffer(plan, dyBuf);
    lin.x = wholeBuffer(plan, xBuf);
    lin.weightGrad = plan.addGradientBuffer("W", n, k);
    lin.hasBias = true;
    lin.biasGrad = plan.addGradientBuffer("b", 1, n);
    plan.steps.push_back(std::move(lin));
    if (!rows.empty()) {
      ParamGradStep scatter;
      scatter.op = ParamGradStep::Op::Rows;
      scatter.dy = wholeBuffer(plan, dyBuf);
      scatter.weightGrad = plan.addGradientBuffer("E", 6, n);
      scatter.rows = std::move(rows);
      plan.steps.push_back(std::move(scatter));
    }
    planArena(plan);
  }
};

/// W's and b's gradients after one run from 0.5 everywhere: 0.5 + dyᵀ x
/// and 0.5 + the column sums of dy, in double.
void expectLinearGradients(const GradPlan &gp) {
  const std::vector<float> &w = gp.grads.find("W")->data;
  const std::vector<float> &b = gp.grads.find("b")->data;
  for (int64_t r = 0; r < gp.n; ++r) {
    double bsum = 0.5;
    for (int64_t i = 0; i < gp.m; ++i)
      bsum += gp.dy[i * gp.n + r];
    EXPECT_NEAR(b[r], bsum, 1e-4);
    for (int64_t c = 0; c < gp.k; ++c) {
      double want = 0.5;
      for (int64_t i = 0; i < gp.m; ++i)
        want += double(gp.dy[i * gp.n + r]) * gp.x[i * gp.k + c];
      ASSERT_NEAR(w[r * gp.k + c], want, 1e-4) << r << "," << c;
    }
  }
}

} // namespace

TEST(ParamGradStep, AddsDyTransposeXAndColumnSumsToTheGradients) {
  GradPlan gp(37, 5, 9, {4, 0, 4});
  // Three rows of dy for three table rows: only the first three rows of
  // dy are scattered.
  gp.plan.steps[1].paramGrad().dy.rows = 3;
  Executor executor(gp.params);
  executor.setGradients(&gp.grads);
  Status v = executor.validate(gp.plan);
  ASSERT_TRUE(v.isOk()) << v.message();
  ASSERT_TRUE(executor.run(gp.plan).isOk());
  expectLinearGradients(gp);
  const std::vector<float> &b = gp.grads.find("b")->data;
  // Table rows 4 (twice, summed) and 0; the others keep their 0.5.
  const std::vector<float> &e = gp.grads.find("E")->data;
  for (int64_t c = 0; c < gp.n; ++c) {
    EXPECT_FLOAT_EQ(e[4 * gp.n + c], 0.5f + gp.dy[c] + gp.dy[2 * gp.n + c]);
    EXPECT_FLOAT_EQ(e[0 * gp.n + c], 0.5f + gp.dy[gp.n + c]);
    for (int64_t row : {1, 2, 3, 5})
      EXPECT_EQ(e[row * gp.n + c], 0.5f);
  }
  // A second run adds again: gradients of plans run in turn sum.
  float once = b[0];
  ASSERT_TRUE(executor.run(gp.plan).isOk());
  EXPECT_NEAR(b[0], 2 * once - 0.5, 1e-4);
}

TEST(ParamGradStep, LargeWeightsTakeTheGemmAndGiveTheSameSums) {
  // 130 weight rows: three chunks of oneDNN GEMMs.
  GradPlan gp(100, 130, 40);
  Executor executor(gp.params);
  executor.setGradients(&gp.grads);
  ASSERT_TRUE(executor.run(gp.plan).isOk());
  expectLinearGradients(gp);
}

TEST(ParamGradStep, SameBitsOnOneAndTwoThreads) {
  // Large enough that the weight rows split across the threads, in GEMM
  // chunks (200 rows) and as the loop (64 rows).
  for (int64_t n : {200, 64}) {
    GradPlan one(300, n, 96), two(300, n, 96);
    ExecutorOptions o1, o2;
    o1.numThreads = 1;
    o2.numThreads = 2;
    o2.kernelParallelMinElements = 1;
    {
      Executor e(one.params, o1);
      e.setGradients(&one.grads);
      ASSERT_TRUE(e.run(one.plan).isOk());
    }
    {
      Executor e(two.params, o2);
      e.setGradients(&two.grads);
      ASSERT_TRUE(e.run(two.plan).isOk());
    }
    EXPECT_EQ(one.grads.find("W")->data, two.grads.find("W")->data);
    EXPECT_EQ(one.grads.find("b")->data, two.grads.find("b")->data);
  }
}

TEST(ParamGradStep, ValidationKeepsGradientsApart) {
  GradPlan gp(4, 3, 2, {0, 1, 2, 6});
  Executor executor(gp.params);
  Status s = executor.validate(gp.plan);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("row 3 names table row 6 of 6"), std::string::npos)
      << s.message();
  gp.plan.steps[1].paramGrad().rows[3] = 5;
  EXPECT_TRUE(executor.validate(gp.plan).isOk());

  // The weight gradient must be a gradient buffer of the weight's shape.
  Plan bad = gp.plan;
  bad.steps[0].paramGrad().weightGrad = 0; // DY, a parameter
  s = executor.validate(bad);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("is not a gradient buffer"), std::string::npos)
      << s.message();
  bad = gp.plan;
  bad.buffers[bad.steps[0].paramGrad().weightGrad].cols = 3;
  s = executor.validate(bad);
  ASSERT_FALSE(s.isOk());

  // No other step may write a gradient.
  bad = gp.plan;
  bad.steps.push_back(
      FillStep{wholeBuffer(bad, bad.steps[0].paramGrad().weightGrad)});
  s = executor.validate(bad);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("writes gradient buffer"), std::string::npos)
      << s.message();

  // Running a plan with gradients needs a store for them.
  Status run = executor.run(gp.plan);
  ASSERT_FALSE(run.isOk());
  EXPECT_NE(run.message().find("no gradient store holds"), std::string::npos)
      << run.message();
}

TEST(FillStep, WritesZerosToItsRegionOnly) {
  ParameterStore params;
  ASSERT_TRUE(params.add("P", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}).isOk());
  Plan plan;
  BufferId p = plan.addParameterBuffer("P", 2, 4);
  BufferId a = plan.addArenaBuffer(2, 4);
  plan.steps.push_back(gatherStep(wholeBuffer(plan, a), 0, {{p, 0}, {p, 1}}));
  plan.steps.push_back(FillStep{Region{a, 1, 1, 1, 2}});
  plan.outputs.push_back(wholeBuffer(plan, a));
  planArena(plan);
  Executor executor(params);
  ASSERT_TRUE(executor.validate(plan).isOk());
  ASSERT_TRUE(executor.run(plan).isOk());
  std::vector<float> out;
  executor.copyOutput(plan, 0, out);
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4, 5, 0, 0, 8}));
}
