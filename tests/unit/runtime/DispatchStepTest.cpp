//===- DispatchStepTest.cpp - Mixture-of-experts steps vs a naive loop ----===//
#include "RuntimeTestUtils.h"
#include "dynb/Runtime/Executor.h"
#include "dynb/Runtime/GemmCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

void reluKernel(void **args) {
  auto &in = **static_cast<MemRefDesc2D **>(args[0]);
  auto &out = **static_cast<MemRefDesc2D **>(args[1]);
  for (int64_t r = 0; r < in.sizes[0]; ++r)
    for (int64_t c = 0; c < in.sizes[1]; ++c) {
      float v = in.aligned[in.offset + r * in.strides[0] + c];
      out.aligned[out.offset + r * out.strides[0] + c] = v > 0 ? v : 0;
    }
}

void copyKernel(void **args) {
  auto &in = **static_cast<MemRefDesc2D **>(args[0]);
  auto &out = **static_cast<MemRefDesc2D **>(args[1]);
  for (int64_t r = 0; r < in.sizes[0]; ++r)
    for (int64_t c = 0; c < in.sizes[1]; ++c)
      out.aligned[out.offset + r * out.strides[0] + c] =
          in.aligned[in.offset + r * in.strides[0] + c];
}

struct Moe {
  int64_t tokens, experts, k, d, hidden, outCols;
  /// The body starts with a kernel copying the routed input (so the runtime
  /// must gather it) and ends with one copying the result into routedOut (so
  /// no GEMM may write out directly).
  bool kernelsAtEnds = false;
};

/// Expert e on one row, in double: W2[e] relu(W1[e] x + b1[e]) + b2[e].
std::vector<double> naiveExpert(const ParameterStore &p, const Moe &m,
                                int64_t e, const float *x) {
  const float *w1 = p.find("W1")->data.data() + e * m.hidden * m.d;
  const float *b1 = p.find("b1")->data.data() + e * m.hidden;
  const float *w2 = p.find("W2")->data.data() + e * m.outCols * m.hidden;
  const float *b2 = p.find("b2")->data.data() + e * m.outCols;
  std::vector<double> h(m.hidden), y(m.outCols);
  for (int64_t i = 0; i < m.hidden; ++i) {
    double acc = b1[i];
    for (int64_t j = 0; j < m.d; ++j)
      acc += double(w1[i * m.d + j]) * x[j];
    h[i] = std::max(acc, 0.0);
  }
  for (int64_t i = 0; i < m.outCols; ++i) {
    double acc = b2[i];
    for (int64_t j = 0; j < m.hidden; ++j)
      acc += double(w2[i * m.hidden + j]) * h[j];
    y[i] = acc;
  }
  return y;
}

