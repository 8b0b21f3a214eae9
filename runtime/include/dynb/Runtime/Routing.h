//===- Routing.h - Top-k gating and grouping of rows by expert ------------===//
//
// The data-dependent half of a dispatch step (Plan.h): which experts each
// row goes to, with which weight, and where its copy sits once rows are
// grouped by expert. MLIR-free and exposed so tests can hold it against
// hand-made cases (ties, empty experts, every row on one expert).
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_RUNTIME_ROUTING_H
#define DYNB_RUNTIME_ROUTING_H

#include <cstdint>
#include <vector>

namespace dynb::rt {

class ThreadPool;

/// The routing of `tokens` rows to `k` of `experts` experts each. Choice j of
/// token t is pair p = t * k + j; choices are ordered by descending logit.
/// Buffers are reused across calls (they only grow), so routing a familiar
/// shape allocates nothing.
struct Routing {
  int64_t tokens = 0, experts = 0, k = 0;
  std::vector<int32_t> expertOf; // [tokens * k]: the expert of pair p
  std::vector<float> gateOf;     // [tokens * k]: its softmax weight
  /// [experts + 1]: expert e's rows are [offsets[e], offsets[e + 1]) of the
  /// expert order (a stable counting sort: token order within an expert).
  std::vector<int64_t> offsets;
  std::vector<int32_t> slotOf;  // [tokens * k]: pair p's row in expert order
  std::vector<int32_t> tokenAt; // [tokens * k]: the token of row s
  std::vector<int32_t> usedExperts; // experts with rows, ascending

  int64_t rowsOf(int32_t expert) const {
    return offsets[expert + 1] - offsets[expert];
  }
};

/// Routes every row of `logits` ([tokens x experts], leading dimension
/// `ld`): the k largest logits (ties: the lower expert index first), the
/// softmax over those k, and the grouping by expert. Rows are scored in
/// parallel on `pool` when there are many; the counting sort is one pass.
void routeTopK(const float *logits, int64_t ld, int64_t tokens, int64_t experts,
               int64_t k, Routing &out, ThreadPool *pool);

/// routeTopK in three parts, for a caller that scores rows as their logits
/// are computed: size `out` for the call, score rows [begin, end) (top k and
/// softmax; disjoint ranges may run on different threads at once; `logits`
/// points at row 0), then group every row by expert once all are scored.
void beginRouting(int64_t tokens, int64_t experts, int64_t k, Routing &out);
void scoreRows(const float *logits, int64_t ld, int64_t begin, int64_t end,
               Routing &out);
void groupByExpert(Routing &out);

/// log(1 + exp(v)) without overflow.
float softplus(float v);

/// The N(0, 1) draw of noisy gating for one (row, expert): a fixed function
/// of the seed, the bits of the row's d values and the expert (splitmix64
/// and Box-Muller), so every strategy, whatever rows it batches together,
/// and the reference interpreter draw the same noise. Equal rows draw equal
/// noise. The row is hashed once (gatingNoiseKey), then each expert's draw
/// costs a few multiplies.
uint64_t gatingNoiseKey(uint64_t seed, const float *row, int64_t d);
float gatingNoise(uint64_t rowKey, int64_t expert);

} // namespace dynb::rt

#endif // DYNB_RUNTIME_ROUTING_H
