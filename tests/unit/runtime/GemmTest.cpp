//===- GemmTest.cpp - oneDNN and small-loop GEMMs vs a naive one ----------===//
#include "RuntimeTestUtils.h"
#include "dynb/Runtime/Executor.h"
#include "dynb/Runtime/GemmCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

struct GemmShape {
  int64_t m, k, n;
};

const GemmShape kShapes[] = {{1, 1, 1},     {1, 7, 3},     {3, 5, 2},
                             {1, 300, 200}, {5, 1, 9},     {17, 33, 9},
                             {64, 128, 32}, {129, 65, 31}, {2, 1000, 3}};

constexpr float kSentinel = 12345.0f;

/// Runs one GEMM with windows inside wider A and C matrices and checks the
/// window against the reference and everything around it for sentinels.
void checkGemm(GemmCache &cache, GemmShape shape, bool withBias,
               int64_t extraLda, int64_t extraLdc, uint32_t seed) {
  SCOPED_TRACE(testing::Message()
               << "m=" << shape.m << " k=" << shape.k << " n=" << shape.n
               << " bias=" << withBias << " lda=k+" << extraLda << " ldc=n+"
               << extraLdc);
  int64_t lda = shape.k + extraLda, ldc = shape.n + extraLdc;
  std::vector<float> a = randomValues(shape.m * lda, seed);
  std::vector<float> w = randomValues(shape.n * shape.k, seed + 1);
  std::vector<float> bias = randomValues(shape.n, seed + 2);
  std::vector<float> c(shape.m * ldc, kSentinel);
  std::vector<float> expected(shape.m * ldc, kSentinel);

  GemmArgs args;
  args.m = shape.m;
  args.k = shape.k;
  args.n = shape.n;
  args.a = a.data();
  args.lda = lda;
  args.w = w.data();
  args.bias = withBias ? bias.data() : nullptr;
  args.c = c.data();
  args.ldc = ldc;
  Status status = cache.run(args);
  ASSERT_TRUE(status.isOk()) << status.message();
  referenceGemm(shape.m, shape.k, shape.n, a.data(), lda, w.data(), args.bias,
                expected.data(), ldc);
  float tolerance = 1e-5f * static_cast<float>(shape.k + 1);
  for (int64_t i = 0; i < shape.m; ++i)
    for (int64_t j = 0; j < ldc; ++j)
      ASSERT_NEAR(c[i * ldc + j], expected[i * ldc + j], tolerance)
          << "at (" << i << ", " << j << ")";
}

void checkAllShapes(GemmCache &cache) {
  uint32_t seed = 1;
  for (GemmShape shape : kShapes)
    for (bool withBias : {false, true})
      for (int64_t extra : {0, 3}) {
        checkGemm(cache, shape, withBias, extra, extra * 2 + 1, seed += 3);
        if (testing::Test::HasFatalFailure())
          return;
      }
}

} // namespace

TEST(GemmTest, OneDnnMatchesReference) {
  GemmCache cache(GemmCacheOptions{/*smallProblemMaxMacs=*/0});
  checkAllShapes(cache);
  EXPECT_GT(cache.primitivesCreated(), 0u);
}

TEST(GemmTest, SmallProblemLoopMatchesReference) {
  GemmCache cache(GemmCacheOptions{/*smallProblemMaxMacs=*/INT64_MAX});
  checkAllShapes(cache);
  EXPECT_EQ(cache.primitivesCreated(), 0u);
}

TEST(GemmTest, DefaultThresholdMatchesReference) {
  GemmCache cache;
  checkAllShapes(cache);
}

