//===- TestGraphs.h - Graph builders and reference schedulers for tests ---===//
//
// Random DAGs, TreeLSTM-shaped forests, and deliberately naive reference
// implementations of the strategies and of the bound, against which the
// library's fast versions are compared.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_TESTS_UNIT_BATCHING_TESTGRAPHS_H
#define DYNB_TESTS_UNIT_BATCHING_TESTGRAPHS_H

#include "dynb/Batching/Scheduler.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace dynb::test {

using Groups = std::vector<std::vector<NodeId>>;

inline Groups groupsOf(const BatchingPlan &plan) {
  Groups groups;
  for (size_t g = 0; g != plan.numGroups(); ++g)
    groups.emplace_back(plan.group(g).begin(), plan.group(g).end());
  return groups;
}

/// A random DAG: each node draws its signature uniformly and 0..maxDeps
/// dependencies (with repetition) among the `window` nodes before it; a
/// small window makes deep graphs, a large one shallow and wide.
inline BatchingGraph randomDag(unsigned seed, unsigned numNodes,
                               unsigned numSigs, unsigned maxDeps,
                               unsigned window) {
  std::mt19937 rng(seed);
  BatchingGraph graph;
  llvm::SmallVector<NodeId, 8> deps;
  for (unsigned n = 0; n != numNodes; ++n) {
    deps.clear();
    if (n != 0) {
      unsigned numDeps =
          std::uniform_int_distribution<unsigned>(0, maxDeps)(rng);
      unsigned lo = n > window ? n - window : 0;
      std::uniform_int_distribution<unsigned> pick(lo, n - 1);
      for (unsigned i = 0; i != numDeps; ++i)
        deps.push_back(pick(rng));
    }
    graph.addNode(std::uniform_int_distribution<unsigned>(0, numSigs - 1)(rng),
                  deps);
  }
  return graph;
}

/// Signatures of a TreeLSTM batch.
enum TreeSig : SignatureId { kEmbedding = 0, kLeafCell = 1, kInternalCell = 2 };

/// Appends one tree in post-order from a shift/reduce sequence: `true`
/// shifts a leaf (an embedding node, then a leaf cell using it), `false`
/// reduces the top two subtrees into an internal cell. Returns the root.
inline NodeId appendTree(BatchingGraph &graph, const std::vector<bool> &ops) {
  llvm::SmallVector<NodeId, 32> stack;
  for (bool shift : ops) {
    if (shift) {
      NodeId emb = graph.addNode(kEmbedding, {});
      stack.push_back(graph.addNode(kLeafCell, {emb}));
      continue;
    }
    NodeId right = stack.pop_back_val();
    NodeId left = stack.pop_back_val();
    // Inputs [h_left, c_left, h_right, c_right]: each child twice.
    stack.push_back(graph.addNode(kInternalCell, {left, left, right, right}));
  }
  assert(stack.size() == 1 && "not one tree");
  return stack.back();
}

/// Shift/reduce sequence of a balanced tree of 2^k leaves: after leaf i
/// (counting from 1), reduce as often as i has trailing zero bits.
inline std::vector<bool> balancedTreeOps(unsigned k) {
  std::vector<bool> ops;
  for (uint64_t i = 1; i <= (uint64_t(1) << k); ++i) {
    ops.push_back(true);
    for (uint64_t j = i; (j & 1) == 0; j >>= 1)
      ops.push_back(false);
  }
  return ops;
}

/// A uniformly random valid shift/reduce sequence of `leaves` leaves.
inline std::vector<bool> randomTreeOps(std::mt19937 &rng, unsigned leaves) {
  std::vector<bool> ops;
  unsigned shifted = 0, onStack = 0;
  while (shifted < leaves || onStack > 1) {
    bool canShift = shifted < leaves, canReduce = onStack >= 2;
    bool shift = canShift && (!canReduce || (rng() & 1));
    ops.push_back(shift);
    if (shift) {
      ++shifted;
      ++onStack;
    } else {
      --onStack;
    }
  }
  return ops;
}

