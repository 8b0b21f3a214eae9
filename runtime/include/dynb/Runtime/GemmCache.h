//===- GemmCache.h - f32 C = A * W^T + bias with cached oneDNN primitives -===//
#ifndef DYNB_RUNTIME_GEMMCACHE_H
#define DYNB_RUNTIME_GEMMCACHE_H

#include "dynb/Runtime/Status.h"

#include <cstdint>
#include <memory>

namespace dynb::rt {

/// One GEMM call: c[m x n] = a[m x k] * w^T (+ bias), where w is [n x k]
/// row-major and a and c are windows with leading dimensions lda and ldc.
struct GemmArgs {
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  const float *a = nullptr;
  int64_t lda = 0;
  const float *w = nullptr;
  const float *bias = nullptr; // n elements, or null for none
  float *c = nullptr;
  int64_t ldc = 0;
  /// C = max(C, 0) after the bias, fused into the GEMM.
  bool relu = false;
  /// c = a * w instead, with w [k x n] row-major as stored: a linear's
  /// input adjoint, dy W, reads the linear's own [n x k] weight this way.
  /// No bias and no packed weights with it.
  bool weightAsStored = false;
  /// Optional: the same weights in oneDNN's own blocked layout
  /// (GemmCache::packWeights). Used where the primitive takes that layout,
  /// else w is: oneDNN then skips repacking W on every call, which matters
  /// when W is cold, as for experts that run a hundred rows each.
  const float *packedW = nullptr;
};

struct GemmCacheOptions {
  /// Problems with m * n * k at or below this run as a plain loop: for them
  /// oneDNN's per-call overhead exceeds the arithmetic. 0 always uses oneDNN.
  int64_t smallProblemMaxMacs = 4096;
  /// GEMMs with m at or below this get a primitive for their exact m
  /// (oneDNN's brgemm kernels: twice the rate of its runtime-M GEMM at small
  /// m, a third more at m 256).
  int64_t fixedMaxM = 32;
  /// Larger m runs as consecutive row blocks: the rows left rounded down to
  /// their `blockBits` leading binary digits, until at most fixedMaxM are
  /// left, each block a primitive for its exact size: m 1200 is 1152 + 48,
  /// m 101 is 100 + 1. The first block holds nearly all rows (more than
  /// 1 - 2^(1 - blockBits) of them), so the GEMM runs at about the rate of
  /// one exact-m primitive, and the cache holds at most fixedMaxM +
  /// 2^(blockBits - 1) primitives per (k, n, lda, ldc, bias, relu) and
  /// octave of m above fixedMaxM, however many distinct m a run has. Each
  /// primitive costs tens of KB of descriptors and JIT code: against 128
  /// and 6, these sizes saved about 5 MiB on SST train at batch 256 (what
  /// brings the streamed run within 1.5x its floor), at the same TreeLSTM
  /// rate in alternating runs. 0 runs every m above fixedMaxM as one call
  /// of a runtime-M primitive (M = DNNL_RUNTIME_DIM_VAL: oneDNN 2.6 then
  /// takes its gemm:jit, slower below m ~ 4000), one per key.
  int blockBits = 5;
};

/// Owns a oneDNN CPU engine and stream and one matmul primitive per distinct
/// (m, k, n, lda, ldc, hasBias), created on first use.
class GemmCache {
public:
  explicit GemmCache(GemmCacheOptions opts = {});
  ~GemmCache();
  GemmCache(const GemmCache &) = delete;
  GemmCache &operator=(const GemmCache &) = delete;

  Status run(const GemmArgs &args);

  /// Floats to set aside for a [n x k] weight in the layout GEMMs of that
  /// shape take best (the layout oneDNN picks for it), rounded up to whole
  /// 64-byte lines so that copies placed one after another stay aligned;
  /// -1 if it cannot say.
  int64_t packedWeightFloats(int64_t k, int64_t n);
  /// Writes w ([n x k] row-major) into dst in that layout
  /// (packedWeightFloats floats, 64-byte aligned), for GemmArgs::packedW.
  Status packWeights(const float *w, int64_t k, int64_t n, float *dst);
  uint64_t primitivesCreated() const;
  /// oneDNN executions that read GemmArgs::packedW.
  uint64_t packedWeightRuns() const;
  /// Cached primitives currently held.
  size_t size() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The plain-loop GEMM used for small problems; exposed so tests can hold it
/// against oneDNN.
void smallGemm(const GemmArgs &args);

} // namespace dynb::rt

#endif // DYNB_RUNTIME_GEMMCACHE_H