// c = a * w with w [k x n] as stored (a linear's input adjoint, dy W): every
// shape, with windows, in oneDNN and in the small-problem loop, against a
// naive product in double; the window's surroundings keep their sentinels.
TEST(GemmTest, WeightAsStoredMatchesReference) {
  for (int64_t smallMax : {int64_t(0), INT64_MAX}) {
    GemmCache cache(GemmCacheOptions{smallMax});
    uint32_t seed = 100;
    for (GemmShape shape : kShapes)
      for (int64_t extra : {0, 3}) {
        SCOPED_TRACE(testing::Message()
                     << "m=" << shape.m << " k=" << shape.k << " n=" << shape.n
                     << " extra=" << extra << " small-loop max=" << smallMax);
        int64_t lda = shape.k + extra, ldc = shape.n + 2 * extra + 1;
        std::vector<float> a = randomValues(shape.m * lda, seed += 3);
        std::vector<float> w = randomValues(shape.k * shape.n, seed + 1);
        std::vector<float> c(shape.m * ldc, kSentinel);
        GemmArgs args;
        args.m = shape.m;
        args.k = shape.k;
        args.n = shape.n;
        args.a = a.data();
        args.lda = lda;
        args.w = w.data();
        args.c = c.data();
        args.ldc = ldc;
        args.weightAsStored = true;
        Status status = cache.run(args);
        ASSERT_TRUE(status.isOk()) << status.message();
        float tolerance = 1e-5f * static_cast<float>(shape.k + 1);
        for (int64_t i = 0; i < shape.m; ++i)
          for (int64_t j = 0; j < ldc; ++j) {
            double expected = kSentinel;
            if (j < shape.n) {
              expected = 0;
              for (int64_t p = 0; p < shape.k; ++p)
                expected += double(a[i * lda + p]) * double(w[p * shape.n + j]);
            }
            ASSERT_NEAR(c[i * ldc + j], expected, tolerance)
                << "at (" << i << ", " << j << ")";
          }
      }
    EXPECT_EQ(cache.primitivesCreated() > 0, smallMax == 0);
  }
}

TEST(GemmTest, WeightAsStoredRefusesABias) {
  GemmCache cache;
  std::vector<float> buffer(64);
  GemmArgs args;
  args.m = 2;
  args.k = 4;
  args.n = 4;
  args.a = args.w = args.bias = buffer.data();
  args.c = buffer.data() + 32;
  args.lda = args.ldc = 4;
  args.weightAsStored = true;
  Status status = cache.run(args);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("takes no bias"), std::string::npos)
      << status.message();
}

TEST(GemmTest, ZeroInnerDimensionWritesBiasOrZero) {
  GemmCache cache(GemmCacheOptions{0});
  checkGemm(cache, {3, 0, 4}, /*withBias=*/true, 0, 1, 7);
  checkGemm(cache, {3, 0, 4}, /*withBias=*/false, 0, 1, 8);
  EXPECT_EQ(cache.primitivesCreated(), 0u);
}

TEST(GemmTest, RejectsInconsistentLeadingDimensions) {
  GemmCache cache;
  std::vector<float> buffer(64);
  GemmArgs args;
  args.m = 2;
  args.k = 4;
  args.n = 4;
  args.a = args.w = buffer.data();
  args.c = buffer.data();
  args.lda = 3; // less than k
  args.ldc = 4;
  Status status = cache.run(args);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("lda=3"), std::string::npos)
      << status.message();
}

TEST(GemmTest, PrimitivesAreCachedByShapeAndLayout) {
  GemmCacheOptions opts{0};
  opts.fixedMaxM = 0; // every m through the runtime-M primitives
  opts.blockBits = 0;
  GemmCache cache(opts);
  for (int i = 0; i < 3; ++i)
    checkGemm(cache, {4, 16, 8}, false, 0, 0, 11 + i);
  EXPECT_EQ(cache.primitivesCreated(), 1u);
  checkGemm(cache, {4, 16, 8}, true, 0, 0, 20); // bias is part of the key
  EXPECT_EQ(cache.primitivesCreated(), 2u);
  checkGemm(cache, {4, 16, 8}, true, 1, 0, 21); // so is lda
  EXPECT_EQ(cache.primitivesCreated(), 3u);
  checkGemm(cache, {4, 16, 8}, true, 1, 2, 22); // and ldc
  EXPECT_EQ(cache.primitivesCreated(), 4u);
  // m is not: the primitives take it at execution time, so the cache does
  // not grow with the batch sizes a schedule produces.
  for (int64_t m : {5, 1, 300, 4, 77})
    checkGemm(cache, {m, 16, 8}, true, 1, 2, 23 + int(m));
  EXPECT_EQ(cache.primitivesCreated(), 4u);
  checkGemm(cache, {4, 16, 8}, false, 0, 0, 24);
  EXPECT_EQ(cache.primitivesCreated(), 4u);
  EXPECT_EQ(cache.size(), 4u);
}

