//===- Scheduler.cpp - Groups nodes into batched launches, in order -------===//
//
// The none, depth and agenda strategies, the launch lower bound and the plan
// checker. Everything is iterative and near-linear: graphs come from batches
// of instances and can be 100,000 nodes deep.
//
//===----------------------------------------------------------------------===//
#include "dynb/Batching/Scheduler.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <limits>
#include <string>

using namespace dynb;

namespace {
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
} // namespace

llvm::StringRef dynb::toString(BatchingStrategy s) {
  switch (s) {
  case BatchingStrategy::None:
    return "none";
  case BatchingStrategy::Depth:
    return "depth";
  case BatchingStrategy::Agenda:
    return "agenda";
  }
  llvm_unreachable("unknown batching strategy");
}

std::optional<BatchingStrategy>
dynb::parseBatchingStrategy(llvm::StringRef name) {
  if (name == "none")
    return BatchingStrategy::None;
  if (name == "depth")
    return BatchingStrategy::Depth;
  if (name == "agenda")
    return BatchingStrategy::Agenda;
  return std::nullopt;
}

llvm::SmallVector<uint32_t, 0> dynb::computeDepths(const BatchingGraph &graph) {
  // Node ids are a topological order, so one forward sweep suffices.
  llvm::SmallVector<uint32_t, 0> depth(graph.size(), 0);
  for (NodeId n = 0, e = graph.size(); n != e; ++n) {
    uint32_t d = 0;
    for (NodeId dep : graph.deps(n))
      d = std::max(d, depth[dep] + 1);
    depth[n] = d;
  }
  return depth;
}

static BatchingPlan scheduleNone(const BatchingGraph &graph) {
  BatchingPlan plan;
  for (NodeId n = 0, e = graph.size(); n != e; ++n) {
    plan.addToGroup(n);
    plan.endGroup();
  }
  return plan;
}

static BatchingPlan scheduleDepth(const BatchingGraph &graph) {
  const size_t numNodes = graph.size();
  BatchingPlan plan;
  if (numNodes == 0)
    return plan;
  llvm::SmallVector<uint32_t, 0> depth = computeDepths(graph);
  uint32_t maxDepth = *std::max_element(depth.begin(), depth.end());

  // Two stable counting sorts (by signature, then by depth) order the nodes
  // by (depth, signature, id) in O(nodes + depths + signatures), without a
  // map keyed by the pair.
  llvm::SmallVector<uint32_t, 0> bySig(numNodes);
  {
    llvm::SmallVector<uint32_t, 0> start(graph.numSignatures() + 1, 0);
    for (NodeId n = 0; n != numNodes; ++n)
      ++start[graph.signature(n) + 1];
    for (size_t s = 1; s < start.size(); ++s)
      start[s] += start[s - 1];
    for (NodeId n = 0; n != numNodes; ++n)
      bySig[start[graph.signature(n)]++] = n;
  }
  llvm::SmallVector<uint32_t, 0> sorted(numNodes);
  {
    llvm::SmallVector<uint32_t, 0> start(size_t(maxDepth) + 2, 0);
    for (NodeId n = 0; n != numNodes; ++n)
      ++start[depth[n] + 1];
    for (size_t d = 1; d < start.size(); ++d)
      start[d] += start[d - 1];
    for (NodeId n : bySig)
      sorted[start[depth[n]]++] = n;
  }

  for (size_t i = 0; i != numNodes; ++i) {
    NodeId n = sorted[i];
    if (i != 0) {
      NodeId prev = sorted[i - 1];
      if (depth[prev] != depth[n] ||
          graph.signature(prev) != graph.signature(n))
        plan.endGroup();
    }
    plan.addToGroup(n);
  }
  plan.endGroup();
  return plan;
}