void checkDispatch(const Moe &m, uint32_t seed, ExecutorOptions options = {},
                   int64_t *packedBytes = nullptr,
                   ExecutorStats *statsAfter = nullptr) {
  SCOPED_TRACE(testing::Message()
               << m.tokens << " tokens, top " << m.k << " of " << m.experts
               << ", body " << int(options.dispatchBody) << ", tiles of "
               << options.dispatchTileMaxRows);
  ParameterStore params;
  auto add = [&](const char *name, std::vector<int64_t> shape, uint32_t s) {
    int64_t n = 1;
    for (int64_t dim : shape)
      n *= dim;
    ASSERT_TRUE(params.add(name, shape, randomValues(n, s)).isOk());
  };
  add("X", {m.tokens, m.d}, seed);
  add("W_gate", {m.experts, m.d}, seed + 1);
  add("W1", {m.experts, m.hidden, m.d}, seed + 2);
  add("b1", {m.experts, m.hidden}, seed + 3);
  add("W2", {m.experts, m.outCols, m.hidden}, seed + 4);
  add("b2", {m.experts, m.outCols}, seed + 5);

  Plan plan;
  const int64_t routed = m.tokens * m.k;
  BufferId xParam = plan.addParameterBuffer("X", m.tokens, m.d);
  BufferId x = plan.addArenaBuffer(m.tokens, m.d);
  std::vector<RowRef> rows;
  for (int64_t t = 0; t < m.tokens; ++t)
    rows.push_back({xParam, t});
  plan.steps.push_back(gatherStep(wholeBuffer(plan, x), 0, rows));

  Step step{DispatchStep{}};
  DispatchStep &d = step.dispatch();
  d.x = wholeBuffer(plan, x);
  d.gateWeight = plan.addParameterBuffer("W_gate", m.experts, m.d);
  d.experts = m.experts;
  d.topK = m.k;
  d.logits = plan.addArenaBuffer(m.tokens, m.experts);
  d.routedIn = wholeBuffer(plan, plan.addArenaBuffer(routed, m.d));
  Region h = wholeBuffer(plan, plan.addArenaBuffer(routed, m.hidden));
  Region r = wholeBuffer(plan, plan.addArenaBuffer(routed, m.hidden));
  d.routedOut = wholeBuffer(plan, plan.addArenaBuffer(routed, m.outCols));
  Region in = d.routedIn, y = d.routedOut;
  if (m.kernelsAtEnds) {
    in = wholeBuffer(plan, plan.addArenaBuffer(routed, m.d));
    y = wholeBuffer(plan, plan.addArenaBuffer(routed, m.outCols));
    d.body.push_back(kernelStep(copyKernel, "copy", routed, {d.routedIn, in}));
  }
  d.body.push_back(
      gemmStep(in, plan.addParameterBuffer("W1", m.experts * m.hidden, m.d),
               plan.addParameterBuffer("b1", m.experts, m.hidden), h));
  d.body.push_back(kernelStep(reluKernel, "relu", routed, {h, r}));
  d.body.push_back(gemmStep(
      r, plan.addParameterBuffer("W2", m.experts * m.outCols, m.hidden),
      plan.addParameterBuffer("b2", m.experts, m.outCols), y));
  if (m.kernelsAtEnds)
    d.body.push_back(kernelStep(copyKernel, "copy", routed, {y, d.routedOut}));
  d.out = wholeBuffer(plan, plan.addArenaBuffer(m.tokens, m.outCols));
  plan.outputs.push_back(d.out);
  plan.steps.push_back(std::move(step));
  planArena(plan);

  Executor executor(params, options);
  Status status = executor.validate(plan);
  ASSERT_TRUE(status.isOk()) << status.message();
  // Twice: the second run reuses the routing buffers and cached primitives.
  for (int pass = 0; pass < 2; ++pass) {
    status = executor.run(plan);
    ASSERT_TRUE(status.isOk()) << status.message();
  }
  // What the executor packed is what the memory check counts.
  EXPECT_EQ(executor.stats().dispatchPackedWeightBytes,
            dispatchPackedWeightBytes({plan}, options));
  if (packedBytes)
    *packedBytes = executor.stats().dispatchPackedWeightBytes;
  if (statsAfter)
    *statsAfter = executor.stats();
  std::vector<float> got;
  executor.copyOutput(plan, 0, got);
  ASSERT_EQ(got.size(), size_t(m.tokens * m.outCols));

  const float *xs = params.find("X")->data.data();
  const float *gate = params.find("W_gate")->data.data();
  for (int64_t t = 0; t < m.tokens; ++t) {
    const float *row = xs + t * m.d;
    std::vector<double> logits(m.experts);
    for (int64_t e = 0; e < m.experts; ++e)
      for (int64_t j = 0; j < m.d; ++j)
        logits[e] += double(gate[e * m.d + j]) * row[j];
    std::vector<int64_t> order(m.experts);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return logits[a] > logits[b];
    });
    double sum = 0;
    for (int64_t j = 0; j < m.k; ++j)
      sum += std::exp(logits[order[j]] - logits[order[0]]);
    std::vector<double> want(m.outCols);
    for (int64_t j = 0; j < m.k; ++j) {
      double w = std::exp(logits[order[j]] - logits[order[0]]) / sum;
      std::vector<double> y = naiveExpert(params, m, order[j], row);
      for (int64_t i = 0; i < m.outCols; ++i)
        want[i] += w * y[i];
    }
    for (int64_t i = 0; i < m.outCols; ++i)
      ASSERT_NEAR(got[t * m.outCols + i], want[i], 1e-4)
          << "token " << t << " column " << i;
  }
}

