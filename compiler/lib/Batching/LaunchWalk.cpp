//===- LaunchWalk.cpp - From a BatchingPlan to launches and their rows ----===//
#include "dynb/Batching/LaunchWalk.h"

using namespace dynb;

const StackedRows &LaunchWalk::stack(llvm::ArrayRef<NodeResult> results) {
  StackedRows &out = stacked_;
  out.sources.clear();
  out.pairs.clear();
  sourceIndex_.clear();
  bool inOrder = true;
  for (auto [i, ref] : llvm::enumerate(results)) {
    LaunchRow at = placement_[ref.node];
    uint64_t key = uint64_t(at.group) << 32 | ref.result;
    auto [it, inserted] = sourceIndex_.try_emplace(key, out.sources.size());
    if (inserted)
      out.sources.push_back({at.group, ref.result});
    out.pairs.push_back(it->second);
    out.pairs.push_back(at.row);
    inOrder &= it->second == 0 && at.row == i;
  }
  out.identity =
      inOrder && out.sources.size() == 1 &&
      plan_.group(out.sources.front().group).size() == results.size();
  return out;
}

void LaunchWalk::place(size_t group) {
  for (auto [row, id] : llvm::enumerate(plan_.group(group)))
    placement_[id] = {uint32_t(group), uint32_t(row)};
}