static BatchingPlan scheduleAgenda(const BatchingGraph &graph) {
  const size_t numNodes = graph.size();
  const size_t numSigs = graph.numSignatures();
  BatchingPlan plan;
  if (numNodes == 0)
    return plan;
  llvm::SmallVector<uint32_t, 0> depth = computeDepths(graph);

  // Average depth per signature, computed once. Signatures are ranked by it
  // (ties: lower id); the averages are compared as exact fractions so that
  // equal averages tie regardless of rounding.
  llvm::SmallVector<uint64_t, 0> depthSum(numSigs, 0);
  llvm::SmallVector<uint64_t, 0> count(numSigs, 0);
  for (NodeId n = 0; n != numNodes; ++n) {
    depthSum[graph.signature(n)] += depth[n];
    ++count[graph.signature(n)];
  }
  llvm::SmallVector<SignatureId, 0> rankToSig;
  for (SignatureId s = 0; s != numSigs; ++s)
    if (count[s] != 0)
      rankToSig.push_back(s);
  llvm::stable_sort(rankToSig, [&](SignatureId a, SignatureId b) {
    // Quotients first, then remainders cross-multiplied: every factor is
    // below 2^32, so nothing overflows, unlike sum * count.
    uint64_t qa = depthSum[a] / count[a], qb = depthSum[b] / count[b];
    if (qa != qb)
      return qa < qb;
    return (depthSum[a] % count[a]) * count[b] <
           (depthSum[b] % count[b]) * count[a];
  });
  llvm::SmallVector<uint32_t, 0> sigRank(numSigs, kNone);
  for (uint32_t r = 0, e = rankToSig.size(); r != e; ++r)
    sigRank[rankToSig[r]] = r;

  // Remaining dependencies per node, and the reverse edges in CSR form.
  llvm::SmallVector<uint32_t, 0> pending(numNodes);
  llvm::SmallVector<uint32_t, 0> userStart(numNodes + 1, 0);
  for (NodeId n = 0; n != numNodes; ++n) {
    llvm::ArrayRef<NodeId> deps = graph.deps(n);
    pending[n] = deps.size();
    for (NodeId d : deps)
      ++userStart[d + 1];
  }
  for (size_t n = 1; n <= numNodes; ++n)
    userStart[n] += userStart[n - 1];
  llvm::SmallVector<NodeId, 0> users(userStart[numNodes]);
  {
    llvm::SmallVector<uint32_t, 0> fill(userStart.begin(), userStart.end() - 1);
    for (NodeId n = 0; n != numNodes; ++n)
      for (NodeId d : graph.deps(n))
        users[fill[d]++] = n;
  }

  // Ready nodes per signature, and a min-heap of the ranks of signatures
  // with ready nodes (each signature in it at most once).
  llvm::SmallVector<llvm::SmallVector<NodeId, 0>, 0> ready(numSigs);
  llvm::SmallVector<uint32_t, 0> heap;
  llvm::SmallVector<bool, 0> inHeap(numSigs, false);
  auto heapGreater = std::greater<uint32_t>();
  auto makeReady = [&](NodeId n) {
    SignatureId s = graph.signature(n);
    ready[s].push_back(n);
    if (!inHeap[s]) {
      inHeap[s] = true;
      heap.push_back(sigRank[s]);
      std::push_heap(heap.begin(), heap.end(), heapGreater);
    }
  };
  for (NodeId n = 0; n != numNodes; ++n)
    if (pending[n] == 0)
      makeReady(n);

  llvm::SmallVector<NodeId, 0> batch;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), heapGreater);
    SignatureId s = rankToSig[heap.back()];
    heap.pop_back();
    inHeap[s] = false;
    // Take the whole ready set; nodes of s that become ready while it is
    // launched go into a fresh set and a later group.
    batch.clear();
    std::swap(batch, ready[s]);
    llvm::sort(batch);
    for (NodeId n : batch)
      plan.addToGroup(n);
    plan.endGroup();
    for (NodeId n : batch)
      for (uint32_t u = userStart[n], ue = userStart[n + 1]; u != ue; ++u)
        if (--pending[users[u]] == 0)
          makeReady(users[u]);
  }
  assert(plan.nodes().size() == numNodes && "a node was never ready");
  return plan;
}

BatchingPlan dynb::scheduleBatches(const BatchingGraph &graph,
                                   BatchingStrategy strategy) {
  switch (strategy) {
  case BatchingStrategy::None:
    return scheduleNone(graph);
  case BatchingStrategy::Depth:
    return scheduleDepth(graph);
  case BatchingStrategy::Agenda:
    return scheduleAgenda(graph);
  }
  llvm::report_fatal_error("unknown batching strategy");
}

namespace {
/// Per-signature facts the bound needs: where its nodes start and end in id
/// order, and how many there are.
struct SignatureSpan {
  uint32_t first = kNone, last = 0, count = 0;
};
} // namespace

