//===- BatchingGraphTest.cpp - Tests of the batching input graph ----------===//
#include "dynb/Batching/BatchingGraph.h"
#include "dynb/Batching/Scheduler.h"

#include "gtest/gtest.h"

using namespace dynb;

namespace {

TEST(BatchingGraph, StoresSignaturesAndDeps) {
  BatchingGraph graph;
  EXPECT_EQ(graph.size(), 0u);
  EXPECT_EQ(graph.numSignatures(), 0u);
  EXPECT_EQ(graph.addNode(3, {}), 0u);
  EXPECT_EQ(graph.addNode(1, {0}), 1u);
  EXPECT_EQ(graph.addNode(3, {1, 0, 1}), 2u);
  ASSERT_EQ(graph.size(), 3u);
  EXPECT_EQ(graph.numSignatures(), 4u);
  EXPECT_EQ(graph.signature(0), 3u);
  EXPECT_EQ(graph.signature(1), 1u);
  EXPECT_TRUE(graph.deps(0).empty());
  EXPECT_EQ(graph.deps(1).vec(), std::vector<NodeId>({0}));
  EXPECT_EQ(graph.deps(2).vec(), std::vector<NodeId>({1, 0, 1}));
}

TEST(BatchingGraph, ClearAndReuse) {
  BatchingGraph graph;
  graph.reserve(10, 10);
  graph.addNode(7, {});
  graph.addNode(7, {0});
  graph.clear();
  EXPECT_EQ(graph.size(), 0u);
  EXPECT_EQ(graph.numSignatures(), 0u);
  EXPECT_EQ(graph.addNode(0, {}), 0u);
  EXPECT_EQ(graph.addNode(1, {0}), 1u);
  EXPECT_EQ(graph.numSignatures(), 2u);
  EXPECT_EQ(graph.deps(1).vec(), std::vector<NodeId>({0}));
}

TEST(BatchingStrategy, NamesRoundTrip) {
  for (BatchingStrategy s : kEveryBatchingStrategy)
    EXPECT_EQ(parseBatchingStrategy(toString(s)), s);
  EXPECT_EQ(toString(BatchingStrategy::None), "none");
  EXPECT_EQ(toString(BatchingStrategy::Depth), "depth");
  EXPECT_EQ(toString(BatchingStrategy::Agenda), "agenda");
  EXPECT_FALSE(parseBatchingStrategy("Depth"));
  EXPECT_FALSE(parseBatchingStrategy(""));
  EXPECT_FALSE(parseBatchingStrategy("fold"));
}

} // namespace
