//===- GatherTest.cpp - Gather steps from parameters and from the arena ---===//
#include "RuntimeTestUtils.h"
#include "dynb/Runtime/Executor.h"

#include <gtest/gtest.h>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

constexpr float kSentinel = -7.0f;

/// Rows that fill a whole arena buffer with the sentinel, so tests can see
/// which columns a windowed gather left alone.
Step fillWithSentinel(Plan &plan, ParameterStore &params, BufferId target) {
  int64_t rows = plan.buffers[target].rows, cols = plan.buffers[target].cols;
  std::string name = "sentinel" + std::to_string(target);
  EXPECT_TRUE(
      params.add(name, {rows, cols}, std::vector<float>(rows * cols, kSentinel))
          .isOk());
  BufferId source = plan.addParameterBuffer(name, rows, cols);
  std::vector<RowRef> sources;
  for (int64_t r = 0; r < rows; ++r)
    sources.push_back({source, r});
  return gatherStep(wholeBuffer(plan, target), 0, std::move(sources));
}

} // namespace

TEST(GatherTest, EmbeddingLookupThenArenaGatherIntoColumnWindows) {
  ParameterStore params;
  std::vector<float> table = randomValues(10 * 6, 1);
  ASSERT_TRUE(params.add("emb", {10, 6}, table).isOk());

  Plan plan;
  BufferId emb = plan.addParameterBuffer("emb", 10, 6);
  BufferId first = plan.addArenaBuffer(5, 10);
  BufferId second = plan.addArenaBuffer(3, 7);
  plan.steps.push_back(fillWithSentinel(plan, params, first));
  plan.steps.push_back(fillWithSentinel(plan, params, second));
  // first[i][2..6) = emb[ids[i]][1..5)
  const int64_t ids[] = {3, 0, 9, 3, 5};
  std::vector<RowRef> lookups;
  for (int64_t id : ids)
    lookups.push_back({emb, id});
  plan.steps.push_back(gatherStep(Region{first, 0, 5, 2, 4}, 1, lookups));
  // second[1 + i][3..7) = first[picks[i]][2..6)
  const int64_t picks[] = {4, 1};
  plan.steps.push_back(gatherStep(Region{second, 1, 2, 3, 4}, 2,
                                  {{first, picks[0]}, {first, picks[1]}}));
  plan.outputs.push_back(wholeBuffer(plan, first));
  plan.outputs.push_back(wholeBuffer(plan, second));
  planArena(plan);

  Executor executor(params);
  Status status = executor.validate(plan);
  ASSERT_TRUE(status.isOk()) << status.message();
  status = executor.run(plan);
  ASSERT_TRUE(status.isOk()) << status.message();

  std::vector<float> out;
  executor.copyOutput(plan, 0, out);
  ASSERT_EQ(out.size(), 50u);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 10; ++j) {
      float expected =
          j >= 2 && j < 6 ? table[ids[i] * 6 + 1 + (j - 2)] : kSentinel;
      EXPECT_EQ(out[i * 10 + j], expected)
          << "first (" << i << ", " << j << ")";
    }
  executor.copyOutput(plan, 1, out);
  ASSERT_EQ(out.size(), 21u);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 7; ++j) {
      float expected = kSentinel;
      if (i >= 1 && j >= 3)
        expected = table[ids[picks[i - 1]] * 6 + 1 + (j - 3)];
      EXPECT_EQ(out[i * 7 + j], expected)
          << "second (" << i << ", " << j << ")";
    }
  EXPECT_EQ(executor.stats().gatherRowsCopied, 5u + 3u + 5u + 2u);
  const float *row = executor.rowPointer(plan, first, 2);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row[2], table[ids[2] * 6 + 1]);
}

TEST(GatherTest, LargeGathersSplitAcrossThreadsCopyEveryRow) {
  // 3000 rows of 40 floats: 480 KB, well over the parallel threshold.
  constexpr int64_t kRows = 3000, kCols = 40, kTableRows = 97;
  ParameterStore params;
  std::vector<float> table = randomValues(kTableRows * kCols, 2);
  ASSERT_TRUE(params.add("table", {kTableRows, kCols}, table).isOk());
  Plan plan;
  BufferId source = plan.addParameterBuffer("table", kTableRows, kCols);
  BufferId dst = plan.addArenaBuffer(kRows, kCols);
  std::vector<RowRef> rows;
  for (int64_t i = 0; i < kRows; ++i)
    rows.push_back({source, (i * 31) % kTableRows});
  plan.steps.push_back(gatherStep(wholeBuffer(plan, dst), 0, rows));
  plan.outputs.push_back(wholeBuffer(plan, dst));
  planArena(plan);

  for (unsigned threads : {1u, 2u, 4u}) {
    ExecutorOptions opts;
    opts.numThreads = threads;
    Executor executor(params, opts);
    ASSERT_TRUE(executor.validate(plan).isOk());
    ASSERT_TRUE(executor.run(plan).isOk());
    std::vector<float> out;
    executor.copyOutput(plan, 0, out);
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < kCols; ++j)
        ASSERT_EQ(out[i * kCols + j],
                  table[((i * 31) % kTableRows) * kCols + j])
            << threads << " threads, row " << i;
  }
}

TEST(GatherTest, GatherWithinOneBuffer) {
  // Copies columns [0, 3) of rows 2 and 0 to columns [2, 5) of rows 0 and 1
  // of the same buffer: the rows overlap in memory.
  ParameterStore params;
  std::vector<float> init = randomValues(3 * 5, 3);
  ASSERT_TRUE(params.add("init", {3, 5}, init).isOk());
  Plan plan;
  BufferId initParam = plan.addParameterBuffer("init", 3, 5);
  BufferId buffer = plan.addArenaBuffer(3, 5);
  plan.steps.push_back(
      gatherStep(wholeBuffer(plan, buffer), 0,
                 {{initParam, 0}, {initParam, 1}, {initParam, 2}}));
  plan.steps.push_back(
      gatherStep(Region{buffer, 0, 2, 2, 3}, 0, {{buffer, 2}, {buffer, 0}}));
  plan.outputs.push_back(wholeBuffer(plan, buffer));
  planArena(plan);
  Executor executor(params);
  ASSERT_TRUE(executor.validate(plan).isOk());
  ASSERT_TRUE(executor.run(plan).isOk());

  std::vector<float> expected = init;
  for (int64_t j = 0; j < 3; ++j)
    expected[0 * 5 + 2 + j] = init[2 * 5 + j];
  // Row 1 reads row 0 after row 0 was rewritten; columns [0, 2) of row 0
  // are unchanged, column 2 of row 0 now holds init[2][0].
  for (int64_t j = 0; j < 3; ++j)
    expected[1 * 5 + 2 + j] = expected[0 * 5 + j];
  std::vector<float> out;
  executor.copyOutput(plan, 0, out);
  EXPECT_EQ(out, expected);
}
