//===- PlanArenaTest.cpp - Liveness-based arena offsets from planArena() --===//
#include "RuntimeTestUtils.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

int64_t bufferBytes(const BufferDesc &buffer) {
  return buffer.rows * buffer.cols * static_cast<int64_t>(sizeof(float));
}

/// An independent recomputation of the live ranges planArena() must honour.
void liveRanges(const Plan &plan, std::vector<int64_t> &first,
                std::vector<int64_t> &last) {
  first.assign(plan.buffers.size(), std::numeric_limits<int64_t>::max());
  last.assign(plan.buffers.size(), -1);
  auto touch = [&](BufferId id, int64_t time) {
    first[id] = std::min(first[id], time);
    last[id] = std::max(last[id], time);
  };
  for (size_t s = 0; s < plan.steps.size(); ++s)
    for (const Region &arg : plan.steps[s].kernel().args)
      touch(arg.buffer, static_cast<int64_t>(s));
  for (const Region &output : plan.outputs)
    touch(output.buffer, static_cast<int64_t>(plan.steps.size()));
}

void expectNoLiveOverlap(const Plan &plan) {
  std::vector<int64_t> first, last;
  liveRanges(plan, first, last);
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const BufferDesc &lhs = plan.buffers[i];
    if (lhs.kind != BufferDesc::Kind::Arena)
      continue;
    ASSERT_GE(lhs.arenaOffset, 0) << "buffer " << i;
    ASSERT_EQ(lhs.arenaOffset % 64, 0) << "buffer " << i;
    ASSERT_LE(lhs.arenaOffset + bufferBytes(lhs), plan.arenaBytes)
        << "buffer " << i;
    if (last[i] < 0 || bufferBytes(lhs) == 0)
      continue;
    for (size_t j = i + 1; j < plan.buffers.size(); ++j) {
      const BufferDesc &rhs = plan.buffers[j];
      if (rhs.kind != BufferDesc::Kind::Arena || last[j] < 0 ||
          bufferBytes(rhs) == 0)
        continue;
      bool liveTogether = first[i] <= last[j] && first[j] <= last[i];
      if (!liveTogether)
        continue;
      bool disjoint = lhs.arenaOffset + bufferBytes(lhs) <= rhs.arenaOffset ||
                      rhs.arenaOffset + bufferBytes(rhs) <= lhs.arenaOffset;
      ASSERT_TRUE(disjoint) << "buffers " << i << " and " << j
                            << " are live together but share memory";
    }
  }
}

/// Kernel steps are the simplest way to say "this step touches these
/// buffers"; planArena() never calls them.
Step touching(const Plan &plan, std::vector<BufferId> ids) {
  std::vector<Region> args;
  for (BufferId id : ids)
    args.push_back(wholeBuffer(plan, id));
  return kernelStep(nullptr, "touch", 0, std::move(args));
}

} // namespace

TEST(PlanArenaTest, BuffersLiveAtDifferentTimesShareMemory) {
  Plan plan;
  for (int i = 0; i < 8; ++i)
    plan.addArenaBuffer(4, 16);
  for (BufferId id = 0; id < 8; ++id)
    plan.steps.push_back(touching(plan, {id}));
  planArena(plan);
  for (const BufferDesc &buffer : plan.buffers)
    EXPECT_EQ(buffer.arenaOffset, 0);
  EXPECT_EQ(plan.arenaBytes, 4 * 16 * 4);
}

TEST(PlanArenaTest, ChainReusesTwoSlots) {
  // Step i reads buffer i and writes buffer i + 1: two are live at a time.
  Plan plan;
  for (int i = 0; i < 10; ++i)
    plan.addArenaBuffer(8, 8);
  for (BufferId id = 0; id + 1 < 10; ++id)
    plan.steps.push_back(touching(plan, {id, id + 1}));
  planArena(plan);
  expectNoLiveOverlap(plan);
  EXPECT_EQ(plan.arenaBytes, 2 * 8 * 8 * 4);
}

TEST(PlanArenaTest, OffsetsAreAlignedForOddSizes) {
  Plan plan;
  std::vector<BufferId> ids;
  for (int i = 1; i <= 9; ++i)
    ids.push_back(plan.addArenaBuffer(i, 3)); // 12 * i bytes
  plan.steps.push_back(touching(plan, ids));
  planArena(plan);
  expectNoLiveOverlap(plan);
  for (const BufferDesc &buffer : plan.buffers)
    EXPECT_EQ(buffer.arenaOffset % 64, 0);
  EXPECT_EQ(plan.arenaBytes % 64, 0);
}

TEST(PlanArenaTest, OutputsLiveToTheEnd) {
  Plan plan;
  BufferId result = plan.addArenaBuffer(4, 4);
  BufferId scratch = plan.addArenaBuffer(4, 4);
  plan.steps.push_back(touching(plan, {result}));
  plan.steps.push_back(touching(plan, {scratch}));
  plan.outputs.push_back(wholeBuffer(plan, result));
  planArena(plan);
  expectNoLiveOverlap(plan);
  EXPECT_NE(plan.buffers[result].arenaOffset,
            plan.buffers[scratch].arenaOffset);

  // Without the output the two could share.
  plan.outputs.clear();
  planArena(plan);
  EXPECT_EQ(plan.buffers[result].arenaOffset,
            plan.buffers[scratch].arenaOffset);
}

