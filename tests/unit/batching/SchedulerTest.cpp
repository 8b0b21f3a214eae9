//===- SchedulerTest.cpp - Exact schedules of small graphs, plan checker --===//
#include "TestGraphs.h"

#include "gtest/gtest.h"

using namespace dynb;
using namespace dynb::test;

namespace {

constexpr SignatureId A = 0, B = 1;

// 0:A  1:B  2:A(0)  3:A(1)  4:B(2,3)  5:A
// Depths 0 0 1 1 2 0. Average depth A = 0.5, B = 1.
BatchingGraph agendaLosesGraph() {
  BatchingGraph g;
  g.addNode(A, {});
  g.addNode(B, {});
  g.addNode(A, {0});
  g.addNode(A, {1});
  g.addNode(B, {2, 3});
  g.addNode(A, {});
  return g;
}

// 0:B  1:B(0)  2:A(1)  3:A. Average depth A = 1, B = 0.5: agenda waits for
// the B chain and then runs both A nodes together; depth splits them.
BatchingGraph agendaWinsGraph() {
  BatchingGraph g;
  g.addNode(B, {});
  g.addNode(B, {0});
  g.addNode(A, {1});
  g.addNode(A, {});
  return g;
}

TEST(Scheduler, DepthsOfSmallGraph) {
  BatchingGraph g = agendaLosesGraph();
  EXPECT_EQ(computeDepths(g).size(), 6u);
  std::vector<uint32_t> expected = {0, 0, 1, 1, 2, 0};
  llvm::SmallVector<uint32_t, 0> depths = computeDepths(g);
  EXPECT_EQ(std::vector<uint32_t>(depths.begin(), depths.end()), expected);
}

TEST(Scheduler, NoneIsOneGroupPerNodeInIdOrder) {
  BatchingGraph g = agendaLosesGraph();
  BatchingPlan plan = scheduleBatches(g, BatchingStrategy::None);
  EXPECT_EQ(groupsOf(plan), Groups({{0}, {1}, {2}, {3}, {4}, {5}}));
  EXPECT_EQ(verifyBatchingPlan(g, plan), "");
}

TEST(Scheduler, DepthExactGroups) {
  BatchingGraph g = agendaLosesGraph();
  BatchingPlan plan = scheduleBatches(g, BatchingStrategy::Depth);
  EXPECT_EQ(groupsOf(plan), Groups({{0, 5}, {1}, {2, 3}, {4}}));
  EXPECT_EQ(verifyBatchingPlan(g, plan), "");

  BatchingGraph h = agendaWinsGraph();
  plan = scheduleBatches(h, BatchingStrategy::Depth);
  EXPECT_EQ(groupsOf(plan), Groups({{3}, {0}, {1}, {2}}));
  EXPECT_EQ(verifyBatchingPlan(h, plan), "");
}

TEST(Scheduler, AgendaExactGroups) {
  BatchingGraph g = agendaLosesGraph();
  BatchingPlan plan = scheduleBatches(g, BatchingStrategy::Agenda);
  EXPECT_EQ(groupsOf(plan), Groups({{0, 5}, {2}, {1}, {3}, {4}}));
  EXPECT_EQ(verifyBatchingPlan(g, plan), "");

  BatchingGraph h = agendaWinsGraph();
  plan = scheduleBatches(h, BatchingStrategy::Agenda);
  EXPECT_EQ(groupsOf(plan), Groups({{0}, {1}, {2, 3}}));
  EXPECT_EQ(verifyBatchingPlan(h, plan), "");
}

TEST(Scheduler, AgendaTieGoesToLowerSignature) {
  // Signatures 2 and 5 both have average depth 0.5; 2 must run first even
  // though its nodes have higher ids.
  BatchingGraph g;
  g.addNode(5, {});  // 0
  g.addNode(5, {0}); // 1
  g.addNode(2, {});  // 2
  g.addNode(2, {2}); // 3
  // Signature 2 keeps priority while it has ready nodes.
  BatchingPlan plan = scheduleBatches(g, BatchingStrategy::Agenda);
  EXPECT_EQ(groupsOf(plan), Groups({{2}, {3}, {0}, {1}}));
  // Depth orders by signature inside a depth level.
  plan = scheduleBatches(g, BatchingStrategy::Depth);
  EXPECT_EQ(groupsOf(plan), Groups({{2}, {0}, {3}, {1}}));
}

TEST(Scheduler, AgendaLaunchesAllReadyNodesOfASignature) {
  // Three independent A->B pairs plus a lone B: all A's run together, then
  // all B's (the lone B has been ready from the start).
  BatchingGraph g;
  for (int i = 0; i != 3; ++i) {
    NodeId a = g.addNode(A, {});
    g.addNode(B, {a});
  }
  g.addNode(B, {});
  BatchingPlan plan = scheduleBatches(g, BatchingStrategy::Agenda);
  EXPECT_EQ(groupsOf(plan), Groups({{0, 2, 4}, {1, 3, 5, 6}}));
}

TEST(Scheduler, EmptyGraph) {
  BatchingGraph g;
  for (BatchingStrategy s : kEveryBatchingStrategy) {
    BatchingPlan plan = scheduleBatches(g, s);
    EXPECT_EQ(plan.numGroups(), 0u);
    EXPECT_EQ(verifyBatchingPlan(g, plan), "");
  }
  EXPECT_EQ(launchLowerBound(g), 0u);
  EXPECT_TRUE(computeDepths(g).empty());
}

TEST(LaunchLowerBound, HandComputed) {
  EXPECT_EQ(launchLowerBound(agendaLosesGraph()), 4u); // A: 0-2, B: 1-4
  EXPECT_EQ(launchLowerBound(agendaWinsGraph()), 3u);  // A: 1, B: 2

  // A chain alternating A B A B A: A 3 + B 2.
  BatchingGraph chain;
  chain.addNode(A, {});
  for (NodeId n = 1; n != 5; ++n)
    chain.addNode(n % 2 ? B : A, {n - 1});
  EXPECT_EQ(launchLowerBound(chain), 5u);

  // Independent nodes: one launch per signature used; unused ids add
  // nothing.
  BatchingGraph flat;
  flat.addNode(0, {});
  flat.addNode(0, {});
  flat.addNode(7, {});
  EXPECT_EQ(launchLowerBound(flat), 2u);

  // Diamond 0:A -> 1:B, 2:A -> 3:A(1,2): A path 0-2-3 has 3 A's; B 1.
  BatchingGraph diamond;
  diamond.addNode(A, {});
  diamond.addNode(B, {0});
  diamond.addNode(A, {0});
  diamond.addNode(A, {1, 2});
  EXPECT_EQ(launchLowerBound(diamond), 4u);

  // Two A chains of lengths 2 and 3 joined by a C: max, not sum: 3 + 1.
  BatchingGraph two;
  NodeId x = two.addNode(A, {});
  x = two.addNode(A, {x});
  NodeId y = two.addNode(A, {});
  y = two.addNode(A, {y});
  y = two.addNode(A, {y});
  two.addNode(2, {x, y});
  EXPECT_EQ(launchLowerBound(two), 4u);
}

TEST(LaunchLowerBound, ManySignaturesShareBlocks) {
  // 20 signatures (more than one block of lanes), each a chain of length
  // s+1 interleaved with the others, all hanging off one root.
  BatchingGraph g;
  NodeId root = g.addNode(100, {});
  std::vector<NodeId> tail(20, root);
  uint64_t expected = 1;
  for (unsigned round = 0; round != 20; ++round)
    for (SignatureId s = 0; s != 20; ++s)
      if (round <= s)
        tail[s] = g.addNode(s, {tail[s]});
  for (SignatureId s = 0; s != 20; ++s)
    expected += s + 1;
  EXPECT_EQ(launchLowerBound(g), expected);
  EXPECT_EQ(launchLowerBound(g), referenceBound(g));
}

// A graph of 0:A, 1:A(0), 2:B(1), 3:B.
BatchingGraph checkerGraph() {
  BatchingGraph g;
  g.addNode(A, {});
  g.addNode(A, {0});
  g.addNode(B, {1});
  g.addNode(B, {});
  return g;
}

BatchingPlan makePlan(const Groups &groups) {
  BatchingPlan plan;
  for (const auto &group : groups) {
    for (NodeId n : group)
      plan.addToGroup(n);
    plan.endGroup();
  }
  return plan;
}

TEST(VerifyBatchingPlan, AcceptsValidPlan) {
  BatchingGraph g = checkerGraph();
  EXPECT_EQ(verifyBatchingPlan(g, makePlan({{0}, {1}, {2, 3}})), "");
  EXPECT_EQ(verifyBatchingPlan(g, makePlan({{3}, {0}, {1}, {2}})), "");
}

TEST(VerifyBatchingPlan, DetectsDependencyAfterUse) {
  BatchingGraph g = checkerGraph();
  std::string error = verifyBatchingPlan(g, makePlan({{0}, {2, 3}, {1}}));
  EXPECT_NE(error.find("node 2 (group 1) depends on node 1 (group 2)"),
            std::string::npos)
      << error;
}

TEST(VerifyBatchingPlan, DetectsDependencyInSameGroup) {
  BatchingGraph g = checkerGraph();
  std::string error = verifyBatchingPlan(g, makePlan({{0, 1}, {2, 3}}));
  EXPECT_NE(error.find("node 1 (group 0) depends on node 0 (group 0)"),
            std::string::npos)
      << error;
}

TEST(VerifyBatchingPlan, DetectsMixedSignatures) {
  BatchingGraph g = checkerGraph();
  std::string error = verifyBatchingPlan(g, makePlan({{0, 3}, {1}, {2}}));
  EXPECT_NE(error.find("group 0 mixes signatures"), std::string::npos) << error;
}

TEST(VerifyBatchingPlan, DetectsMissingNode) {
  BatchingGraph g = checkerGraph();
  std::string error = verifyBatchingPlan(g, makePlan({{0}, {1}, {2}}));
  EXPECT_EQ(error, "node 3 is in no group");
}

TEST(VerifyBatchingPlan, DetectsDuplicateNode) {
  BatchingGraph g = checkerGraph();
  std::string error = verifyBatchingPlan(g, makePlan({{0}, {1}, {2, 3}, {3}}));
  EXPECT_EQ(error, "node 3 is in group 2 and again in group 3");
}

TEST(VerifyBatchingPlan, DetectsOutOfRangeEmptyAndUnsorted) {
  BatchingGraph g = checkerGraph();
  EXPECT_NE(verifyBatchingPlan(g, makePlan({{0}, {1}, {2, 3}, {4}}))
                .find("names node 4"),
            std::string::npos);
  EXPECT_EQ(verifyBatchingPlan(g, makePlan({{0}, {}, {1}, {2, 3}})),
            "group 1 is empty");
  EXPECT_NE(verifyBatchingPlan(g, makePlan({{0}, {1}, {3, 2}}))
                .find("not in increasing id order"),
            std::string::npos);
}

} // namespace
