//===- LaunchWalk.h - From a BatchingPlan to launches and their rows -*- C++
//-*-===//
//
// Both consumers of a BatchingPlan turn it into launches the same way: the
// dynb-batch pass, which emits IR, and the Engine's run path, which
// assembles a runtime plan with no MLIR. Groups launch in plan order; node k
// of a group is row k of its group's launch; each operand position of a
// group stacks the rows its nodes read; and a stack that takes every row of
// one launch's result, in order, is that result itself rather than a
// gather. The walk is here once so that the two agree launch for launch
// (tests/unit/engine/FrontEndParityTest.cpp compares them).
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_BATCHING_LAUNCHWALK_H
#define DYNB_BATCHING_LAUNCHWALK_H

#include "dynb/Batching/Scheduler.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace dynb {

/// Result `result` of node `node`.
struct NodeResult {
  NodeId node;
  uint32_t result;
};

/// Where a launched node's results are: row `row` of group `group`'s launch.
struct LaunchRow {
  uint32_t group;
  uint32_t row;
};

/// Result `result` of group `group`'s launch: a batched value.
struct LaunchResult {
  uint32_t group;
  uint32_t result;
};

/// Rows stacked into one batched value: row i is row `pairs[2i+1]` of
/// `sources[pairs[2i]]` (the layout of dynb.gather's `rows`).
struct StackedRows {
  /// Distinct sources, in first-use order.
  llvm::SmallVector<LaunchResult, 4> sources;
  llvm::SmallVector<int64_t, 16> pairs;
  /// Every row of sources[0] in order: the value is that launch result
  /// itself, and no gather is needed.
  bool identity = false;
};

class LaunchWalk {
public:
  LaunchWalk(const BatchingPlan &plan, size_t numNodes)
      : plan_(plan), placement_(numNodes) {}

  const BatchingPlan &plan() const { return plan_; }

  /// Walks the groups in launch order. `builder` provides
  ///   void beginGroup(size_t group, llvm::ArrayRef<NodeId> nodes);
  ///   unsigned numOperands(NodeId);
  ///   NodeResult operand(NodeId, unsigned position);
  ///   void addOperand(const StackedRows &);   // position 0, 1, ... in turn
  ///   void launch(size_t group, llvm::ArrayRef<NodeId> nodes);
  /// For each group, addOperand receives the stacked rows of each operand
  /// position of its nodes (all of one signature, so one operand count),
  /// then launch is called; afterwards the group's nodes are placed.
  template <typename Builder> void run(Builder &builder);

  /// The rows `results` (of nodes already launched) as one batched value.
  /// The returned reference is valid until the next call.
  const StackedRows &stack(llvm::ArrayRef<NodeResult> results);

  LaunchRow placement(NodeId n) const { return placement_[n]; }
  /// Every node's placement, for use after the walk (which it ends).
  llvm::SmallVector<LaunchRow, 0> takePlacement() {
    return std::move(placement_);
  }

private:
  void place(size_t group);

  const BatchingPlan &plan_;
  llvm::SmallVector<LaunchRow, 0> placement_;
  StackedRows stacked_;
  llvm::SmallVector<NodeResult, 64> rows_;
  llvm::SmallDenseMap<uint64_t, unsigned, 8> sourceIndex_;
};

template <typename Builder> void LaunchWalk::run(Builder &builder) {
  for (size_t g = 0, e = plan_.numGroups(); g < e; ++g) {
    llvm::ArrayRef<NodeId> group = plan_.group(g);
    builder.beginGroup(g, group);
    unsigned numOperands = builder.numOperands(group.front());
    for (unsigned p = 0; p < numOperands; ++p) {
      rows_.clear();
      for (NodeId id : group)
        rows_.push_back(builder.operand(id, p));
      builder.addOperand(stack(rows_));
    }
    builder.launch(g, group);
    place(g);
  }
}

} // namespace dynb

#endif // DYNB_BATCHING_LAUNCHWALK_H