TEST(PlanArenaTest, ParametersTakeNoArenaSpace) {
  Plan plan;
  BufferId weight = plan.addParameterBuffer("w", 1000, 1000);
  BufferId activation = plan.addArenaBuffer(2, 16);
  plan.steps.push_back(touching(plan, {weight, activation}));
  planArena(plan);
  EXPECT_EQ(plan.buffers[weight].arenaOffset, -1);
  EXPECT_EQ(plan.arenaBytes, 2 * 16 * 4);
}

TEST(PlanArenaTest, UntouchedBuffersStayInsideTheArena) {
  Plan plan;
  BufferId used = plan.addArenaBuffer(1, 16);
  BufferId unused = plan.addArenaBuffer(10, 16);
  plan.steps.push_back(touching(plan, {used}));
  planArena(plan);
  EXPECT_EQ(plan.buffers[unused].arenaOffset, 0);
  EXPECT_GE(plan.arenaBytes, 10 * 16 * 4);
}

TEST(PlanArenaTest, RandomPlansNeverOverlapLiveBuffers) {
  std::mt19937 generator(1234);
  for (int trial = 0; trial < 200; ++trial) {
    Plan plan;
    int numBuffers = 1 + static_cast<int>(generator() % 60);
    for (int i = 0; i < numBuffers; ++i) {
      if (generator() % 8 == 0)
        plan.addParameterBuffer("p", 3, 3);
      else
        plan.addArenaBuffer(generator() % 20, generator() % 20);
    }
    int numSteps = static_cast<int>(generator() % 40);
    for (int s = 0; s < numSteps; ++s) {
      std::vector<BufferId> ids;
      int numArgs = 1 + static_cast<int>(generator() % 4);
      for (int a = 0; a < numArgs; ++a)
        ids.push_back(static_cast<BufferId>(generator() % numBuffers));
      plan.steps.push_back(touching(plan, ids));
    }
    int numOutputs = static_cast<int>(generator() % 3);
    for (int o = 0; o < numOutputs; ++o)
      plan.outputs.push_back(
          wholeBuffer(plan, static_cast<BufferId>(generator() % numBuffers)));
    planArena(plan);
    SCOPED_TRACE(testing::Message() << "trial " << trial);
    expectNoLiveOverlap(plan);
    if (testing::Test::HasFatalFailure())
      return;
  }
}

TEST(PlanArenaTest, PlansOneHundredThousandBuffersQuickly) {
  // Each step makes a new buffer from two recent ones, and some buffers stay
  // live far ahead, the shape of a batched tree network. A quadratic planner
  // takes minutes here.
  std::mt19937 generator(99);
  Plan plan;
  constexpr int kNumBuffers = 100000;
  for (int i = 0; i < kNumBuffers; ++i)
    plan.addArenaBuffer(1 + generator() % 32, 64);
  for (BufferId id = 2; id < kNumBuffers; ++id) {
    BufferId far = static_cast<BufferId>(generator() % id);
    plan.steps.push_back(touching(plan, {id - 1, id - 2, id}));
    if (generator() % 1000 == 0)
      plan.steps.push_back(touching(plan, {far, id}));
  }
  planArena(plan);
  EXPECT_GT(plan.arenaBytes, 0);
  // Far fewer bytes than the sum of all buffers.
  int64_t total = 0;
  for (const BufferDesc &buffer : plan.buffers)
    total += bufferBytes(buffer);
  EXPECT_LT(plan.arenaBytes, total / 10);
}

TEST(PlanArenaTest, PeakLiveBytesCountsBuffersLiveTogether) {
  // A chain of three 8x8 buffers, a wide 2x64 one live beside the first two
  // steps only, and an output that lives to the end.
  Plan plan;
  std::vector<BufferId> chain;
  for (int i = 0; i < 3; ++i)
    chain.push_back(plan.addArenaBuffer(8, 8));
  BufferId wide = plan.addArenaBuffer(2, 64);
  BufferId output = plan.addArenaBuffer(1, 5);
  BufferId weight = plan.addParameterBuffer("w", 64, 64);
  plan.steps.push_back(touching(plan, {chain[0], chain[1], wide, weight}));
  plan.steps.push_back(touching(plan, {chain[1], chain[2], wide}));
  plan.steps.push_back(touching(plan, {chain[2], output}));
  plan.outputs.push_back(wholeBuffer(plan, output));
  // Step 0 holds chain 0 and 1 and the wide buffer (256 + 256 + 512 bytes);
  // parameters are not activations and the output starts later.
  EXPECT_EQ(peakLiveBytes(plan), 256 + 256 + 512);
  planArena(plan);
  EXPECT_GE(plan.arenaBytes, peakLiveBytes(plan));

  Plan empty;
  EXPECT_EQ(peakLiveBytes(empty), 0);
}
