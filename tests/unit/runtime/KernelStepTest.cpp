//===- KernelStepTest.cpp - Kernel steps through the packed memref ABI ----===//
#include "RuntimeTestUtils.h"
#include "dynb/Runtime/Executor.h"

#include <gtest/gtest.h>

#include <atomic>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

MemRefDesc2D &argument(void **args, int index) {
  return **static_cast<MemRefDesc2D **>(args[index]);
}

float &element(MemRefDesc2D &desc, int64_t row, int64_t col) {
  return desc
      .aligned[desc.offset + row * desc.strides[0] + col * desc.strides[1]];
}

std::atomic<int> gCalls{0};
std::atomic<int> gBadDescriptors{0};

/// counter += 1; out = a + b. Written like the code MLIR emits: it trusts
/// only the descriptors.
void addAndCountKernel(void **args) {
  gCalls.fetch_add(1, std::memory_order_relaxed);
  MemRefDesc2D &counter = argument(args, 0);
  MemRefDesc2D &out = argument(args, 1);
  MemRefDesc2D &a = argument(args, 2);
  MemRefDesc2D &b = argument(args, 3);
  for (MemRefDesc2D *desc : {&counter, &out, &a, &b})
    if (desc->allocated != desc->aligned || desc->offset != 0 ||
        desc->strides[1] != 1 || desc->sizes[0] != counter.sizes[0])
      gBadDescriptors.fetch_add(1);
  for (int64_t r = 0; r < out.sizes[0]; ++r) {
    element(counter, r, 0) += 1.0f;
    for (int64_t c = 0; c < out.sizes[1]; ++c)
      element(out, r, c) = element(a, r, c) + element(b, r, c);
  }
}

struct KernelPlan {
  Plan plan;
  ParameterStore params;
  std::vector<float> a, b;
};

/// A [rows x 12] work buffer: column 0 counts visits, columns [1, 5) get
/// a + b, where a and b are the two halves of a [rows x 8] input.
void buildKernelPlan(KernelPlan &kp, int64_t rows) {
  constexpr int64_t kWidth = 4;
  kp.a = randomValues(rows * kWidth, 1);
  kp.b = randomValues(rows * kWidth, 2);
  std::vector<float> input(rows * 2 * kWidth);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < kWidth; ++c) {
      input[r * 2 * kWidth + c] = kp.a[r * kWidth + c];
      input[r * 2 * kWidth + kWidth + c] = kp.b[r * kWidth + c];
    }
  ASSERT_TRUE(kp.params.add("input", {rows, 2 * kWidth}, input).isOk());
  ASSERT_TRUE(
      kp.params.add("zeros", {rows, 12}, std::vector<float>(rows * 12)).isOk());

  Plan &plan = kp.plan;
  BufferId inputParam = plan.addParameterBuffer("input", rows, 2 * kWidth);
  BufferId zeros = plan.addParameterBuffer("zeros", rows, 12);
  BufferId inputBuffer = plan.addArenaBuffer(rows, 2 * kWidth);
  BufferId work = plan.addArenaBuffer(rows, 12);
  std::vector<RowRef> inputRows, zeroRows;
  for (int64_t r = 0; r < rows; ++r) {
    inputRows.push_back({inputParam, r});
    zeroRows.push_back({zeros, r});
  }
  plan.steps.push_back(
      gatherStep(wholeBuffer(plan, inputBuffer), 0, inputRows));
  plan.steps.push_back(gatherStep(wholeBuffer(plan, work), 0, zeroRows));
  plan.steps.push_back(
      kernelStep(addAndCountKernel, "add_and_count", rows,
                 {Region{work, 0, rows, 0, 1}, Region{work, 0, rows, 1, kWidth},
                  Region{inputBuffer, 0, rows, 0, kWidth},
                  Region{inputBuffer, 0, rows, kWidth, kWidth}}));
  plan.outputs.push_back(wholeBuffer(plan, work));
  planArena(plan);
}

} // namespace