TEST(DispatchStepTest, MatchesNaiveLoop) {
  checkDispatch({37, 5, 2, 6, 8, 3}, 1);
  checkDispatch({1, 4, 3, 5, 7, 5}, 2);      // one token: 'none''s shape
  checkDispatch({20, 1, 1, 4, 4, 4}, 3);     // one expert gets everything
  checkDispatch({9, 300, 4, 8, 8, 8}, 4);    // most experts empty
  checkDispatch({200, 8, 8, 16, 32, 16}, 5); // k = E: every expert, every row
}

TEST(DispatchStepTest, TopOneInTokenOrderSkipsTheCopies) {
  // One expert, top 1: the expert order is the token order, so the GEMMs
  // read x and write out in place (direct routing); 300 rows run as GEMM
  // blocks of 296 + 4 rows. The same with kernels on the routed buffers
  // (they need the copies), and several experts (not in token order).
  checkDispatch({300, 1, 1, 8, 16, 8}, 6);
  checkDispatch({300, 1, 1, 8, 16, 8, true}, 7);
  checkDispatch({1, 1, 1, 8, 16, 8}, 8);
  checkDispatch({64, 3, 1, 8, 16, 5}, 9);
  checkDispatch({64, 3, 1, 8, 16, 5, true}, 10);
  checkDispatch({64, 3, 2, 8, 16, 5, true}, 11);
}

/// Every case above under both ways of running the body, and tiles small
/// enough that experts span several, tiles of row counts GemmCache runs as
/// two blocks among them.
TEST(DispatchStepTest, BodyByStepAndByTilesAgree) {
  const Moe cases[] = {
      {37, 5, 2, 6, 8, 3},        {1, 4, 3, 5, 7, 5},
      {20, 1, 1, 4, 4, 4},        {9, 300, 4, 8, 8, 8},
      {200, 8, 8, 16, 32, 16},    {300, 1, 1, 8, 16, 8, true},
      {64, 3, 1, 8, 16, 5, true}, {64, 3, 2, 8, 16, 5, true},
      {400, 3, 1, 12, 20, 7},     {400, 3, 2, 12, 20, 7, true},
  };
  uint32_t seed = 20;
  for (DispatchBody body : {DispatchBody::ByStep, DispatchBody::ByTiles})
    for (int64_t tileRows : {256, 48, 16})
      for (const Moe &m : cases) {
        ExecutorOptions options;
        options.dispatchBody = body;
        options.dispatchTileMaxRows = tileRows;
        checkDispatch(m, ++seed, options);
      }
}

/// Expert weights packed into oneDNN's layout, none of them (budget 0),
/// only W1 (a budget that W2 does not fit beside), or both.
TEST(DispatchStepTest, PackedWeightBudgets) {
  GemmCache layouts;
  auto stackBytes = [&](int64_t experts, int64_t k, int64_t n) {
    return experts * layouts.packedWeightFloats(k, n) * 4;
  };
  const int64_t w1 = stackBytes(6, 8, 16), w2 = stackBytes(6, 16, 8);
  ASSERT_GT(w1, 0);
  ASSERT_GT(w2, 0);
  for (int64_t budget : {int64_t(0), w1, w1 + w2 - 1, w1 + w2})
    for (DispatchBody body : {DispatchBody::ByStep, DispatchBody::ByTiles}) {
      SCOPED_TRACE(testing::Message() << "budget " << budget);
      ExecutorOptions options;
      options.dispatchBody = body;
      options.dispatchPackedWeightMaxBytes = budget;
      int64_t packed = -1;
      checkDispatch({150, 6, 2, 8, 16, 8}, 70, options, &packed);
      EXPECT_EQ(packed, budget == w1 + w2 ? w1 + w2 : budget ? w1 : 0);
      checkDispatch({150, 1, 1, 8, 16, 8}, 71, options);
    }
}

