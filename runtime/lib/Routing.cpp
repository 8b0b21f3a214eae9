//===- Routing.cpp - Top-k gating and a counting sort by expert -----------===//
#include "dynb/Runtime/Routing.h"
#include "dynb/Runtime/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace dynb::rt;

namespace {

/// Keeps the k best (logit, expert) pairs of one row, best first. A later
/// expert replaces a kept one only when strictly larger, so ties keep the
/// lower index, which the scan meets first.
void topKOfRow(const float *row, int64_t experts, int64_t k, int32_t *expert,
               float *value) {
  int64_t kept = 0;
  for (int64_t e = 0; e < experts; ++e) {
    float v = row[e];
    if (kept == k && !(v > value[k - 1]))
      continue;
    int64_t pos = kept < k ? kept++ : k - 1;
    while (pos > 0 && v > value[pos - 1]) {
      value[pos] = value[pos - 1];
      expert[pos] = expert[pos - 1];
      --pos;
    }
    value[pos] = v;
    expert[pos] = static_cast<int32_t>(e);
  }
}

/// topKOfRow for k = 1: the first index of the row's maximum (a NaN never
/// wins a comparison; a NaN first element stays, as there). Sixteen
/// independent running maxima let the compiler keep them in one vector
/// register, where the scan makes one dependent compare a logit.
int32_t argMaxOfRow(const float *row, int64_t experts) {
  float best = row[0];
  if (best != best)
    return 0;
  constexpr int64_t lanes = 16;
  int64_t e = 1;
  if (experts - e >= lanes) {
    float lane[lanes];
    for (int64_t l = 0; l < lanes; ++l)
      lane[l] = best;
    for (; e + lanes <= experts; e += lanes)
      for (int64_t l = 0; l < lanes; ++l)
        lane[l] = row[e + l] > lane[l] ? row[e + l] : lane[l];
    for (int64_t l = 0; l < lanes; ++l)
      best = lane[l] > best ? lane[l] : best;
  }
  for (; e < experts; ++e)
    best = row[e] > best ? row[e] : best;
  int32_t first = 0;
  while (!(row[first] == best))
    ++first;
  return first;
}

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

} // namespace

void dynb::rt::beginRouting(int64_t tokens, int64_t experts, int64_t k,
                            Routing &out) {
  int64_t pairs = tokens * k;
  out.tokens = tokens;
  out.experts = experts;
  out.k = k;
  out.expertOf.resize(pairs);
  out.gateOf.resize(pairs);
  out.slotOf.resize(pairs);
  out.tokenAt.resize(pairs);
  out.offsets.assign(experts + 1, 0);
  out.usedExperts.clear();
}

void dynb::rt::scoreRows(const float *logits, int64_t ld, int64_t begin,
                         int64_t end, Routing &out) {
  // The logits are written into gateOf's slots by the selection and become
  // weights in place.
  const int64_t experts = out.experts, k = out.k;
  for (int64_t t = begin; t < end; ++t) {
    int32_t *expert = out.expertOf.data() + t * k;
    float *gate = out.gateOf.data() + t * k;
    if (k == 1) {
      expert[0] = argMaxOfRow(logits + t * ld, experts);
      // The softmax of one logit, computed as below (1, or NaN for an
      // infinite logit).
      float top = logits[t * ld + expert[0]];
      float weight = std::exp(top - top);
      gate[0] = weight / weight;
      continue;
    }
    topKOfRow(logits + t * ld, experts, k, expert, gate);
    float top = gate[0], sum = 0.0f;
    for (int64_t j = 0; j < k; ++j)
      sum += gate[j] = std::exp(gate[j] - top);
    for (int64_t j = 0; j < k; ++j)
      gate[j] /= sum;
  }
}

void dynb::rt::groupByExpert(Routing &out) {
  // Counting sort of the pairs by expert, stable in token order.
  const int64_t pairs = out.tokens * out.k, experts = out.experts, k = out.k;
  for (int64_t p = 0; p < pairs; ++p)
    ++out.offsets[out.expertOf[p] + 1];
  for (int64_t e = 0; e < experts; ++e) {
    if (out.offsets[e + 1])
      out.usedExperts.push_back(static_cast<int32_t>(e));
    out.offsets[e + 1] += out.offsets[e];
  }
  // Fill positions advance from each expert's start; offsets[e] is then its
  // end, which is restored from offsets[e - 1]'s end afterwards.
  for (int64_t p = 0; p < pairs; ++p) {
    int64_t s = out.offsets[out.expertOf[p]]++;
    out.slotOf[p] = static_cast<int32_t>(s);
    out.tokenAt[s] = static_cast<int32_t>(p / k);
  }
  for (int64_t e = experts; e > 0; --e)
    out.offsets[e] = out.offsets[e - 1];
  out.offsets[0] = 0;
}

void dynb::rt::routeTopK(const float *logits, int64_t ld, int64_t tokens,
                         int64_t experts, int64_t k, Routing &out,
                         ThreadPool *pool) {
  beginRouting(tokens, experts, k, out);
  // Below about 64K logits (some 30 us of scanning), waking the workers
  // costs more than it saves.
  if (pool && tokens > 1 && tokens * experts >= (int64_t(1) << 16))
    pool->parallelFor(tokens, [&](int64_t begin, int64_t end) {
      scoreRows(logits, ld, begin, end, out);
    });
  else
    scoreRows(logits, ld, 0, tokens, out);
  groupByExpert(out);
}

float dynb::rt::softplus(float v) {
  // For large v, log(1 + exp(v)) = v + log(1 + exp(-v)) avoids exp overflow.
  return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

uint64_t dynb::rt::gatingNoiseKey(uint64_t seed, const float *row, int64_t d) {
  uint64_t h = mix64(seed ^ 0x6a09e667f3bcc909ull);
  for (int64_t i = 0; i < d; ++i) {
    uint32_t bits;
    std::memcpy(&bits, row + i, sizeof(bits));
    h = mix64(h ^ bits);
  }
  return h;
}

float dynb::rt::gatingNoise(uint64_t rowKey, int64_t expert) {
  uint64_t h = mix64(rowKey ^ static_cast<uint64_t>(expert));
  uint64_t a = mix64(h + 0x9e3779b97f4a7c15ull);
  // Two uniforms from 53-bit mantissas; u1 in (0, 1] keeps log finite.
  double u1 = (static_cast<double>(a >> 11) + 1.0) * 0x1.0p-53;
  double u2 = static_cast<double>(h >> 11) * 0x1.0p-53;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                            std::cos(2.0 * M_PI * u2));
}
