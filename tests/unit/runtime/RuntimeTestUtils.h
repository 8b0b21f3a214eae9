//===- RuntimeTestUtils.h - Shared builders and references for the tests -===//
#ifndef DYNB_TESTS_UNIT_RUNTIME_RUNTIMETESTUTILS_H
#define DYNB_TESTS_UNIT_RUNTIME_RUNTIMETESTUTILS_H

#include "dynb/Runtime/Plan.h"

#include <cstdint>
#include <random>
#include <vector>

namespace dynb::rt::test {

inline Region wholeBuffer(const Plan &plan, BufferId id) {
  return Region{id, 0, plan.buffers[id].rows, 0, plan.buffers[id].cols};
}

inline Step gatherStep(Region dst, int64_t srcCol,
                       std::vector<RowRef> sources) {
  Step step{GatherStep{}};
  step.gather().dst = dst;
  step.gather().srcCol = srcCol;
  step.gather().sources = std::move(sources);
  return step;
}

inline Step gemmStep(Region a, BufferId weight, Region c) {
  Step step{GemmStep{}};
  step.gemm().a = a;
  step.gemm().weight = weight;
  step.gemm().c = c;
  return step;
}

inline Step gemmStep(Region a, BufferId weight, BufferId bias, Region c) {
  Step step = gemmStep(a, weight, c);
  step.gemm().hasBias = true;
  step.gemm().bias = bias;
  return step;
}

inline Step kernelStep(KernelFn fn, std::string name, int64_t rows,
                       std::vector<Region> args) {
  Step step{KernelStep{}};
  step.kernel().fn = fn;
  step.kernel().name = std::move(name);
  step.kernel().rows = rows;
  step.kernel().args = std::move(args);
  return step;
}

inline std::vector<float> randomValues(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &value : values)
    value = distribution(generator);
  return values;
}

/// c[i][j] = sum_p a[i][p] * w[j][p] (+ bias[j]) in double, the reference
/// every GEMM path is held against.
inline void referenceGemm(int64_t m, int64_t k, int64_t n, const float *a,
                          int64_t lda, const float *w, const float *bias,
                          float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias ? bias[j] : 0.0;
      for (int64_t p = 0; p < k; ++p)
        sum += static_cast<double>(a[i * lda + p]) * w[j * k + p];
      c[i * ldc + j] = static_cast<float>(sum);
    }
}

} // namespace dynb::rt::test

#endif // DYNB_TESTS_UNIT_RUNTIME_RUNTIMETESTUTILS_H
