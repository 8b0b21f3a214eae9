//===- DispatchRunner.cpp - Mixture-of-experts steps, batched at run time -===//
//
// Which rows an expert gets is known only once the gate has run, so the
// batching happens here: the rows are grouped by expert with a counting
// sort and each used expert's body runs on its group, in tiles spread over
// the threads. Experts with no rows cost nothing.
//
//===----------------------------------------------------------------------===//
#include "DispatchRunner.h"

#include <fmt/format.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

using namespace dynb::rt;

namespace {

GemmArgs gemmArgs(const Region &a, const Region &c,
                  const ResolvedBuffers &resolved) {
  GemmArgs args;
  args.m = a.rows;
  args.k = a.cols;
  args.n = c.cols;
  args.a = resolved.at(a.buffer, a.row, a.col);
  args.lda = resolved.buffers[a.buffer].cols;
  args.c = resolved.at(c.buffer, c.row, c.col);
  args.ldc = resolved.buffers[c.buffer].cols;
  return args;
}

/// Counts one GEMM of a dispatch step.
void tally(const GemmArgs &args, ExecutorStats &stats) {
  ++stats.gemmCalls;
  stats.dispatchGemmFlops +=
      2 * uint64_t(args.m) * uint64_t(args.k) * uint64_t(args.n);
  stats.dispatchParamBytes +=
      sizeof(float) * (uint64_t(args.n) * uint64_t(args.k) +
                       (args.bias ? uint64_t(args.n) : 0));
}

} // namespace

/// The GEMM of body step `g` on expert e's rows [row, row + rows). Under
/// direct routing a GEMM reading the routed input reads x's rows in place,
/// and the one writing the routed output writes out's rows.
GemmArgs DispatchRunner::expertGemm(const GemmStep &g, int32_t e, int64_t row,
                                    int64_t rows,
                                    const ResolvedBuffers &resolved) const {
  Region a = g.a, c = g.c;
  a.row += row;
  c.row += row;
  a.rows = c.rows = rows;
  GemmArgs args = gemmArgs(a, c, resolved);
  const int64_t n = g.c.cols, k = g.a.cols;
  args.w = resolved.bases[g.weight] + int64_t(e) * n * k;
  args.bias = g.hasBias ? resolved.bases[g.bias] + int64_t(e) * n : nullptr;
  args.relu = g.relu;
  const float *source = resolved.bases[g.weight];
  for (const PackedWeights &packed : packed_)
    if (packed.source == source && packed.k == k && packed.n == n) {
      if (packed.data)
        args.packedW = packed.data.get() + int64_t(e) * packed.expertFloats;
      break;
    }
  if (direct_.readX && g.a.buffer == direct_.routedIn.buffer) {
    args.a = direct_.x + row * direct_.ldx + (g.a.col - direct_.routedIn.col);
    args.lda = direct_.ldx;
  }
  if (direct_.writeOut && g.c.buffer == direct_.routedOut.buffer) {
    args.c =
        direct_.out + row * direct_.ldOut + (g.c.col - direct_.routedOut.col);
    args.ldc = direct_.ldOut;
  }
  return args;
}

namespace {

/// Runs fn(begin, end) over [0, n) on the pool when the work is large enough
/// to pay for waking it.
template <typename Fn>
void maybeParallel(ThreadPool &pool, int64_t n, int64_t work, int64_t minWork,
                   Fn &&fn) {
  if (n > 1 && work > minWork && pool.numThreads() > 1)
    pool.parallelFor(n, fn);
  else
    fn(0, n);
}

} // namespace

