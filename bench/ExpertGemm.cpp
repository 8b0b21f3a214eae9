//===- ExpertGemm.cpp - Expert GEMMs on cold weights, plain and packed ----===//
//
// What a dispatch step's tiles do, without the routing: E experts, each a
// pair of GEMMs (d -> h, ReLU, h -> d) on `rows` rows, whole experts spread
// over the threads, single-threaded oneDNN calls from a cache a thread. With
// many experts the weights do not stay in cache between passes, which is
// where reading them in oneDNN's own layout (GemmCache::packWeights) pays.
//
// usage: dynb-expert-gemm EXPERTS ROWS D H
//   prints GFLOP/s with plain and with packed weights, best of 9 passes
//
//===----------------------------------------------------------------------===//
#include "dynb/Runtime/GemmCache.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

using namespace dynb::rt;

namespace {

struct FreeDeleter {
  void operator()(float *p) const { std::free(p); }
};

} // namespace

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s EXPERTS ROWS D H\n", argv[0]);
    return 2;
  }
  const int64_t experts = std::atoll(argv[1]), rows = std::atoll(argv[2]),
                d = std::atoll(argv[3]), h = std::atoll(argv[4]);
  if (experts <= 0 || rows <= 0 || d <= 0 || h <= 0) {
    std::fprintf(stderr, "all four must be positive\n");
    return 2;
  }
  // Stacked as the runtime holds them: W1 [E x h x d], W2 [E x d x h].
  std::vector<float> w1(experts * h * d), w2(experts * d * h), b1(h, 0.01f),
      b2(d, 0.01f);
  for (size_t i = 0; i < w1.size(); ++i)
    w1[i] = w2[i] = float(int64_t(i % 97) - 48) * 1e-3f;

  GemmCache packer;
  const int64_t f1 = packer.packedWeightFloats(d, h),
                f2 = packer.packedWeightFloats(h, d);
  if (f1 <= 0 || f2 <= 0) {
    std::fprintf(stderr, "oneDNN names no packed layout for these shapes\n");
    return 1;
  }
  std::unique_ptr<float, FreeDeleter> p1(static_cast<float *>(
      std::aligned_alloc(64, size_t(experts * f1) * sizeof(float))));
  std::unique_ptr<float, FreeDeleter> p2(static_cast<float *>(
      std::aligned_alloc(64, size_t(experts * f2) * sizeof(float))));
  if (!p1 || !p2) {
    std::fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (int64_t e = 0; e < experts; ++e)
    if (Status s =
            packer.packWeights(w1.data() + e * h * d, d, h, p1.get() + e * f1);
        s || (s = packer.packWeights(w2.data() + e * d * h, h, d,
                                     p2.get() + e * f2))) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }

  const int threads = omp_get_max_threads();
  std::vector<std::unique_ptr<GemmCache>> caches;
  for (int t = 0; t < threads; ++t)
    caches.push_back(std::make_unique<GemmCache>());
  const double flops = 4.0 * double(experts) * rows * d * h;
  for (bool packed : {false, true}) {
    double best = 1e30;
    bool failed = false;
    for (int pass = 0; pass < 10 && !failed; ++pass) {
      auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(|| : failed)
      {
        int t = omp_get_thread_num();
        std::vector<float> x(rows * d, 0.5f), hidden(rows * h), y(rows * d);
        for (int64_t e = t; e < experts && !failed; e += threads) {
          GemmArgs up{rows,      d,
                      h,         x.data(),
                      d,         w1.data() + e * h * d,
                      b1.data(), hidden.data(),
                      h,         /*relu=*/true};
          GemmArgs down{rows,          h,        d,
                        hidden.data(), h,        w2.data() + e * d * h,
                        b2.data(),     y.data(), d};
          if (packed) {
            up.packedW = p1.get() + e * f1;
            down.packedW = p2.get() + e * f2;
          }
          failed = bool(caches[t]->run(up)) || bool(caches[t]->run(down));
        }
      }
      double sec = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
      if (pass > 0) // the first pass creates the primitives
        best = std::min(best, sec);
    }
    if (failed) {
      std::fprintf(stderr, "a GEMM failed\n");
      return 1;
    }
    std::printf("%s\n",
                fmt::format("experts {} x {} rows, d {} h {}, {} threads, "
                            "{} weights: {:.1f} GFLOP/s ({:.0f} us a pass)",
                            experts, rows, d, h, threads,
                            packed ? "packed" : "plain", flops / best * 1e-9,
                            best * 1e6)
                    .c_str());
  }
  return 0;
}
