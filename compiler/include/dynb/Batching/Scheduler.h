//===- Scheduler.h - Groups nodes into batched launches, in order ---------===//
//
// The one batching algorithm of dynb: given a BatchingGraph, produce groups
// of same-signature nodes and an order in which every group's dependencies
// run in earlier groups.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_BATCHING_SCHEDULER_H
#define DYNB_BATCHING_SCHEDULER_H

#include "dynb/Batching/BatchingGraph.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace dynb {

enum class BatchingStrategy {
  /// One launch per node, in node order: the naive baseline.
  None,
  /// Group by (depth, signature), depth = longest path from a node without
  /// dependencies (TensorFlow Fold's dynamic batching).
  Depth,
  /// DyNet's agenda: repeatedly launch every ready node of the ready
  /// signature whose nodes have the lowest average depth.
  Agenda,
};

/// Every strategy, in declaration order: what `--strategy=all` runs and
/// what the tests check against the reference.
inline constexpr BatchingStrategy kEveryBatchingStrategy[] = {
    BatchingStrategy::None, BatchingStrategy::Depth, BatchingStrategy::Agenda};

llvm::StringRef toString(BatchingStrategy s);
std::optional<BatchingStrategy> parseBatchingStrategy(llvm::StringRef name);

/// Groups in launch order. Group g is nodes()[groupStart(g) ..
/// groupStart(g+1)); inside a group, nodes are in increasing id order.
class BatchingPlan {
public:
  size_t numGroups() const { return groupStarts_.size() - 1; }
  llvm::ArrayRef<NodeId> group(size_t g) const {
    return llvm::ArrayRef<NodeId>(order_).slice(
        groupStarts_[g], groupStarts_[g + 1] - groupStarts_[g]);
  }
  llvm::ArrayRef<NodeId> nodes() const { return order_; }

  void addToGroup(NodeId n) { order_.push_back(n); }
  void endGroup() { groupStarts_.push_back(order_.size()); }

private:
  llvm::SmallVector<NodeId, 0> order_;
  llvm::SmallVector<uint32_t, 0> groupStarts_ = {0};
};

/// depth(n) = 0 for a node without dependencies, else 1 + max depth of its
/// dependencies.
llvm::SmallVector<uint32_t, 0> computeDepths(const BatchingGraph &graph);

/// Schedules the graph. Every strategy returns each node exactly once, in an
/// order that respects dependencies, with every group of one signature.
BatchingPlan scheduleBatches(const BatchingGraph &graph,
                             BatchingStrategy strategy);

/// The lower bound on launches: for each signature, the largest number of
/// nodes of that signature on any one dependency path, summed over
/// signatures. No schedule can launch fewer groups.
uint64_t launchLowerBound(const BatchingGraph &graph);

/// Checks a plan against the graph (each node once, dependencies earlier,
/// one signature per group). Returns an empty string when valid, else what
/// is wrong; used by tests and by the pass in assertion builds.
std::string verifyBatchingPlan(const BatchingGraph &graph,
                               const BatchingPlan &plan);

} // namespace dynb

#endif // DYNB_BATCHING_SCHEDULER_H