Status DispatchRunner::run(const DispatchStep &step,
                           const ResolvedBuffers &resolved, GemmCache &gemm,
                           ThreadPool &pool, const Options &opts,
                           ExecutorStats &stats) {
  const int64_t tokens = step.x.rows, d = step.x.cols, k = step.topK;
  const int64_t experts = step.experts;
  auto countGemm = [&](const GemmArgs &args) { tally(args, stats); };
  // Phase times for --profile: each phase's end is the next one's start.
  using Clock = std::chrono::steady_clock;
  Clock::time_point mark;
  if (opts.profile)
    mark = Clock::now();
  auto phaseEnds = [&](double &seconds) {
    if (!opts.profile)
      return;
    Clock::time_point now = Clock::now();
    seconds += std::chrono::duration<double>(now - mark).count();
    mark = now;
  };

  // 1. and 2.: the gate, logits = x gate^T (+ noise), and routing: top k,
  // softmax, counting sort by expert.
  Region logits{step.logits, 0, tokens, 0, experts};
  GemmArgs gate = gemmArgs(step.x, logits, resolved);
  gate.w = resolved.bases[step.gateWeight];
  const float *x = resolved.at(step.x.buffer, step.x.row, step.x.col);
  const int64_t ldx = resolved.buffers[step.x.buffer].cols;
  float *logitRows = resolved.at(step.logits, 0, 0);
  const unsigned threads = pool.numThreads();
  if (!step.hasNoise && threads > 1 &&
      tokens * experts * d >= opts.parallelMinMacs) {
    if (Status s = gateAndRouteInChunks(gate, k, threads, opts))
      return Status::error(fmt::format("gate: {}", s.message()));
  } else {
    if (Status s = gemm.run(gate))
      return Status::error(fmt::format("gate: {}", s.message()));
    if (step.hasNoise) {
      Region noise{step.noiseLogits, 0, tokens, 0, experts};
      GemmArgs scale = gemmArgs(step.x, noise, resolved);
      scale.w = resolved.bases[step.noiseWeight];
      if (Status s = gemm.run(scale))
        return Status::error(fmt::format("noise: {}", s.message()));
      countGemm(scale);
      const float *noiseRows = resolved.at(step.noiseLogits, 0, 0);
      maybeParallel(
          pool, tokens, tokens * experts, 1 << 16,
          [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; ++t) {
              uint64_t key = gatingNoiseKey(step.noiseSeed, x + t * ldx, d);
              for (int64_t e = 0; e < experts; ++e)
                logitRows[t * experts + e] +=
                    gatingNoise(key, e) * softplus(noiseRows[t * experts + e]);
            }
          });
    }
    routeTopK(logitRows, experts, tokens, experts, k, routing_, &pool);
  }
  countGemm(gate);
  phaseEnds(stats.dispatchGateSeconds);

  if (Status s = packExpertWeights(step, resolved, gemm, opts))
    return s;
  if (opts.profile)
    mark = Clock::now(); // packing (first use only) is no phase

  // 3. and 4.: the rows in expert order through the expert body.
  const int64_t routed = tokens * k;
  planDirect(step, resolved);
  DispatchBody mode = opts.body;
  if (mode == DispatchBody::Auto)
    mode = direct_.readX && direct_.writeOut ? DispatchBody::ByStep
                                             : DispatchBody::ByTiles;
  if (mode == DispatchBody::ByTiles &&
      planTiles(step, resolved, threads, opts)) {
    direct_ = Direct{};
    if (Status s = runBodyByTiles(step, resolved, threads, opts, stats))
      return s;
    phaseEnds(stats.dispatchExpertSeconds);
    // Top 1: the tiles wrote out's rows themselves.
    if (k == 1)
      return Status::ok();
  } else {
    if (!direct_.readX) {
      float *dst = resolved.at(step.routedIn.buffer, step.routedIn.row,
                               step.routedIn.col);
      int64_t ldDst = resolved.buffers[step.routedIn.buffer].cols;
      size_t rowBytes = size_t(d) * sizeof(float);
      maybeParallel(pool, routed, routed * int64_t(rowBytes),
                    opts.copyParallelMinBytes, [&](int64_t begin, int64_t end) {
                      for (int64_t s = begin; s < end; ++s)
                        std::memcpy(dst + s * ldDst,
                                    x + int64_t(routing_.tokenAt[s]) * ldx,
                                    rowBytes);
                    });
    }
    if (Status body = runBodyByStep(step, resolved, gemm, pool, opts, stats))
      return body;
    phaseEnds(stats.dispatchExpertSeconds);
    if (direct_.writeOut)
      return Status::ok();
  }

  // 5. out[t] = sum_j gate[t, j] * routedOut[slot(t, j)], in choice order.
  const int64_t outCols = step.out.cols;
  float *out = resolved.at(step.out.buffer, step.out.row, step.out.col);
  const int64_t ldOut = resolved.buffers[step.out.buffer].cols;
  const float *res = resolved.at(step.routedOut.buffer, step.routedOut.row,
                                 step.routedOut.col);
  const int64_t ldRes = resolved.buffers[step.routedOut.buffer].cols;
  maybeParallel(pool, tokens, routed * outCols, opts.kernelParallelMinElements,
                [&](int64_t begin, int64_t end) {
                  for (int64_t t = begin; t < end; ++t) {
                    float *o = out + t * ldOut;
                    const int32_t *slot = routing_.slotOf.data() + t * k;
                    const float *w = routing_.gateOf.data() + t * k;
                    const float *r0 = res + int64_t(slot[0]) * ldRes;
                    for (int64_t i = 0; i < outCols; ++i)
                      o[i] = w[0] * r0[i];
                    for (int64_t j = 1; j < k; ++j) {
                      const float *r = res + int64_t(slot[j]) * ldRes;
                      for (int64_t i = 0; i < outCols; ++i)
                        o[i] += w[j] * r[i];
                    }
                  }
                });
  phaseEnds(stats.dispatchCombineSeconds);
  return Status::ok();
}