/// The bound's DP for `sigs` (at most Lanes signatures) in one sweep:
/// chain[n][k] = max over deps of chain[dep][k] + [sig(n) == sigs[k]]. The
/// values only change inside the union of the signatures' spans and peak at
/// one of their nodes, so the sweep covers that window only. `chain` is
/// reused across calls; rows below the window are stale and read as zero.
template <unsigned Lanes>
static uint64_t boundForBlock(const BatchingGraph &graph,
                              llvm::ArrayRef<SignatureId> sigs,
                              llvm::ArrayRef<SignatureSpan> spans,
                              llvm::MutableArrayRef<uint32_t> laneOf,
                              llvm::SmallVectorImpl<uint32_t> &chain) {
  assert(sigs.size() <= Lanes && "block too wide");
  if (chain.size() < graph.size() * Lanes)
    chain.resize(graph.size() * Lanes);
  uint32_t lo = kNone, hi = 0;
  for (size_t k = 0; k != sigs.size(); ++k) {
    laneOf[sigs[k]] = k;
    lo = std::min(lo, spans[sigs[k]].first);
    hi = std::max(hi, spans[sigs[k]].last);
  }
  uint32_t best[Lanes] = {0};
  for (NodeId n = lo; n <= hi; ++n) {
    uint32_t *v = &chain[size_t(n) * Lanes];
    std::fill(v, v + Lanes, 0);
    for (NodeId d : graph.deps(n)) {
      if (d < lo)
        continue;
      // Fixed width, so the compiler turns this into a few vector maxes.
      const uint32_t *w = &chain[size_t(d) * Lanes];
      for (unsigned k = 0; k != Lanes; ++k)
        v[k] = std::max(v[k], w[k]);
    }
    uint32_t lane = laneOf[graph.signature(n)];
    if (lane != kNone) {
      ++v[lane];
      best[lane] = std::max(best[lane], v[lane]);
    }
  }
  uint64_t sum = 0;
  for (size_t k = 0; k != sigs.size(); ++k) {
    sum += best[k];
    laneOf[sigs[k]] = kNone;
  }
  return sum;
}

uint64_t dynb::launchLowerBound(const BatchingGraph &graph) {
  const size_t numSigs = graph.numSignatures();
  llvm::SmallVector<SignatureSpan, 0> spans(numSigs);
  for (NodeId n = 0, e = graph.size(); n != e; ++n) {
    SignatureSpan &span = spans[graph.signature(n)];
    if (span.first == kNone)
      span.first = n;
    span.last = n;
    ++span.count;
  }

  // A signature with at most one node contributes its count. The others go
  // through the DP in blocks of up to 16 signatures, so one sweep over the
  // edges serves many signatures with memory O(nodes * 16); sorting them by
  // first node keeps each block's window tight.
  uint64_t bound = 0;
  llvm::SmallVector<SignatureId, 0> multi;
  for (SignatureId s = 0; s != numSigs; ++s) {
    if (spans[s].count <= 1)
      bound += spans[s].count;
    else
      multi.push_back(s);
  }
  llvm::sort(multi, [&](SignatureId a, SignatureId b) {
    return spans[a].first < spans[b].first;
  });

  llvm::SmallVector<uint32_t, 0> chain;
  llvm::SmallVector<uint32_t, 0> laneOf(numSigs, kNone);
  llvm::ArrayRef<SignatureId> rest = multi;
  while (!rest.empty()) {
    // Few signatures (the common case: a handful of cell types) get narrow
    // lanes and a small array.
    if (rest.size() <= 4) {
      bound += boundForBlock<4>(graph, rest, spans, laneOf, chain);
      break;
    }
    size_t width = std::min<size_t>(16, rest.size());
    bound +=
        boundForBlock<16>(graph, rest.take_front(width), spans, laneOf, chain);
    rest = rest.drop_front(width);
  }
  return bound;
}

std::string dynb::verifyBatchingPlan(const BatchingGraph &graph,
                                     const BatchingPlan &plan) {
  std::string error;
  llvm::raw_string_ostream os(error);
  const size_t numNodes = graph.size();
  llvm::SmallVector<uint32_t, 0> groupOf(numNodes, kNone);

  for (size_t g = 0, ge = plan.numGroups(); g != ge; ++g) {
    llvm::ArrayRef<NodeId> group = plan.group(g);
    if (group.empty()) {
      os << "group " << g << " is empty";
      return os.str();
    }
    for (size_t i = 0; i != group.size(); ++i) {
      NodeId n = group[i];
      if (n >= numNodes) {
        os << "group " << g << " names node " << n << ", but the graph has "
           << numNodes << " nodes";
        return os.str();
      }
      if (groupOf[n] != kNone) {
        os << "node " << n << " is in group " << groupOf[n]
           << " and again in group " << g;
        return os.str();
      }
      groupOf[n] = g;
      if (graph.signature(n) != graph.signature(group[0])) {
        os << "group " << g << " mixes signatures: node " << group[0] << " has "
           << graph.signature(group[0]) << ", node " << n << " has "
           << graph.signature(n);
        return os.str();
      }
      if (i != 0 && group[i - 1] >= n) {
        os << "group " << g << " is not in increasing id order: node "
           << group[i - 1] << " before node " << n;
        return os.str();
      }
    }
  }
  for (NodeId n = 0; n != numNodes; ++n) {
    if (groupOf[n] == kNone) {
      os << "node " << n << " is in no group";
      return os.str();
    }
    for (NodeId d : graph.deps(n)) {
      if (groupOf[d] >= groupOf[n]) {
        os << "node " << n << " (group " << groupOf[n] << ") depends on node "
           << d << " (group " << groupOf[d] << "), which does not run before";
        return os.str();
      }
    }
  }
  return os.str();
}
