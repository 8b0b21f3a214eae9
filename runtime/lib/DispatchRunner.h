//===- DispatchRunner.h - Executes a dispatch step (internal) -------------===//
#ifndef DYNB_RUNTIME_LIB_DISPATCHRUNNER_H
#define DYNB_RUNTIME_LIB_DISPATCHRUNNER_H

#include "StepRunners.h"
#include "dynb/Runtime/Executor.h"
#include "dynb/Runtime/GemmCache.h"
#include "dynb/Runtime/Routing.h"
#include "dynb/Runtime/Status.h"

#include <memory>
#include <vector>

namespace dynb::rt {

/// Runs dispatch steps (Plan.h): gate GEMM, top-k routing, a copy of the rows
/// into expert order, the expert body per used expert, and the gate-weighted
/// sum back in row order. Holds the routing buffers between runs.
class DispatchRunner {
public:
  struct Options {
    int64_t kernelParallelMinElements = 16384;
    int64_t copyParallelMinBytes = 64 * 1024;
    /// For the per-thread GEMM caches (see GemmCacheOptions).
    int64_t smallGemmMaxMacs = 4096;
  };

  /// Counts its GEMM calls, their flops and the parameter bytes they read
  /// into `stats`.
  Status run(const DispatchStep &step, const ResolvedBuffers &resolved,
             GemmCache &gemm, ThreadPool &pool, const Options &opts,
             ExecutorStats &stats);

private:
  /// The body on every routed row: GEMMs once per used expert (each on all
  /// threads, oneDNN's own split), kernels once over all rows.
  Status runBodyByStep(const DispatchStep &step,
                       const ResolvedBuffers &resolved, GemmCache &gemm,
                       ThreadPool &pool, const Options &opts,
                       ExecutorStats &stats);
  /// The body expert by expert, experts spread over the threads (largest
  /// first), each expert's GEMMs and kernels on one thread.
  Status runBodyByExpert(const DispatchStep &step,
                         const ResolvedBuffers &resolved, unsigned threads,
                         const Options &opts, ExecutorStats &stats);

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

  Routing routing_;
  Direct direct_;
  /// One GEMM cache a thread for runBodyByExpert: a cache binds its
  /// primitives' memory objects to each call's pointers, so it serves one
  /// thread at a time.
  std::vector<std::unique_ptr<GemmCache>> threadGemms_;
  std::vector<int32_t> expertOrder_;
  std::vector<unsigned> threadOf_; // the thread of expertOrder_[i]
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_LIB_DISPATCHRUNNER_H