TEST(KernelStepTest, RowSplittingCoversEveryRowOnceAroundTheThreshold) {
  // The four arguments are 1 + 4 + 4 + 4 = 13 columns wide, so with a
  // threshold of 1300 elements the step splits from 101 rows on.
  constexpr int64_t kThreshold = 1300, kSplitFrom = 101;
  for (unsigned threads : {1u, 2u, 3u, 4u})
    for (int64_t rows : {0, 1, 2, 3, 99, 100, 101, 102, 103, 500, 4099}) {
      SCOPED_TRACE(testing::Message()
                   << threads << " threads, " << rows << " rows");
      KernelPlan kp;
      buildKernelPlan(kp, rows);
      ExecutorOptions opts;
      opts.numThreads = threads;
      opts.kernelParallelMinElements = kThreshold;
      Executor executor(kp.params, opts);
      Status status = executor.validate(kp.plan);
      ASSERT_TRUE(status.isOk()) << status.message();
      gCalls = 0;
      gBadDescriptors = 0;
      ASSERT_TRUE(executor.run(kp.plan).isOk());

      int expectedCalls = rows == 0 ? 0 : 1;
      if (rows >= kSplitFrom && threads > 1)
        expectedCalls = static_cast<int>(std::min<int64_t>(threads, rows));
      EXPECT_EQ(gCalls.load(), expectedCalls);
      EXPECT_EQ(gBadDescriptors.load(), 0);
      EXPECT_EQ(executor.stats().kernelCalls, 1u);

      std::vector<float> out;
      executor.copyOutput(kp.plan, 0, out);
      ASSERT_EQ(out.size(), static_cast<size_t>(rows * 12));
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(out[r * 12], 1.0f)
            << "row " << r << " visited " << out[r * 12] << " times";
        for (int64_t c = 0; c < 4; ++c)
          ASSERT_EQ(out[r * 12 + 1 + c], kp.a[r * 4 + c] + kp.b[r * 4 + c]);
        for (int64_t c = 5; c < 12; ++c)
          ASSERT_EQ(out[r * 12 + c], 0.0f);
      }
    }
}

TEST(KernelStepTest, DefaultThresholdSplitsLargeSteps) {
  // 16384 / 13 = 1260.3, so 1260 rows run inline and 1261 split.
  for (int64_t rows : {1260, 1261}) {
    KernelPlan kp;
    buildKernelPlan(kp, rows);
    ExecutorOptions opts;
    opts.numThreads = 2;
    Executor executor(kp.params, opts);
    gCalls = 0;
    ASSERT_TRUE(executor.run(kp.plan).isOk());
    EXPECT_EQ(gCalls.load(), rows == 1260 ? 1 : 2) << rows << " rows";
    std::vector<float> out;
    executor.copyOutput(kp.plan, 0, out);
    for (int64_t r = 0; r < rows; ++r)
      ASSERT_EQ(out[r * 12], 1.0f) << "row " << r;
  }
}

namespace {
std::atomic<int> gManyArgsSum{0};
/// Checks that descriptors past the inline capacity arrive intact.
void manyArgsKernel(void **args) {
  for (int i = 0; i < 20; ++i) {
    MemRefDesc2D &desc = argument(args, i);
    gManyArgsSum.fetch_add(static_cast<int>(element(desc, 0, 0)));
  }
}
} // namespace

TEST(KernelStepTest, ManyArguments) {
  ParameterStore params;
  std::vector<float> values(20);
  for (int i = 0; i < 20; ++i)
    values[i] = static_cast<float>(i + 1);
  ASSERT_TRUE(params.add("values", {1, 20}, values).isOk());
  Plan plan;
  BufferId source = plan.addParameterBuffer("values", 1, 20);
  std::vector<Region> args;
  for (int i = 0; i < 20; ++i)
    args.push_back(Region{source, 0, 1, i, 1});
  plan.steps.push_back(kernelStep(manyArgsKernel, "many", 1, args));
  planArena(plan);
  Executor executor(params);
  ASSERT_TRUE(executor.validate(plan).isOk());
  gManyArgsSum = 0;
  ASSERT_TRUE(executor.run(plan).isOk());
  EXPECT_EQ(gManyArgsSum.load(), 20 * 21 / 2);
}