/// Left-leaning caterpillar: depth grows linearly with the leaf count.
inline std::vector<bool> caterpillarTreeOps(unsigned leaves) {
  std::vector<bool> ops = {true};
  for (unsigned i = 1; i < leaves; ++i) {
    ops.push_back(true);
    ops.push_back(false);
  }
  return ops;
}

/// Depth strategy via a map keyed by (depth, signature).
inline Groups referenceDepth(const BatchingGraph &graph) {
  std::vector<unsigned> depth(graph.size(), 0);
  std::map<std::pair<unsigned, SignatureId>, std::vector<NodeId>> buckets;
  for (NodeId n = 0; n != graph.size(); ++n) {
    for (NodeId d : graph.deps(n))
      depth[n] = std::max(depth[n], depth[d] + 1);
    buckets[{depth[n], graph.signature(n)}].push_back(n);
  }
  Groups groups;
  for (auto &entry : buckets)
    groups.push_back(entry.second);
  return groups;
}

/// Agenda by rescanning every node at every step (quadratic).
inline Groups referenceAgenda(const BatchingGraph &graph) {
  std::vector<unsigned> depth(graph.size(), 0);
  std::vector<double> sum(graph.numSignatures(), 0),
      cnt(graph.numSignatures(), 0);
  for (NodeId n = 0; n != graph.size(); ++n) {
    for (NodeId d : graph.deps(n))
      depth[n] = std::max(depth[n], depth[d] + 1);
    sum[graph.signature(n)] += depth[n];
    cnt[graph.signature(n)] += 1;
  }
  std::vector<bool> launched(graph.size(), false);
  size_t numLaunched = 0;
  Groups groups;
  while (numLaunched != graph.size()) {
    std::vector<std::vector<NodeId>> ready(graph.numSignatures());
    for (NodeId n = 0; n != graph.size(); ++n) {
      if (launched[n])
        continue;
      bool ok = true;
      for (NodeId d : graph.deps(n))
        ok = ok && launched[d];
      if (ok)
        ready[graph.signature(n)].push_back(n);
    }
    int best = -1;
    for (SignatureId s = 0; s != graph.numSignatures(); ++s) {
      if (ready[s].empty())
        continue;
      if (best < 0 || sum[s] / cnt[s] < sum[best] / cnt[best])
        best = s;
    }
    for (NodeId n : ready[best])
      launched[n] = true;
    numLaunched += ready[best].size();
    groups.push_back(ready[best]);
  }
  return groups;
}

/// The bound with a full nodes x signatures table.
inline uint64_t referenceBound(const BatchingGraph &graph) {
  size_t numSigs = graph.numSignatures();
  std::vector<std::vector<unsigned>> chain(graph.size(),
                                           std::vector<unsigned>(numSigs, 0));
  std::vector<unsigned> best(numSigs, 0);
  for (NodeId n = 0; n != graph.size(); ++n) {
    for (NodeId d : graph.deps(n))
      for (size_t s = 0; s != numSigs; ++s)
        chain[n][s] = std::max(chain[n][s], chain[d][s]);
    ++chain[n][graph.signature(n)];
    for (size_t s = 0; s != numSigs; ++s)
      best[s] = std::max(best[s], chain[n][s]);
  }
  uint64_t bound = 0;
  for (unsigned b : best)
    bound += b;
  return bound;
}

/// Number of groups of a plan whose signature is `sig`.
inline size_t groupsWithSignature(const BatchingGraph &graph,
                                  const BatchingPlan &plan, SignatureId sig) {
  size_t count = 0;
  for (size_t g = 0; g != plan.numGroups(); ++g)
    count += graph.signature(plan.group(g).front()) == sig;
  return count;
}

} // namespace dynb::test

#endif // DYNB_TESTS_UNIT_BATCHING_TESTGRAPHS_H