TEST(GemmTest, LargeMRunsInBlocksOfBoundedSizes) {
  GemmCacheOptions opts{0};
  opts.fixedMaxM = 8;
  opts.blockBits = 2; // blocks of 2^e and 3 * 2^(e-1) rows above 8
  GemmCache cache(opts);
  for (int64_t m = 1; m <= 200; m += 3)
    checkGemm(cache, {m, 16, 8}, true, 1, 2, 100 + int(m));
  // m <= 8 exact (8), and 12, 16, 24, 32, 48, 64, 96, 128, 192.
  EXPECT_LE(cache.primitivesCreated(), 17u);
  uint64_t before = cache.primitivesCreated();
  for (int64_t m = 2; m <= 200; m += 3)
    checkGemm(cache, {m, 16, 8}, true, 1, 2, 300 + int(m));
  EXPECT_LE(cache.primitivesCreated(), 17u);
  EXPECT_GE(cache.primitivesCreated(), before);
  checkGemm(cache, {1000, 16, 8}, false, 3, 0, 7); // 768 + 192 + 32 + 8
}

TEST(GemmTest, SmallMGetsItsOwnPrimitiveLargeMShareOne) {
  GemmCacheOptions opts{0};
  opts.fixedMaxM = 8;
  opts.blockBits = 0;
  GemmCache cache(opts);
  checkGemm(cache, {4, 16, 8}, true, 0, 0, 1);
  checkGemm(cache, {4, 16, 8}, true, 0, 0, 2);
  EXPECT_EQ(cache.primitivesCreated(), 1u);
  checkGemm(cache, {8, 16, 8}, true, 0, 0, 3);
  EXPECT_EQ(cache.primitivesCreated(), 2u);
  for (int64_t m : {9, 300, 9, 1000, 17})
    checkGemm(cache, {m, 16, 8}, true, 0, 0, 4 + int(m));
  EXPECT_EQ(cache.primitivesCreated(), 3u);
  checkGemm(cache, {4, 16, 8}, true, 0, 0, 5);
  EXPECT_EQ(cache.primitivesCreated(), 3u);
  EXPECT_EQ(cache.size(), 3u);
}

TEST(GemmTest, FusedReluMatchesGemmThenRelu) {
  // oneDNN (threshold 0) and the small loop (default threshold), with and
  // without bias, M alternating so the runtime-M memory objects are rebound.
  for (int64_t smallMax : {int64_t(0), int64_t(1) << 40}) {
    GemmCacheOptions opts{smallMax};
    opts.fixedMaxM = 64; // 3, 64 and 1 exact
    opts.blockBits = 0;  // 200 and 300 through one runtime-M primitive
    GemmCache cache(opts);
    for (bool withBias : {false, true})
      for (int64_t m : {3, 200, 64, 300, 3, 1}) {
        SCOPED_TRACE(testing::Message() << "small=" << smallMax << " m=" << m
                                        << " bias=" << withBias);
        const int64_t k = 37, n = 29, lda = k + 3, ldc = n + 2;
        std::vector<float> a = randomValues(m * lda, 7);
        std::vector<float> w = randomValues(n * k, 8);
        std::vector<float> bias = randomValues(n, 9);
        std::vector<float> c(m * ldc, kSentinel), expected(m * ldc, kSentinel);
        GemmArgs args;
        args.m = m;
        args.k = k;
        args.n = n;
        args.a = a.data();
        args.lda = lda;
        args.w = w.data();
        args.bias = withBias ? bias.data() : nullptr;
        args.c = c.data();
        args.ldc = ldc;
        args.relu = true;
        Status status = cache.run(args);
        ASSERT_TRUE(status.isOk()) << status.message();
        referenceGemm(m, k, n, a.data(), lda, w.data(), args.bias,
                      expected.data(), ldc);
        int negatives = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            negatives += expected[i * ldc + j] < 0.0f;
            expected[i * ldc + j] = std::max(expected[i * ldc + j], 0.0f);
          }
        EXPECT_GT(negatives, 0); // the ReLU has something to do
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < ldc; ++j)
            ASSERT_NEAR(c[i * ldc + j], expected[i * ldc + j], 1e-4f)
                << "at (" << i << ", " << j << ")";
      }
    if (smallMax == 0) {
      // With and without bias: m 3, 64 and 1 each, 200 and 300 share one.
      EXPECT_EQ(cache.primitivesCreated(), 8u);
    }
  }
}

