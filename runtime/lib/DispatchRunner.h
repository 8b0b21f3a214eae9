//===- DispatchRunner.h - Executes a dispatch step (internal) -------------===//
#ifndef DYNB_RUNTIME_LIB_DISPATCHRUNNER_H
#define DYNB_RUNTIME_LIB_DISPATCHRUNNER_H

#include "StepRunners.h"
#include "dynb/Runtime/Executor.h"
#include "dynb/Runtime/GemmCache.h"
#include "dynb/Runtime/Routing.h"
#include "dynb/Runtime/Status.h"

#include <cstdlib>
#include <memory>
#include <vector>

namespace dynb::rt {

/// Runs dispatch steps (Plan.h): gate GEMM, top-k routing, the expert body
/// on each used expert's rows, and the gate-weighted sum back in row order.
/// Holds the routing buffers and scratch between runs.
class DispatchRunner {
public:
  struct Options {
    int64_t kernelParallelMinElements = 16384;
    int64_t copyParallelMinBytes = 64 * 1024;
    /// For the per-thread GEMM caches (see GemmCacheOptions).
    int64_t smallGemmMaxMacs = 4096;
    DispatchBody body = DispatchBody::Auto;
    /// See ExecutorOptions::dispatchTileMaxRows.
    int64_t tileMaxRows = 256;
    /// See ExecutorOptions::dispatchPackedWeightMaxBytes.
    int64_t packedWeightMaxBytes = int64_t(1) << 30;
    /// Tiles run on the thread team only from this many multiply-adds of
    /// expert GEMMs a call (some 10 us of work).
    int64_t parallelMinMacs = int64_t(1) << 20;
    /// Time the phases into ExecutorStats::dispatch*Seconds.
    bool profile = false;
  };

  /// Counts its GEMM calls, their flops and the parameter bytes they read
  /// into `stats`.
  Status run(const DispatchStep &step, const ResolvedBuffers &resolved,
             GemmCache &gemm, ThreadPool &pool, const Options &opts,
             ExecutorStats &stats);

  /// Bytes of expert weights packed so far (they stay while the runner
  /// lives).
  int64_t packedWeightBytes() const { return packedBytes_; }

private:
  /// The body on every routed row: GEMMs once per used expert (each on all
  /// threads, oneDNN's own split), kernels once over all rows.
  Status runBodyByStep(const DispatchStep &step,
                       const ResolvedBuffers &resolved, GemmCache &gemm,
                       ThreadPool &pool, const Options &opts,
                       ExecutorStats &stats);
  /// The body tile by tile: each used expert's rows in tiles of at most
  /// Options::tileMaxRows, the tiles spread over the threads. A tile gathers
  /// its rows of x into thread-local scratch, runs the whole body there
  /// (single-threaded GEMMs) and writes its result rows out:
  /// straight into out's token rows under top 1, else into the routed
  /// output for the combine. Nothing of the body then goes through memory
  /// in expert order. False when the body's buffers are not all routed
  /// arena buffers (the other paths serve those).
  bool planTiles(const DispatchStep &step, const ResolvedBuffers &resolved,
                 unsigned threads, const Options &opts);
  Status runBodyByTiles(const DispatchStep &step,
                        const ResolvedBuffers &resolved, unsigned threads,
                        const Options &opts, ExecutorStats &stats);

  /// The gate GEMM and the scoring of its rows, chunk by chunk over the
  /// threads (each chunk scored while its logits are in cache), then the
  /// grouping by expert into routing_. Without noise only: the noise term
  /// would have to be added between the two.
  Status gateAndRouteInChunks(const GemmArgs &gate, int64_t k, unsigned threads,
                              const Options &opts);

  /// Direct routing (planDirect): the expert order is the token order, so
  /// the body's GEMMs read x in place of the routed copy (readX) and the GEMM
  /// writing the routed output writes out (writeOut; top 1, gate weight 1),
  /// where no kernel step uses those buffers.
  struct Direct {
    bool readX = false, writeOut = false;
    Region routedIn, routedOut;
    const float *x = nullptr;
    int64_t ldx = 0;
    float *out = nullptr;
    int64_t ldOut = 0;
  };
  void planDirect(const DispatchStep &step, const ResolvedBuffers &resolved);
  GemmArgs expertGemm(const GemmStep &g, int32_t e, int64_t row, int64_t rows,
                      const ResolvedBuffers &resolved) const;

  /// Packs the stacked weights of the body's GEMMs not seen before, while
  /// the packed total stays within Options::packedWeightMaxBytes.
  Status packExpertWeights(const DispatchStep &step,
                           const ResolvedBuffers &resolved, GemmCache &gemm,
                           const Options &opts);
  struct FreeDeleter {
    void operator()(float *p) const { std::free(p); }
  };
  /// One stacked weight [experts * n x k] in GemmCache's packed layout,
  /// expertFloats apart; data is null when it was not packed (over the
  /// budget), so it is not tried again.
  struct PackedWeights {
    const float *source;
    int64_t k, n, expertFloats;
    std::unique_ptr<float, FreeDeleter> data;
  };
  std::vector<PackedWeights> packed_;
  int64_t packedBytes_ = 0;

  Routing routing_;
  Direct direct_;
  /// One GEMM cache a thread for runBodyByTiles: a cache binds its
  /// primitives' memory objects to each call's pointers, so it serves one
  /// thread at a time.
  std::vector<std::unique_ptr<GemmCache>> threadGemms_;
  struct Tile {
    int32_t expert;
    int64_t row, rows; // rows [row, row + rows) of the expert order
  };
  std::vector<Tile> tiles_;
  /// Per thread: scratch for the body buffers of one tile, and the buffer
  /// bases with those buffers pointing into it.
  struct TileScratch {
    std::vector<float> storage;
    std::vector<float *> bases;
  };
  std::vector<TileScratch> tileScratch_;
  std::vector<BufferId> tileBuffers_; // the body's buffers, held per tile
  std::vector<int32_t> expertOrder_;  // used experts, most rows first
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_LIB_DISPATCHRUNNER_H