void DispatchRunner::planDirect(const DispatchStep &step,
                                const ResolvedBuffers &resolved) {
  direct_ = Direct{};
  // Row s of the expert order is token s: top 1, and the stable counting
  // sort kept the token order (one expert used, or tokens already grouped
  // by expert).
  if (step.topK != 1)
    return;
  for (int64_t s = 0, n = int64_t(routing_.tokenAt.size()); s < n; ++s)
    if (routing_.tokenAt[s] != s)
      return;
  // The routed buffers may be skipped only where GEMMs alone use them: a
  // kernel runs over the routed rows of its own regions.
  auto onlyGemmsUse = [&](const Region &region, bool asInput) {
    // The region spans its buffer's columns: windows map onto x's or out's.
    BufferId buffer = region.buffer;
    if (region.col != 0 || resolved.buffers[buffer].cols != region.cols)
      return false;
    for (const Step &inner : step.body) {
      if (inner.kind() == Step::Kind::Kernel) {
        for (const Region &r : inner.kernel().args)
          if (r.buffer == buffer)
            return false;
      } else if (inner.kind() == Step::Kind::Gemm) {
        const Region &other = asInput ? inner.gemm().c : inner.gemm().a;
        if (other.buffer == buffer)
          return false;
      } else {
        return false;
      }
    }
    return true;
  };
  direct_.routedIn = step.routedIn;
  direct_.x = resolved.at(step.x.buffer, step.x.row, step.x.col);
  direct_.ldx = resolved.buffers[step.x.buffer].cols;
  direct_.readX = step.routedIn.cols == step.x.cols &&
                  onlyGemmsUse(step.routedIn, /*asInput=*/true);
  direct_.routedOut = step.routedOut;
  direct_.out = resolved.at(step.out.buffer, step.out.row, step.out.col);
  direct_.ldOut = resolved.buffers[step.out.buffer].cols;
  direct_.writeOut = step.routedOut.cols == step.out.cols &&
                     step.routedOut.buffer != step.routedIn.buffer &&
                     onlyGemmsUse(step.routedOut, /*asInput=*/false);
}

Status DispatchRunner::runBodyByStep(const DispatchStep &step,
                                     const ResolvedBuffers &resolved,
                                     GemmCache &gemm, ThreadPool &pool,
                                     const Options &opts,
                                     ExecutorStats &stats) {
  for (const Step &inner : step.body) {
    if (inner.kind() == Step::Kind::Kernel) {
      runKernel(inner.kernel(), resolved, pool, opts.kernelParallelMinElements);
      continue;
    }
    for (int32_t e : routing_.usedExperts) {
      GemmArgs args = expertGemm(inner.gemm(), e, routing_.offsets[e],
                                 routing_.rowsOf(e), resolved);
      if (Status s = gemm.run(args))
        return Status::error(fmt::format("expert {}: {}", e, s.message()));
      tally(args, stats);
    }
  }
  return Status::ok();
}