/// Enough gate work (tokens x experts x d >= 2^20) for the gate GEMM and
/// the scoring to run in 256-row chunks over the threads: 3 chunks, the
/// last one short.
TEST(DispatchStepTest, GateInChunksOverTheThreads) {
  for (int64_t k : {1, 2}) {
    ExecutorOptions options;
    options.numThreads = 2;
    checkDispatch({600, 40, k, 48, 16, 8}, 80 + uint32_t(k), options);
  }
}

/// Tiles over a single thread and over more threads than tiles.
TEST(DispatchStepTest, TilesOnOneAndManyThreads) {
  for (unsigned threads : {1u, 4u}) {
    ExecutorOptions options;
    options.dispatchBody = DispatchBody::ByTiles;
    options.dispatchTileMaxRows = 40;
    options.numThreads = threads;
    checkDispatch({150, 6, 2, 8, 16, 8}, 40 + threads, options);
    checkDispatch({3, 6, 1, 8, 16, 8}, 50 + threads, options);
  }
}

/// Under profiling a dispatch's time splits into its phases, which lie
/// within the step's own time: the combine only with k > 1, where it runs.
TEST(DispatchStepTest, ProfileSplitsThePhases) {
  for (int64_t k : {1, 2}) {
    ExecutorOptions options;
    options.profile = true;
    ExecutorStats stats;
    checkDispatch({300, 8, k, 16, 32, 16}, 90 + uint32_t(k), options, nullptr,
                  &stats);
    EXPECT_GT(stats.dispatchGateSeconds, 0);
    EXPECT_GT(stats.dispatchExpertSeconds, 0);
    if (k == 1)
      EXPECT_EQ(stats.dispatchCombineSeconds, 0);
    else
      EXPECT_GT(stats.dispatchCombineSeconds, 0);
    EXPECT_LE(stats.dispatchGateSeconds + stats.dispatchExpertSeconds +
                  stats.dispatchCombineSeconds,
              stats.dispatchSeconds);
  }
  // Without profiling nothing is timed.
  ExecutorStats quiet;
  checkDispatch({300, 8, 2, 16, 32, 16}, 93, {}, nullptr, &quiet);
  EXPECT_EQ(quiet.dispatchSeconds, 0);
  EXPECT_EQ(quiet.dispatchGateSeconds + quiet.dispatchExpertSeconds +
                quiet.dispatchCombineSeconds,
            0);
}

TEST(DispatchStepTest, ValidationRejectsMismatchedStacks) {
  ParameterStore params;
  ASSERT_TRUE(params.add("G", {3, 4}, randomValues(12, 1)).isOk());
  ASSERT_TRUE(params.add("W", {3, 5, 4}, randomValues(60, 2)).isOk());
  Plan plan;
  BufferId x = plan.addArenaBuffer(2, 4);
  Step step{DispatchStep{}};
  DispatchStep &d = step.dispatch();
  d.x = wholeBuffer(plan, x);
  d.gateWeight = plan.addParameterBuffer("G", 3, 4);
  d.experts = 3;
  d.topK = 1;
  d.logits = plan.addArenaBuffer(2, 3);
  d.routedIn = wholeBuffer(plan, plan.addArenaBuffer(2, 4));
  d.routedOut = wholeBuffer(plan, plan.addArenaBuffer(2, 5));
  // The weight buffer claims 2 experts' rows of a 3-expert stack.
  d.body.push_back(
      gemmStep(d.routedIn, plan.addParameterBuffer("W", 10, 6), d.routedOut));
  d.out = wholeBuffer(plan, plan.addArenaBuffer(2, 5));
  plan.steps.push_back(std::move(step));
  planArena(plan);
  Executor executor(params);
  Status status = executor.validate(plan);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("step 0 (dispatch)"), std::string::npos)
      << status.message();
}

} // namespace
