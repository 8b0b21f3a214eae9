//===- TreeTest.cpp - Strategies on TreeLSTM forests and deep chains ------===//
//
// Balanced trees must meet the k+1 bound of the seed paper exactly; deep
// graphs must not overflow the stack (nothing recurses).
//
//===----------------------------------------------------------------------===//
#include "TestGraphs.h"

#include "gtest/gtest.h"

using namespace dynb;
using namespace dynb::test;

namespace {

TEST(TreeBatching, BalancedTreesMeetTheBoundExactly) {
  for (unsigned k = 0; k <= 12; ++k) {
    SCOPED_TRACE("k = " + std::to_string(k));
    BatchingGraph g;
    appendTree(g, balancedTreeOps(k));
    uint64_t leaves = uint64_t(1) << k;
    ASSERT_EQ(g.size(), 2 * leaves + (leaves - 1));

    BatchingPlan depth = scheduleBatches(g, BatchingStrategy::Depth);
    EXPECT_EQ(verifyBatchingPlan(g, depth), "");
    EXPECT_EQ(groupsWithSignature(g, depth, kEmbedding), 1u);
    EXPECT_EQ(groupsWithSignature(g, depth, kLeafCell) +
                  groupsWithSignature(g, depth, kInternalCell),
              k + 1);
    EXPECT_EQ(depth.numGroups(), k + 2);
    EXPECT_EQ(launchLowerBound(g), k + 2);
    EXPECT_EQ(depth.numGroups(), launchLowerBound(g));

    BatchingPlan agenda = scheduleBatches(g, BatchingStrategy::Agenda);
    EXPECT_EQ(verifyBatchingPlan(g, agenda), "");
    EXPECT_GE(agenda.numGroups(), launchLowerBound(g));

    BatchingPlan none = scheduleBatches(g, BatchingStrategy::None);
    EXPECT_EQ(verifyBatchingPlan(g, none), "");
    EXPECT_EQ(none.numGroups(), g.size());
  }
}

TEST(TreeBatching, ForestOfBalancedTreesNeedsOnlyTheTallest) {
  BatchingGraph g;
  for (unsigned k = 0; k <= 12; ++k)
    appendTree(g, balancedTreeOps(k));
  BatchingPlan depth = scheduleBatches(g, BatchingStrategy::Depth);
  EXPECT_EQ(verifyBatchingPlan(g, depth), "");
  EXPECT_EQ(depth.numGroups(), 12u + 2);
  EXPECT_EQ(launchLowerBound(g), 12u + 2);
  BatchingPlan agenda = scheduleBatches(g, BatchingStrategy::Agenda);
  EXPECT_EQ(verifyBatchingPlan(g, agenda), "");
  EXPECT_GE(agenda.numGroups(), 12u + 2);
}

TEST(TreeBatching, RandomTreeForests) {
  // Internal cells at depth j > 2 always have a child at depth j - 1, so on
  // TreeLSTM forests of any shape the depth strategy meets the bound.
  for (unsigned seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed = " + std::to_string(seed));
    std::mt19937 rng(seed);
    BatchingGraph g;
    unsigned trees = 1 + rng() % 64;
    for (unsigned t = 0; t != trees; ++t)
      appendTree(g, randomTreeOps(rng, 1 + rng() % 60));
    uint64_t bound = launchLowerBound(g);
    EXPECT_EQ(bound, referenceBound(g));
    BatchingPlan depth = scheduleBatches(g, BatchingStrategy::Depth);
    EXPECT_EQ(verifyBatchingPlan(g, depth), "");
    EXPECT_EQ(depth.numGroups(), bound);
    EXPECT_EQ(groupsOf(depth), referenceDepth(g));
    BatchingPlan agenda = scheduleBatches(g, BatchingStrategy::Agenda);
    EXPECT_EQ(verifyBatchingPlan(g, agenda), "");
    EXPECT_GE(agenda.numGroups(), bound);
    EXPECT_EQ(groupsOf(agenda), referenceAgenda(g));
  }
}

TEST(DeepGraphs, HundredThousandNodeChain) {
  constexpr unsigned kLength = 100000;
  BatchingGraph g;
  g.addNode(0, {});
  for (NodeId n = 1; n != kLength; ++n)
    g.addNode(0, {n - 1});
  llvm::SmallVector<uint32_t, 0> depth = computeDepths(g);
  EXPECT_EQ(depth.back(), kLength - 1);
  EXPECT_EQ(launchLowerBound(g), kLength);
  for (BatchingStrategy s : kEveryBatchingStrategy) {
    BatchingPlan plan = scheduleBatches(g, s);
    EXPECT_EQ(plan.numGroups(), kLength) << toString(s).str();
    EXPECT_EQ(verifyBatchingPlan(g, plan), "") << toString(s).str();
  }
}

TEST(DeepGraphs, AlternatingSignatureChain) {
  constexpr unsigned kLength = 100000;
  BatchingGraph g;
  g.addNode(0, {});
  for (NodeId n = 1; n != kLength; ++n)
    g.addNode(n % 2, {n - 1});
  EXPECT_EQ(launchLowerBound(g), kLength);
  for (BatchingStrategy s : {BatchingStrategy::Depth, BatchingStrategy::Agenda})
    EXPECT_EQ(scheduleBatches(g, s).numGroups(), kLength) << toString(s).str();
}

TEST(DeepGraphs, CaterpillarTree) {
  constexpr unsigned kLeaves = 50000;
  BatchingGraph g;
  appendTree(g, caterpillarTreeOps(kLeaves));
  // Embeddings 1, leaf cells 1, internal cells one per level.
  EXPECT_EQ(launchLowerBound(g), 2u + (kLeaves - 1));
  for (BatchingStrategy s :
       {BatchingStrategy::Depth, BatchingStrategy::Agenda}) {
    BatchingPlan plan = scheduleBatches(g, s);
    EXPECT_EQ(verifyBatchingPlan(g, plan), "") << toString(s).str();
    EXPECT_GE(plan.numGroups(), launchLowerBound(g)) << toString(s).str();
  }
  EXPECT_EQ(scheduleBatches(g, BatchingStrategy::Depth).numGroups(),
            launchLowerBound(g));
}

} // namespace