bool DispatchRunner::planTiles(const DispatchStep &step,
                               const ResolvedBuffers &resolved,
                               unsigned threads, const Options &opts) {
  const int64_t routed = step.x.rows * step.topK;
  // Every buffer of the body must hold exactly the routed rows, each region
  // all of them from row 0: then a tile's rows map onto scratch rows.
  tileBuffers_.clear();
  bool fits = true;
  auto use = [&](const Region &r) {
    const BufferDesc &desc = resolved.buffers[r.buffer];
    if (desc.kind != BufferDesc::Kind::Arena || desc.rows != routed ||
        r.row != 0 || r.rows != routed)
      fits = false;
    if (std::find(tileBuffers_.begin(), tileBuffers_.end(), r.buffer) ==
        tileBuffers_.end())
      tileBuffers_.push_back(r.buffer);
  };
  use(step.routedIn);
  for (const Step &inner : step.body) {
    if (inner.kind() == Step::Kind::Gemm) {
      use(inner.gemm().a);
      use(inner.gemm().c);
    } else if (inner.kind() == Step::Kind::Kernel) {
      for (const Region &r : inner.kernel().args)
        use(r);
    } else {
      return false;
    }
  }
  use(step.routedOut);
  if (!fits || step.routedIn.col != 0 || step.routedIn.cols != step.x.cols)
    return false;

  // Tiles: an expert's rows split evenly into pieces of at most tileMaxRows,
  // largest experts first, for the balance. A tile's GEMMs run on its exact
  // rows, which GemmCache runs as at most two blocks of bounded primitive
  // sizes. Padding m to a multiple of 16 instead cost up to 8.8% more rows
  // (10 experts x 1,000 tokens) and zeroed padding rows, and was not faster
  // in alternating runs.
  const int64_t maxRows = std::max<int64_t>(opts.tileMaxRows, 16);
  expertOrder_ = routing_.usedExperts;
  std::stable_sort(expertOrder_.begin(), expertOrder_.end(),
                   [&](int32_t a, int32_t b) {
                     return routing_.rowsOf(a) > routing_.rowsOf(b);
                   });
  tiles_.clear();
  int64_t capacity = 0;
  for (int32_t e : expertOrder_) {
    int64_t rows = routing_.rowsOf(e), begin = routing_.offsets[e];
    int64_t pieces = (rows + maxRows - 1) / maxRows;
    for (int64_t i = 0; i < pieces; ++i) {
      int64_t lo = begin + rows * i / pieces;
      int64_t hi = begin + rows * (i + 1) / pieces;
      tiles_.push_back(Tile{e, lo, hi - lo});
      capacity = std::max(capacity, hi - lo);
    }
  }

  // Scratch a thread: each body buffer's tile rows, 64-byte aligned.
  constexpr int64_t align = 64 / sizeof(float);
  auto bufferFloats = [&](BufferId b) {
    return (capacity * resolved.buffers[b].cols + align - 1) / align * align;
  };
  int64_t floats = 0;
  for (BufferId b : tileBuffers_)
    floats += bufferFloats(b);
  if (tileScratch_.size() < threads)
    tileScratch_.resize(threads);
  for (unsigned t = 0; t < threads; ++t) {
    TileScratch &scratch = tileScratch_[t];
    if (scratch.storage.size() < size_t(floats + align))
      scratch.storage.resize(size_t(floats + align));
    scratch.bases = resolved.bases;
    float *p = scratch.storage.data();
    p += (align - (reinterpret_cast<uintptr_t>(p) / sizeof(float)) % align) %
         align;
    for (BufferId b : tileBuffers_) {
      scratch.bases[b] = p;
      p += bufferFloats(b);
    }
  }
  return true;
}

namespace {

/// Asks for a row's cache lines ahead of use. A tile's rows of x and of out
/// are scattered, one 1 KiB row at a time at d = 256, so each copy waits on
/// memory, which asking a few rows ahead hides in part. Four was the best of
/// 2, 4 and 8 in alternating runs at 10 experts and 10,000 tokens.
void prefetchRow(const float *row, size_t bytes, bool forWrite) {
  const char *p = reinterpret_cast<const char *>(row);
  for (size_t b = 0; b < bytes; b += 64)
    if (forWrite)
      __builtin_prefetch(p + b, 1, 3);
    else
      __builtin_prefetch(p + b, 0, 3);
}

constexpr int64_t rowsAhead = 4;

} // namespace

