//===- ParamGrad.cpp - Runs parameter-gradient and fill steps -------------===//
//
// Each gradient element is owned by one thread and sums its rows in row
// order, so a plan's gradients are the same bits on any thread count
// (tests/unit/runtime/ParamGradStepTest.cpp checks 1 against 2 threads).
//
//===----------------------------------------------------------------------===//
#include "StepRunners.h"

#include <algorithm>
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

} // namespace

void dynb::rt::runParamGrad(const ParamGradStep &step,
                            const ResolvedBuffers &resolved, ThreadPool &pool,
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
    return;
  }
  int64_t n = step.dy.cols;
  if (step.dy.rows * n * step.x.cols <= parallelMinElements) {
    linearGradRows(step, resolved, 0, n);
    return;
  }
  pool.parallelFor(n, [&](int64_t begin, int64_t end) {
    linearGradRows(step, resolved, begin, end);
  });
}

void dynb::rt::runFill(const FillStep &step, const ResolvedBuffers &resolved) {
  for (int64_t r = 0; r < step.dst.rows; ++r)
    std::memset(resolved.at(step.dst.buffer, step.dst.row + r, step.dst.col), 0,
                size_t(step.dst.cols) * sizeof(float));
}
