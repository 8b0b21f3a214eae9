//===- BatchingGraph.cpp - Nodes with signatures and dependencies ---------===//
//
// Storage of the batching algorithm's input graph (CSR dependencies).
//
//===----------------------------------------------------------------------===//
#include "dynb/Batching/BatchingGraph.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>
#include <limits>

using namespace dynb;

NodeId BatchingGraph::addNode(SignatureId signature,
                              llvm::ArrayRef<NodeId> deps) {
  assert(signatures_.size() < std::numeric_limits<NodeId>::max() &&
         "too many nodes for a 32-bit node id");
  assert(signature < std::numeric_limits<SignatureId>::max() &&
         "signature id reserved");
  NodeId id = static_cast<NodeId>(signatures_.size());
  // Producers check this and report located errors; here it is a contract.
  assert(llvm::all_of(deps, [&](NodeId d) { return d < id; }) &&
         "a dependency must be added before its user");
  assert(deps_.size() + deps.size() <= std::numeric_limits<uint32_t>::max() &&
         "too many edges for 32-bit offsets");
  signatures_.push_back(signature);
  deps_.append(deps.begin(), deps.end());
  depStart_.push_back(static_cast<uint32_t>(deps_.size()));
  numSignatures_ = std::max(numSignatures_, signature + 1);
  return id;
}

void BatchingGraph::reserve(size_t nodes, size_t edges) {
  signatures_.reserve(nodes);
  depStart_.reserve(nodes + 1);
  deps_.reserve(edges);
}

void BatchingGraph::clear() {
  signatures_.clear();
  depStart_.assign(1, 0);
  deps_.clear();
  numSignatures_ = 0;
}

void BatchingGraph::renumberSignaturesByFirstUse() {
  constexpr SignatureId unseen = std::numeric_limits<SignatureId>::max();
  llvm::SmallVector<SignatureId, 0> newId(numSignatures_, unseen);
  SignatureId next = 0;
  for (SignatureId &s : signatures_) {
    if (newId[s] == unseen)
      newId[s] = next++;
    s = newId[s];
  }
  numSignatures_ = next;
}