Status DispatchRunner::runBodyByTiles(const DispatchStep &step,
                                      const ResolvedBuffers &resolved,
                                      unsigned threads, const Options &opts,
                                      ExecutorStats &stats) {
  while (threadGemms_.size() < threads)
    threadGemms_.push_back(
        std::make_unique<GemmCache>(GemmCacheOptions{opts.smallGemmMaxMacs}));
  const float *x = resolved.at(step.x.buffer, step.x.row, step.x.col);
  const int64_t ldx = resolved.buffers[step.x.buffer].cols;
  const size_t inBytes = size_t(step.x.cols) * sizeof(float);
  const BufferId inBuffer = step.routedIn.buffer;
  const int64_t ldIn = resolved.buffers[inBuffer].cols;
  const Region &res = step.routedOut;
  const int64_t ldRes = resolved.buffers[res.buffer].cols;
  const size_t resBytes = size_t(res.cols) * sizeof(float);
  // Top 1 writes out's rows, gate-weighted; top k the routed output's rows
  // in expert order, for the combine.
  const bool toOut = step.topK == 1;
  float *dst = toOut ? resolved.at(step.out.buffer, step.out.row, step.out.col)
                     : resolved.at(res.buffer, 0, res.col);
  const int64_t ldDst = toOut ? resolved.buffers[step.out.buffer].cols : ldRes;

  std::vector<ExecutorStats> counts(threads);
  std::vector<Status> failures(threads);
  std::atomic<size_t> next{0};
  const size_t numTiles = tiles_.size();
  // oneDNN runs single-threaded inside this parallel region; tiles go to
  // whichever thread is free, largest experts first. A body of little work
  // runs on this thread alone: waking the team costs more than it saves,
  // and far more when another job holds a core.
  int64_t macsPerRow = 0;
  for (const Step &inner : step.body)
    if (inner.kind() == Step::Kind::Gemm)
      macsPerRow += inner.gemm().a.cols * inner.gemm().c.cols;
  const bool parallel =
      threads > 1 && numTiles > 1 &&
      macsPerRow * int64_t(routing_.tokenAt.size()) >= opts.parallelMinMacs;
#pragma omp parallel num_threads(threads) if (parallel)
  {
    unsigned t = static_cast<unsigned>(omp_get_thread_num());
    ResolvedBuffers local{resolved.buffers, tileScratch_[t].bases};
    float *in = tileScratch_[t].bases[inBuffer];
    const float *result = tileScratch_[t].bases[res.buffer] + res.col;
    for (size_t i = next++; i < numTiles && !failures[t]; i = next++) {
      const Tile &tile = tiles_[i];
      for (int64_t r = 0; r < tile.rows; ++r) {
        if (r + rowsAhead < tile.rows)
          prefetchRow(x + int64_t(routing_.tokenAt[tile.row + r + rowsAhead]) *
                              ldx,
                      inBytes, /*forWrite=*/false);
        std::memcpy(in + r * ldIn,
                    x + int64_t(routing_.tokenAt[tile.row + r]) * ldx, inBytes);
      }
      for (const Step &inner : step.body) {
        if (inner.kind() == Step::Kind::Kernel) {
          runKernelRows(inner.kernel(), local, 0, tile.rows);
          continue;
        }
        GemmArgs args =
            expertGemm(inner.gemm(), tile.expert, 0, tile.rows, local);
        if (Status s = threadGemms_[t]->run(args)) {
          failures[t] = Status::error(
              fmt::format("expert {}: {}", tile.expert, s.message()));
          break;
        }
        tally(args, counts[t]);
      }
      if (toOut) {
        for (int64_t r = 0; r < tile.rows; ++r) {
          if (r + rowsAhead < tile.rows)
            prefetchRow(
                dst +
                    int64_t(routing_.tokenAt[tile.row + r + rowsAhead]) * ldDst,
                resBytes, /*forWrite=*/true);
          int32_t token = routing_.tokenAt[tile.row + r];
          // The combine's product, so every path writes the same bits.
          const float w = routing_.gateOf[token];
          const float *src = result + r * ldRes;
          float *o = dst + int64_t(token) * ldDst;
          for (int64_t i = 0; i < res.cols; ++i)
            o[i] = w * src[i];
        }
      } else {
        for (int64_t r = 0; r < tile.rows; ++r)
          std::memcpy(dst + (tile.row + r) * ldDst, result + r * ldRes,
                      resBytes);
      }
    }
  }
  for (unsigned t = 0; t < threads; ++t) {
    if (failures[t])
      return failures[t];
    stats.gemmCalls += counts[t].gemmCalls;
    stats.dispatchGemmFlops += counts[t].dispatchGemmFlops;
    stats.dispatchParamBytes += counts[t].dispatchParamBytes;
  }
  return Status::ok();
}