TEST(GemmTest, ExecutorGemmStepOnWindowsWithParameters) {
  // a is columns [2, 7) of a [6 x 9] arena buffer, c columns [1, 5) of a
  // [6 x 6] one; both are filled from parameters by gathers first.
  constexpr int64_t m = 6, k = 5, n = 4;
  ParameterStore params;
  std::vector<float> input = randomValues(m * 9, 3);
  std::vector<float> weight = randomValues(n * k, 4);
  std::vector<float> bias = randomValues(n, 5);
  ASSERT_TRUE(params.add("input", {m, 9}, input).isOk());
  ASSERT_TRUE(params.add("w", {n, k}, weight).isOk());
  ASSERT_TRUE(params.add("b", {n}, bias).isOk());
  ASSERT_TRUE(
      params.add("fill", {m, 6}, std::vector<float>(m * 6, kSentinel)).isOk());

  Plan plan;
  BufferId inputParam = plan.addParameterBuffer("input", m, 9);
  BufferId weightParam = plan.addParameterBuffer("w", n, k);
  BufferId biasParam = plan.addParameterBuffer("b", 1, n);
  BufferId fillParam = plan.addParameterBuffer("fill", m, 6);
  BufferId aBuffer = plan.addArenaBuffer(m, 9);
  BufferId cBuffer = plan.addArenaBuffer(m, 6);
  std::vector<RowRef> inputRows, fillRows;
  for (int64_t i = 0; i < m; ++i) {
    inputRows.push_back({inputParam, i});
    fillRows.push_back({fillParam, i});
  }
  plan.steps.push_back(gatherStep(wholeBuffer(plan, aBuffer), 0, inputRows));
  plan.steps.push_back(gatherStep(wholeBuffer(plan, cBuffer), 0, fillRows));
  plan.steps.push_back(gemmStep(Region{aBuffer, 0, m, 2, k}, weightParam,
                                biasParam, Region{cBuffer, 0, m, 1, n}));
  plan.outputs.push_back(wholeBuffer(plan, cBuffer));
  planArena(plan);

  for (int64_t threshold : {int64_t(0), INT64_MAX}) {
    ExecutorOptions opts;
    opts.smallGemmMaxMacs = threshold;
    Executor executor(params, opts);
    Status status = executor.validate(plan);
    ASSERT_TRUE(status.isOk()) << status.message();
    status = executor.run(plan);
    ASSERT_TRUE(status.isOk()) << status.message();
    std::vector<float> out;
    executor.copyOutput(plan, 0, out);
    std::vector<float> expected(m * 6, kSentinel);
    referenceGemm(m, k, n, input.data() + 2, 9, weight.data(), bias.data(),
                  expected.data() + 1, 6);
    ASSERT_EQ(out.size(), expected.size());
    for (size_t i = 0; i < out.size(); ++i)
      EXPECT_NEAR(out[i], expected[i], 1e-5f) << "element " << i;
    EXPECT_EQ(executor.stats().gemmCalls, 1u);
    EXPECT_EQ(executor.stats().gemmPrimitivesCreated, threshold == 0 ? 1u : 0u);
    // A second run reuses the primitive.
    ASSERT_TRUE(executor.run(plan).isOk());
    EXPECT_EQ(executor.stats().gemmCalls, 2u);
    EXPECT_EQ(executor.stats().gemmPrimitivesCreated, threshold == 0 ? 1u : 0u);
  }
}

