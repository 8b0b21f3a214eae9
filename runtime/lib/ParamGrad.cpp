//===- ParamGrad.cpp - Runs parameter-gradient and fill steps -------------===//
//
// Each gradient element is computed by one thread, the same way on any
// thread count (fixed chunks of weight rows, one sequential GEMM or loop
// each), so a plan's gradients are the same bits on 1 or 2 threads
// (tests/unit/runtime/ParamGradStepTest.cpp, grad-batched.test).
//
//===----------------------------------------------------------------------===//
#include "StepRunners.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

using namespace dynb::rt;

namespace {

/// weightGrad rows [begin, end) (and their bias elements) += dyᵀ x.
void linearGradRows(const ParamGradStep &step, const ResolvedBuffers &resolved,
                    int64_t begin, int64_t end) {
  int64_t m = step.dy.rows, k = step.x.cols;
  int64_t ldw = resolved.buffers[step.weightGrad].cols;
  float *w = resolved.bases[step.weightGrad];
  float *bias = step.hasBias ? resolved.bases[step.biasGrad] : nullptr;
  // Rows of x in blocks, so a block stays in cache while every weight row
  // of the chunk reads it.
  constexpr int64_t kRowBlock = 64;
  for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
    int64_t i1 = std::min(m, i0 + kRowBlock);
    for (int64_t r = begin; r < end; ++r) {
      float *wr = w + r * ldw;
      float bsum = 0;
      for (int64_t i = i0; i < i1; ++i) {
        float d =
            *resolved.at(step.dy.buffer, step.dy.row + i, step.dy.col + r);
        bsum += d;
        if (d == 0)
          continue;
        const float *xi =
            resolved.at(step.x.buffer, step.x.row + i, step.x.col);
        for (int64_t c = 0; c < k; ++c)
          wr[c] += d * xi[c];
      }
      if (bias)
        bias[r] += bsum;
    }
  }
}

/// Weight rows per GEMM call. The chunks are the same on any thread count,
/// and each runs on one thread (oneDNN is sequential inside an OpenMP
/// team), so every element is summed the same way however many threads
/// take part.
constexpr int64_t kWeightRowChunk = 64;

/// weightGrad rows [begin, end) += dyᵀ x as one oneDNN GEMM, and their
/// bias elements += the column sums of dy.
dnnl_status_t linearGradChunk(const ParamGradStep &step,
                              const ResolvedBuffers &resolved, int64_t begin,
                              int64_t end) {
  int64_t m = step.dy.rows, k = step.x.cols;
  const float *dy = resolved.at(step.dy.buffer, step.dy.row, step.dy.col);
  const float *x = resolved.at(step.x.buffer, step.x.row, step.x.col);
  int64_t ldy = resolved.buffers[step.dy.buffer].cols;
  int64_t ldx = resolved.buffers[step.x.buffer].cols;
  int64_t ldw = resolved.buffers[step.weightGrad].cols;
  float *w = resolved.bases[step.weightGrad] + begin * ldw;
  dnnl_status_t status = dnnl_sgemm('T', 'N', end - begin, k, m, 1.0f,
                                    dy + begin, ldy, x, ldx, 1.0f, w, ldw);
  if (step.hasBias) {
    float *bias = resolved.bases[step.biasGrad];
    for (int64_t r = begin; r < end; ++r) {
      float sum = 0;
      for (int64_t i = 0; i < m; ++i)
        sum += dy[i * ldy + r];
      bias[r] += sum;
    }
  }
  return status;
}

} // namespace

dynb::rt::Status dynb::rt::runParamGrad(const ParamGradStep &step,
                                        const ResolvedBuffers &resolved,
                                        ThreadPool &pool,
                                        int64_t parallelMinElements) {
  if (step.op == ParamGradStep::Op::Rows) {
    // Rows may repeat (a word read twice): summed in row order, on one
    // thread; a row is a few hundred floats, so threads would not pay.
    int64_t cols = step.dy.cols;
    for (int64_t i = 0; i < step.dy.rows; ++i) {
      const float *src =
          resolved.at(step.dy.buffer, step.dy.row + i, step.dy.col);
      float *dst = resolved.at(step.weightGrad, step.rows[size_t(i)], 0);
      for (int64_t c = 0; c < cols; ++c)
        dst[c] += src[c];
    }
    return Status::ok();
  }
  int64_t n = step.dy.cols;
  // Small problems, and weights of one chunk (oneDNN would split a lone
  // call across the threads, and the sum with it), take the loop.
  if (step.dy.rows * n * step.x.cols <= parallelMinElements ||
      n <= kWeightRowChunk) {
    linearGradRows(step, resolved, 0, n);
    return Status::ok();
  }
  int64_t chunks = (n + kWeightRowChunk - 1) / kWeightRowChunk;
  int threads = int(std::min<int64_t>(chunks, pool.numThreads()));
  std::atomic<int> failed{dnnl_success};
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = c * kWeightRowChunk;
    dnnl_status_t status = linearGradChunk(
        step, resolved, begin, std::min(n, begin + kWeightRowChunk));
    if (status != dnnl_success)
      failed = int(status);
  }
  if (failed != dnnl_success)
    return Status::error(fmt::format(
        "weight gradient GEMM failed (oneDNN status {})", int(failed.load())));
  return Status::ok();
}

void dynb::rt::runFill(const FillStep &step, const ResolvedBuffers &resolved) {
  for (int64_t r = 0; r < step.dst.rows; ++r)
    std::memset(resolved.at(step.dst.buffer, step.dst.row + r, step.dst.col), 0,
                size_t(step.dst.cols) * sizeof(float));
}