Status DispatchRunner::packExpertWeights(const DispatchStep &step,
                                         const ResolvedBuffers &resolved,
                                         GemmCache &gemm, const Options &opts) {
  for (const Step &inner : step.body) {
    if (inner.kind() != Step::Kind::Gemm)
      continue;
    const GemmStep &g = inner.gemm();
    const float *source = resolved.bases[g.weight];
    const int64_t k = g.a.cols, n = g.c.cols;
    if (std::any_of(packed_.begin(), packed_.end(),
                    [&](const PackedWeights &p) {
                      return p.source == source && p.k == k && p.n == n;
                    }))
      continue;
    PackedWeights &packed = packed_.emplace_back();
    packed.source = source;
    packed.k = k;
    packed.n = n;
    packed.expertFloats = gemm.packedWeightFloats(k, n);
    const int64_t bytes =
        step.experts * packed.expertFloats * int64_t(sizeof(float));
    if (packed.expertFloats <= 0 ||
        packedBytes_ + bytes > opts.packedWeightMaxBytes)
      continue;
    packed.data.reset(
        static_cast<float *>(std::aligned_alloc(64, size_t(bytes))));
    if (!packed.data)
      continue; // runs on the plain weights
    for (int64_t e = 0; e < step.experts; ++e)
      if (Status s =
              gemm.packWeights(source + e * n * k, k, n,
                               packed.data.get() + e * packed.expertFloats)) {
        packed.data.reset();
        return Status::error(fmt::format("expert {}: {}", e, s.message()));
      }
    packedBytes_ += bytes;
  }
  return Status::ok();
}

namespace {

/// Rows of x a thread takes at a time for the gate. With N = E = 100,
/// single-threaded 256-row GEMMs ran at 93-95 GFLOP/s a thread, where
/// oneDNN's own split of 10,000 rows over two threads gave 146-154 in all:
/// `OMP_NUM_THREADS=1 dynb-gemm-ceiling --fixed-m 256 256 100` against
/// `dynb-gemm-ceiling --fixed-m 10000 256 100`.
constexpr int64_t gateChunkRows = 256;

} // namespace

Status DispatchRunner::gateAndRouteInChunks(const GemmArgs &gate, int64_t k,
                                            unsigned threads,
                                            const Options &opts) {
  while (threadGemms_.size() < threads)
    threadGemms_.push_back(
        std::make_unique<GemmCache>(GemmCacheOptions{opts.smallGemmMaxMacs}));
  beginRouting(gate.m, gate.n, k, routing_);
  const int64_t chunks = (gate.m + gateChunkRows - 1) / gateChunkRows;
  std::vector<Status> failures(threads);
  std::atomic<int64_t> next{0};
#pragma omp parallel num_threads(threads)
  {
    unsigned t = static_cast<unsigned>(omp_get_thread_num());
    for (int64_t c = next++; c < chunks && !failures[t]; c = next++) {
      GemmArgs rows = gate;
      int64_t begin = c * gateChunkRows;
      rows.m = std::min(gateChunkRows, gate.m - begin);
      rows.a = gate.a + begin * gate.lda;
      rows.c = gate.c + begin * gate.ldc;
      if (Status s = threadGemms_[t]->run(rows)) {
        failures[t] = std::move(s);
        break;
      }
      // The chunk's logits are still in cache.
      scoreRows(gate.c, gate.ldc, begin, begin + rows.m, routing_);
    }
  }
  for (Status &s : failures)
    if (s)
      return std::move(s);
  groupByExpert(routing_);
  return Status::ok();
}
