//===- BatchingGraph.h - Nodes with signatures and dependencies -----------===//
//
// The input of the batching algorithm: nothing but nodes, each with a
// signature id (nodes of equal id compute the same function and may share a
// launch) and the nodes it depends on. It knows nothing of MLIR, so the MLIR
// pass and the embedded API's fast path feed the same code.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_BATCHING_BATCHINGGRAPH_H
#define DYNB_BATCHING_BATCHINGGRAPH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace dynb {

using NodeId = uint32_t;
using SignatureId = uint32_t;

/// Nodes are added in a topological order: every dependency of a node has a
/// smaller id. Dependencies are stored in one flat array (CSR).
class BatchingGraph {
public:
  /// Adds a node; every id in `deps` must be smaller than the new node's id
  /// (asserted; producers check this and report located errors).
  NodeId addNode(SignatureId signature, llvm::ArrayRef<NodeId> deps);

  size_t size() const { return signatures_.size(); }
  SignatureId signature(NodeId n) const { return signatures_[n]; }
  llvm::ArrayRef<NodeId> deps(NodeId n) const {
    return llvm::ArrayRef<NodeId>(deps_).slice(depStart_[n],
                                               depStart_[n + 1] - depStart_[n]);
  }
  /// One past the largest signature id used.
  SignatureId numSignatures() const { return numSignatures_; }
  void reserve(size_t nodes, size_t edges);
  /// Renumbers the signatures 0, 1, 2, ... in the order their first nodes
  /// were added. Schedules order a depth's groups by signature id, so two
  /// producers that number signatures differently (the dynb-batch pass
  /// interns them in program order; the Engine keeps model-wide ids) get
  /// the same schedule, and the same plan, once both are in this order.
  /// Producers that keep adding nodes with their own ids afterwards
  /// renumber a copy.
  void renumberSignaturesByFirstUse();
  void clear();

private:
  llvm::SmallVector<SignatureId, 0> signatures_;
  llvm::SmallVector<uint32_t, 0> depStart_ = {0};
  llvm::SmallVector<NodeId, 0> deps_;
  SignatureId numSignatures_ = 0;
};

} // namespace dynb

#endif // DYNB_BATCHING_BATCHINGGRAPH_H
