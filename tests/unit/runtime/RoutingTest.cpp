//===- RoutingTest.cpp - Top-k gating and the counting sort by expert -----===//
#include "dynb/Runtime/Routing.h"
#include "dynb/Runtime/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace dynb::rt;

namespace {

/// Checks the invariants every routing must keep: each token's k choices
/// are distinct experts in descending logit order (ties: lower index), the
/// weights are the softmax of the kept logits, and the expert order is a
/// stable grouping whose offsets, slots and tokens agree.
void checkRouting(const std::vector<float> &logits, int64_t tokens,
                  int64_t experts, int64_t k, const Routing &r) {
  ASSERT_EQ(r.offsets.size(), size_t(experts + 1));
  EXPECT_EQ(r.offsets.front(), 0);
  EXPECT_EQ(r.offsets.back(), tokens * k);
  for (int64_t t = 0; t < tokens; ++t) {
    const float *row = logits.data() + t * experts;
    double sum = 0;
    for (int64_t j = 0; j < k; ++j)
      sum += std::exp(double(row[r.expertOf[t * k + j]]) -
                      double(row[r.expertOf[t * k]]));
    for (int64_t j = 0; j < k; ++j) {
      int32_t e = r.expertOf[t * k + j];
      // No expert outside the kept ones beats the j-th choice.
      int64_t better = 0;
      for (int64_t f = 0; f < experts; ++f)
        better += row[f] > row[e] || (row[f] == row[e] && f < e);
      EXPECT_EQ(better, j) << "token " << t << " choice " << j;
      double want =
          std::exp(double(row[e]) - double(row[r.expertOf[t * k]])) / sum;
      EXPECT_NEAR(r.gateOf[t * k + j], want, 1e-6);
      int32_t s = r.slotOf[t * k + j];
      EXPECT_EQ(r.tokenAt[s], t);
      EXPECT_GE(s, r.offsets[e]);
      EXPECT_LT(s, r.offsets[e + 1]);
    }
  }
  // Stable: tokens ascend within each expert's rows.
  std::vector<int32_t> used;
  for (int64_t e = 0; e < experts; ++e) {
    if (r.rowsOf(e) > 0)
      used.push_back(e);
    for (int64_t s = r.offsets[e] + 1; s < r.offsets[e + 1]; ++s)
      EXPECT_LT(r.tokenAt[s - 1], r.tokenAt[s]);
  }
  EXPECT_EQ(r.usedExperts, used);
}

TEST(RoutingTest, TiesGoToTheLowerExpert) {
  // Token 0: experts 1 and 3 tie for first; token 1: all four tie.
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 0, 0, 0, 0};
  Routing r;
  routeTopK(logits.data(), 4, 2, 4, 2, r, nullptr);
  checkRouting(logits, 2, 4, 2, r);
  EXPECT_EQ(r.expertOf, (std::vector<int32_t>{1, 3, 0, 1}));
  EXPECT_FLOAT_EQ(r.gateOf[0], 0.5f);
  EXPECT_FLOAT_EQ(r.gateOf[3], 0.5f);
  // Experts 2 is empty; expert 1 holds tokens 0 and 1, in that order.
  EXPECT_EQ(r.usedExperts, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(r.offsets, (std::vector<int64_t>{0, 1, 3, 3, 4}));
  EXPECT_EQ(r.tokenAt, (std::vector<int32_t>{1, 0, 1, 0}));
}

TEST(RoutingTest, OneExpertTakesEveryToken) {
  constexpr int64_t tokens = 50, experts = 9;
  std::vector<float> logits(tokens * experts, -3.0f);
  for (int64_t t = 0; t < tokens; ++t)
    logits[t * experts + 6] = 1.0f + t;
  Routing r;
  routeTopK(logits.data(), experts, tokens, experts, 1, r, nullptr);
  checkRouting(logits, tokens, experts, 1, r);
  EXPECT_EQ(r.usedExperts, std::vector<int32_t>{6});
  EXPECT_EQ(r.rowsOf(6), tokens);
  for (int64_t t = 0; t < tokens; ++t)
    EXPECT_EQ(r.gateOf[t], 1.0f);
}

TEST(RoutingTest, KEqualsExperts) {
  std::vector<float> logits = {3, 1, 2, -1, -2, -3};
  Routing r;
  routeTopK(logits.data(), 3, 2, 3, 3, r, nullptr);
  checkRouting(logits, 2, 3, 3, r);
  EXPECT_EQ(r.expertOf, (std::vector<int32_t>{0, 2, 1, 0, 1, 2}));
}

TEST(RoutingTest, RandomShapesAndReuse) {
  // One Routing reused across shapes, serial and on the pool: buffers that
  // only grow must not leak an earlier call's state.
  ThreadPool pool;
  Routing r;
  std::mt19937 generator(11);
  for (auto [tokens, experts, k] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
        {300, 1000, 4},
        {7, 3, 2},
        {2000, 600, 1},
        {5, 1000, 1}}) {
    std::uniform_int_distribution<int> level(-3, 3);
    std::vector<float> logits(tokens * experts);
    for (float &v : logits)
      v = level(generator) * 0.5f; // coarse levels: many ties
    routeTopK(logits.data(), experts, tokens, experts, k, r, &pool);
    SCOPED_TRACE(testing::Message()
                 << tokens << " x " << experts << " top " << k);
    checkRouting(logits, tokens, experts, k, r);
  }
}

