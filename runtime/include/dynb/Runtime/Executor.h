//===- Executor.h - Runs a Plan over an arena with a thread pool ----------===//
#ifndef DYNB_RUNTIME_EXECUTOR_H
#define DYNB_RUNTIME_EXECUTOR_H

#include "dynb/Runtime/ParameterStore.h"
#include "dynb/Runtime/Plan.h"
#include "dynb/Runtime/Status.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace dynb::rt {

/// How a dispatch step runs its expert body once the rows are routed.
/// ByStep copies the rows into expert order and runs each body step over
/// all of them (a GEMM once per used expert, split by oneDNN over the
/// threads); ByTiles runs the whole body on tiles of each expert's rows in
/// thread-local scratch, tiles spread over the threads (docs/moe.md). Auto
/// takes ByStep under direct routing (top 1 with the rows already in expert
/// order: nothing to copy) and ByTiles otherwise.
enum class DispatchBody : uint8_t { Auto, ByStep, ByTiles };

struct ExecutorOptions {
  /// Time each step kind (two clock reads a step).
  bool profile = false;
  /// Threads for kernels, gathers and oneDNN's GEMMs (which share OpenMP's
  /// team); 0 keeps OpenMP's default. A non-zero count is set process-wide
  /// (omp_set_num_threads).
  unsigned numThreads = 0;
  /// A kernel step is split across threads only when rows times the summed
  /// argument widths exceeds this: below it waking workers costs more than
  /// it saves.
  int64_t kernelParallelMinElements = 16384;
  /// Likewise for the bytes a gather step copies.
  int64_t gatherParallelMinBytes = 64 * 1024;
  /// GEMMs with m * n * k at or below this run as a plain loop instead of
  /// oneDNN (see GemmCacheOptions).
  int64_t smallGemmMaxMacs = 4096;
  DispatchBody dispatchBody = DispatchBody::Auto;
  /// ByTiles: an expert's rows run in tiles of at most this many rows. A
  /// tile rereads its expert's weights (4 MiB in the LM setting, d 512,
  /// hidden 1024), so tiles should be long.
  int64_t dispatchTileMaxRows = 256;
  /// Expert weights of dispatch steps are copied once, on first use, into
  /// oneDNN's blocked layout (GemmCache::packWeights) while their total stays
  /// within this many bytes: 100 experts of d = h = 256 on 112 rows each ran
  /// 13-18% faster so (`dynb-expert-gemm 100 112 256 256`). The copies live
  /// as long as the
  /// executor, which assumes the parameter store does not change under it.
  /// 0 never packs. dispatchPackedWeightBytes() says what a plan would take.
  int64_t dispatchPackedWeightMaxBytes = int64_t(1) << 30;
};

/// The bytes a new executor under `opts` adds for packed expert weights to
/// run `plans` in order: each stacked weight of their dispatch steps once,
/// while the total stays within the budget.
int64_t dispatchPackedWeightBytes(const std::vector<Plan> &plans,
                                  const ExecutorOptions &opts);

struct ExecutorStats {
  uint64_t gemmCalls = 0;
  uint64_t kernelCalls = 0;
  uint64_t gatherRowsCopied = 0;
  uint64_t gemmPrimitivesCreated = 0;
  uint64_t dispatchCalls = 0;
  /// Parameter-gradient steps (the batched backward pass).
  uint64_t paramGradCalls = 0;
  /// Map steps (convolutions, pooling, layout changes, channel concats)
  /// and the flops of their convolutions, counted every run.
  uint64_t mapCalls = 0;
  uint64_t convFlops = 0;
  /// The GEMMs of dispatch steps (gate and experts): their flops, and the
  /// parameter bytes (weights and biases) they read, counted every run.
  uint64_t dispatchGemmFlops = 0;
  uint64_t dispatchParamBytes = 0;
  /// Expert weights held packed in oneDNN's layout (a level, not a count).
  int64_t dispatchPackedWeightBytes = 0;
  /// Wall time by step kind, accumulated over runs when
  /// ExecutorOptions::profile is set (else zero). A dispatch step's time
  /// (its GEMMs included) counts as dispatch.
  double gatherSeconds = 0, gemmSeconds = 0, kernelSeconds = 0,
         dispatchSeconds = 0, mapSeconds = 0, paramGradSeconds = 0;
  /// Of dispatchSeconds, by phase: the gate GEMM with the routing (noise
  /// included), the expert body with the copies of rows in and out of
  /// expert order, and the gate-weighted combine. Packing expert weights on
  /// first use is in none of them.
  double dispatchGateSeconds = 0, dispatchExpertSeconds = 0,
         dispatchCombineSeconds = 0;
  uint64_t gemmFlops = 0;
  int64_t arenaCapacityBytes = 0;
};

/// Owns the arena (grown to the largest plan seen, never shrunk, reused by
/// every run), the oneDNN engine/stream and its primitive cache, and the
/// thread pool. Not thread-safe: one run at a time.
class Executor {
public:
  explicit Executor(const ParameterStore &params, ExecutorOptions opts = {});
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// Checks the plan against the parameter store (names exist, shapes
  /// match rows x cols) and the regions against their buffers.
  Status validate(const Plan &plan) const;
  /// Runs every step. planArena() must have been called.
  Status run(const Plan &plan);
  /// Where the gradient buffers of later runs live: a tensor per parameter
  /// the plans differentiate, of the parameter's shape (zeroed by the
  /// caller; runs add to it). Not owned; null (the default) for plans
  /// without a backward pass.
  void setGradients(ParameterStore *gradients);
  /// After run(): a pointer to row `row` of buffer `buffer`, and its stride.
  const float *rowPointer(const Plan &plan, BufferId buffer, int64_t row) const;
  /// After run(): copies output position p into `out` (numRows x width).
  void copyOutput(const Plan &plan, size_t p, std::vector<float> &out) const;
  /// After run(): the sum, in double and in the plan's order, of the rows
  /// of its loss regions (0 for a plan without losses).
  double loss(const Plan &plan) const;

  const ExecutorStats &stats() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_EXECUTOR_H