TEST(GemmTest, ReportsSmallGemmCost) {
  // Not a pass/fail check: prints what one call costs on this machine, the
  // number behind the default smallProblemMaxMacs.
  for (GemmShape shape :
       {GemmShape{1, 16, 16}, GemmShape{4, 32, 32}, GemmShape{2, 64, 64},
        GemmShape{4, 64, 64}, GemmShape{16, 64, 64}, GemmShape{64, 256, 256}}) {
    std::vector<float> a = randomValues(shape.m * shape.k, 1);
    std::vector<float> w = randomValues(shape.n * shape.k, 2);
    std::vector<float> bias = randomValues(shape.n, 3);
    std::vector<float> c(shape.m * shape.n);
    GemmArgs args{shape.m,  shape.k,     shape.n,  a.data(), shape.k,
                  w.data(), bias.data(), c.data(), shape.n};
    double nanos[2];
    for (int path = 0; path < 2; ++path) {
      GemmCache cache(GemmCacheOptions{path == 0 ? 0 : INT64_MAX});
      ASSERT_TRUE(cache.run(args).isOk());
      // Bounded by time, not calls, so a loaded machine cannot stall the
      // suite.
      auto start = std::chrono::steady_clock::now();
      auto deadline = start + std::chrono::milliseconds(100);
      int calls = 0;
      do {
        for (int i = 0; i < 10; ++i, ++calls)
          ASSERT_TRUE(cache.run(args).isOk());
      } while (std::chrono::steady_clock::now() < deadline);
      nanos[path] = std::chrono::duration<double, std::nano>(
                        std::chrono::steady_clock::now() - start)
                        .count() /
                    calls;
    }
    std::printf("gemm m=%lld k=%lld n=%lld (%lld MACs): oneDNN %.0f ns, "
                "loop %.0f ns\n",
                static_cast<long long>(shape.m),
                static_cast<long long>(shape.k),
                static_cast<long long>(shape.n),
                static_cast<long long>(shape.m * shape.k * shape.n), nanos[0],
                nanos[1]);
  }
}

/// Weights packed into oneDNN's layout give the plain weights' result, for
/// exact-m primitives, row blocks, shapes the layout pads (n not a multiple
/// of its blocks) and the small-problem loop (which reads the plain ones).
/// A primitive that prefers another layout (oneDNN's choice can depend on m
/// and the thread count) reads the plain weights; most read the packed.
TEST(GemmTest, PackedWeightsMatchPlainWeights) {
  GemmCache cache;
  uint64_t oneDnnRuns = 0;
  const GemmShape shapes[] = {{3, 256, 256}, {112, 256, 256}, {300, 64, 100},
                              {40, 20, 7},   {2, 4, 4},       {1000, 48, 80}};
  uint32_t seed = 60;
  for (GemmShape shape : shapes)
    for (bool relu : {false, true}) {
      SCOPED_TRACE(testing::Message() << "m=" << shape.m << " k=" << shape.k
                                      << " n=" << shape.n << " relu=" << relu);
      int64_t floats = cache.packedWeightFloats(shape.k, shape.n);
      ASSERT_GE(floats, shape.k * shape.n);
      std::vector<float> a = randomValues(shape.m * shape.k, ++seed);
      std::vector<float> w = randomValues(shape.n * shape.k, ++seed);
      std::vector<float> bias = randomValues(shape.n, ++seed);
      auto *packed =
          static_cast<float *>(std::aligned_alloc(64, (floats * 4 + 63) & ~63));
      ASSERT_NE(packed, nullptr);
      Status status = cache.packWeights(w.data(), shape.k, shape.n, packed);
      ASSERT_TRUE(status.isOk()) << status.message();
      std::vector<float> plainOut(shape.m * shape.n),
          packedOut(shape.m * shape.n, kSentinel);
      GemmArgs args;
      args.m = shape.m;
      args.k = shape.k;
      args.n = shape.n;
      args.a = a.data();
      args.lda = shape.k;
      args.w = w.data();
      args.bias = bias.data();
      args.ldc = shape.n;
      args.relu = relu;
      args.c = plainOut.data();
      status = cache.run(args);
      ASSERT_TRUE(status.isOk()) << status.message();
      args.packedW = packed;
      args.c = packedOut.data();
      status = cache.run(args);
      std::free(packed);
      ASSERT_TRUE(status.isOk()) << status.message();
      for (size_t i = 0; i < plainOut.size(); ++i)
        ASSERT_NEAR(packedOut[i], plainOut[i], 1e-5f * float(shape.k + 1))
            << "at " << i;
      oneDnnRuns += shape.m * shape.k * shape.n > 4096;
    }
  EXPECT_GT(cache.packedWeightRuns(), oneDnnRuns / 2);
}