/// Top 1 takes a vectorised arg-max: it must pick what the scan of the
/// general case picks (the first strictly larger value wins; a NaN never
/// does, unless it comes first) on rows of every length around its 16-lane
/// blocks, with signed zeros, infinities and NaNs anywhere.
TEST(RoutingTest, TopOneMatchesTheScanOnSpecialValues) {
  const float inf = INFINITY, nan = NAN;
  const float values[] = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan, 2.0f};
  std::mt19937 generator(5);
  std::uniform_int_distribution<int> pick(0, 7);
  Routing r;
  for (int64_t experts = 1; experts <= 40; ++experts)
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<float> row(experts);
      for (float &v : row)
        v = values[pick(generator)];
      routeTopK(row.data(), experts, 1, experts, 1, r, nullptr);
      int32_t want = 0;
      for (int64_t e = 1; e < experts; ++e)
        if (row[e] > row[want])
          want = int32_t(e);
      ASSERT_EQ(r.expertOf[0], want) << experts << " experts, trial " << trial;
      float top = row[want], weight = std::exp(top - top);
      if (std::isnan(weight / weight))
        EXPECT_TRUE(std::isnan(r.gateOf[0]));
      else
        EXPECT_EQ(r.gateOf[0], 1.0f);
    }
}

TEST(RoutingTest, NoiseIsAFunctionOfSeedRowAndExpert) {
  std::vector<float> row = {0.25f, -1.5f, 3.0f};
  uint64_t key = gatingNoiseKey(5, row.data(), 3);
  EXPECT_EQ(gatingNoise(key, 2),
            gatingNoise(gatingNoiseKey(5, row.data(), 3), 2));
  EXPECT_NE(gatingNoise(key, 2), gatingNoise(key, 3));
  EXPECT_NE(key, gatingNoiseKey(6, row.data(), 3));
  // Roughly standard normal over many draws.
  double sum = 0, squares = 0;
  constexpr int kDraws = 20000;
  for (int e = 0; e < kDraws; ++e) {
    double v = gatingNoise(key, e);
    sum += v;
    squares += v * v;
  }
  EXPECT_NEAR(sum / kDraws, 0.0, 0.05);
  EXPECT_NEAR(squares / kDraws, 1.0, 0.05);
  EXPECT_NEAR(softplus(0.0f), std::log(2.0f), 1e-6);
  EXPECT_FLOAT_EQ(softplus(100.0f), 100.0f);
  EXPECT_GE(softplus(-100.0f), 0.0f);
}

} // namespace
