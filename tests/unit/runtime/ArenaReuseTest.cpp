//===- ArenaReuseTest.cpp - The executor's arena grows only when it must --===//
#include "RuntimeTestUtils.h"
#include "dynb/Runtime/Arena.h"
#include "dynb/Runtime/Executor.h"

#include <gtest/gtest.h>

#include <cstdint>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

/// Gathers `rows` embedding rows and projects them: two arena buffers.
Plan linearPlan(int64_t rows) {
  Plan plan;
  BufferId emb = plan.addParameterBuffer("emb", 16, 32);
  BufferId weight = plan.addParameterBuffer("w", 24, 32);
  BufferId x = plan.addArenaBuffer(rows, 32);
  BufferId y = plan.addArenaBuffer(rows, 24);
  std::vector<RowRef> lookups;
  for (int64_t i = 0; i < rows; ++i)
    lookups.push_back({emb, i % 16});
  plan.steps.push_back(gatherStep(wholeBuffer(plan, x), 0, lookups));
  plan.steps.push_back(
      gemmStep(wholeBuffer(plan, x), weight, wholeBuffer(plan, y)));
  plan.outputs.push_back(wholeBuffer(plan, y));
  planArena(plan);
  return plan;
}

} // namespace

TEST(ArenaReuseTest, SamePlanTwiceDoesNotGrowAndLargerPlanDoes) {
  ParameterStore params;
  params.addSeeded("emb", {16, 32}, 1);
  params.addSeeded("w", {24, 32}, 2);
  Executor executor(params);

  Plan small = linearPlan(10);
  ASSERT_TRUE(executor.validate(small).isOk());
  ASSERT_TRUE(executor.run(small).isOk());
  int64_t capacity = executor.stats().arenaCapacityBytes;
  EXPECT_GE(capacity, small.arenaBytes);
  const float *firstRun =
      executor.rowPointer(small, small.outputs[0].buffer, 0);
  std::vector<float> firstOut;
  executor.copyOutput(small, 0, firstOut);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(firstRun) % 64, 0u);

  ASSERT_TRUE(executor.run(small).isOk());
  EXPECT_EQ(executor.stats().arenaCapacityBytes, capacity);
  EXPECT_EQ(executor.rowPointer(small, small.outputs[0].buffer, 0), firstRun);
  std::vector<float> secondOut;
  executor.copyOutput(small, 0, secondOut);
  EXPECT_EQ(secondOut, firstOut);

  Plan large = linearPlan(1000);
  ASSERT_GT(large.arenaBytes, capacity);
  ASSERT_TRUE(executor.run(large).isOk());
  int64_t grown = executor.stats().arenaCapacityBytes;
  EXPECT_GE(grown, large.arenaBytes);

  // Going back to the small plan keeps the large block.
  ASSERT_TRUE(executor.run(small).isOk());
  EXPECT_EQ(executor.stats().arenaCapacityBytes, grown);
  executor.copyOutput(small, 0, secondOut);
  EXPECT_EQ(secondOut, firstOut);
}

TEST(ArenaReuseTest, ArenaReserveAlignsAndOnlyGrows) {
  Arena arena;
  EXPECT_EQ(arena.capacity(), 0);
  ASSERT_TRUE(arena.reserve(0).isOk());
  ASSERT_TRUE(arena.reserve(100).isOk());
  EXPECT_EQ(arena.capacity(), 128);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.data()) % 64, 0u);
  std::byte *block = arena.data();
  ASSERT_TRUE(arena.reserve(64).isOk());
  EXPECT_EQ(arena.data(), block);
  EXPECT_EQ(arena.capacity(), 128);
  ASSERT_TRUE(arena.reserve(1000).isOk());
  EXPECT_EQ(arena.capacity(), 1024);
  EXPECT_FALSE(arena.reserve(-1).isOk());
  Status huge = arena.reserve(INT64_MAX / 2);
  EXPECT_FALSE(huge.isOk());
  EXPECT_NE(huge.message().find("cannot allocate"), std::string::npos);
  // Rounding up a size this close to INT64_MAX would overflow.
  Status edge = arena.reserve(INT64_MAX - 1);
  EXPECT_FALSE(edge.isOk());
  EXPECT_NE(edge.message().find("cannot allocate 9223372036854775806 bytes"),
            std::string::npos);
}
