//===- RandomGraphTest.cpp - Strategies on random DAGs vs references ------===//
//
// Every strategy must produce a valid plan no shorter than the bound; the
// fast depth, agenda and bound code must agree exactly with the naive
// reference versions in TestGraphs.h.
//
//===----------------------------------------------------------------------===//
#include "TestGraphs.h"

#include "gtest/gtest.h"

#include <set>
#include <tuple>

using namespace dynb;
using namespace dynb::test;

namespace {

struct DagShape {
  unsigned nodes, sigs, maxDeps, window;
};

void PrintTo(const DagShape &s, std::ostream *os) {
  *os << s.nodes << " nodes, " << s.sigs << " sigs, " << s.maxDeps
      << " deps in a window of " << s.window;
}

class RandomDag
    : public testing::TestWithParam<std::tuple<unsigned, DagShape>> {
protected:
  BatchingGraph graph() const {
    auto [seed, s] = GetParam();
    return randomDag(seed, s.nodes, s.sigs, s.maxDeps, s.window);
  }
};

TEST_P(RandomDag, EveryStrategyIsValidAndAboveTheBound) {
  BatchingGraph g = graph();
  uint64_t bound = launchLowerBound(g);
  EXPECT_GT(bound, 0u);
  for (BatchingStrategy s : kEveryBatchingStrategy) {
    BatchingPlan plan = scheduleBatches(g, s);
    EXPECT_EQ(verifyBatchingPlan(g, plan), "") << toString(s).str();
    EXPECT_GE(plan.numGroups(), bound) << toString(s).str();
    EXPECT_EQ(plan.nodes().size(), g.size()) << toString(s).str();
  }
  EXPECT_EQ(scheduleBatches(g, BatchingStrategy::None).numGroups(), g.size());
}

TEST_P(RandomDag, BoundMatchesReference) {
  BatchingGraph g = graph();
  EXPECT_EQ(launchLowerBound(g), referenceBound(g));
}

TEST_P(RandomDag, DepthMatchesReference) {
  BatchingGraph g = graph();
  BatchingPlan plan = scheduleBatches(g, BatchingStrategy::Depth);
  EXPECT_EQ(groupsOf(plan), referenceDepth(g));
  // Each group is one (depth, signature) class.
  llvm::SmallVector<uint32_t, 0> depth = computeDepths(g);
  std::set<std::pair<uint32_t, SignatureId>> classes;
  for (NodeId n = 0; n != g.size(); ++n)
    classes.insert({depth[n], g.signature(n)});
  EXPECT_EQ(plan.numGroups(), classes.size());
  for (size_t i = 0; i != plan.numGroups(); ++i)
    for (NodeId n : plan.group(i))
      EXPECT_EQ(depth[n], depth[plan.group(i).front()]);
}

TEST_P(RandomDag, AgendaMatchesReference) {
  BatchingGraph g = graph();
  EXPECT_EQ(groupsOf(scheduleBatches(g, BatchingStrategy::Agenda)),
            referenceAgenda(g));
}

TEST_P(RandomDag, DepthsMatchDefinition) {
  BatchingGraph g = graph();
  llvm::SmallVector<uint32_t, 0> depth = computeDepths(g);
  ASSERT_EQ(depth.size(), g.size());
  for (NodeId n = 0; n != g.size(); ++n) {
    uint32_t expected = 0;
    for (NodeId d : g.deps(n))
      expected = std::max(expected, depth[d] + 1);
    EXPECT_EQ(depth[n], expected);
  }
}

const DagShape kShapes[] = {
    {50, 1, 2, 50},    // one signature: depth is optimal
    {200, 3, 3, 10},   // deep, few signatures
    {500, 5, 4, 500},  // shallow and wide
    {1000, 20, 3, 30}, // many signatures, more than one block of lanes
    {300, 40, 2, 5},   // very deep, sparse signatures
    {400, 2, 1, 1},    // chains and forests of chains
    {600, 9, 6, 600},  // dense
};

INSTANTIATE_TEST_SUITE_P(Seeds, RandomDag,
                         testing::Combine(testing::Values(1u, 2u, 3u, 17u,
                                                          12345u),
                                          testing::ValuesIn(kShapes)));

TEST(RandomDagLarge, HundredThousandNodesThousandSignatures) {
  BatchingGraph g = randomDag(7, 100000, 1000, 3, 2000);
  uint64_t bound = launchLowerBound(g);
  EXPECT_GE(bound, 1000u);
  for (BatchingStrategy s : kEveryBatchingStrategy) {
    BatchingPlan plan = scheduleBatches(g, s);
    EXPECT_EQ(verifyBatchingPlan(g, plan), "") << toString(s).str();
    EXPECT_GE(plan.numGroups(), bound) << toString(s).str();
  }
}

} // namespace
