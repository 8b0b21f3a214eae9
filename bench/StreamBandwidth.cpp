//===- StreamBandwidth.cpp - This machine's streaming memory bandwidth ----===//
//
// The ceiling the mixture-of-experts figures at 10,000 experts are held
// against: their expert weights do not fit in any cache and stream from
// memory once a pass. Reports the best of several passes of a read-only sum
// (what streaming weights does) and of STREAM's triad, over arrays far
// larger than the caches, on OpenMP's threads (the runtime's).
//
// usage: dynb-stream-bandwidth [MiB per array, default 512]
//
//===----------------------------------------------------------------------===//
#include <fmt/format.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

int main(int argc, char **argv) {
  int64_t mib = argc > 1 ? std::atoll(argv[1]) : 512;
  if (argc > 2 || mib <= 0) {
    std::fprintf(stderr, "usage: %s [MiB per array]\n", argv[0]);
    return 2;
  }
  int64_t n = mib * (int64_t(1) << 20) / int64_t(sizeof(float));
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  // First touch on the threads that stream them later.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.0f;
    b[i] = 1.0f + float(i % 7);
    c[i] = 2.0f;
  }
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  double bestRead = 1e30, bestTriad = 1e30, sink = 0;
  for (int pass = 0; pass < 6; ++pass) {
    auto start = Clock::now();
    // Sixteen independent sums a thread: a single running sum is one chain
    // of dependent adds, bound by the add's latency (measured: a quarter of
    // the memory's rate), not by memory; 'omp simd' alone did not split it.
    float sum = 0;
#pragma omp parallel reduction(+ : sum)
    {
      float lanes[16] = {};
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n / 16; ++i)
        for (int j = 0; j < 16; ++j)
          lanes[j] += b[i * 16 + j];
      for (float l : lanes)
        sum += l;
    }
    bestRead = std::min(bestRead, seconds(start));
    sink += sum;
    start = Clock::now();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      a[i] = b[i] + 3.0f * c[i];
    bestTriad = std::min(bestTriad, seconds(start));
    sink += a[pass];
  }
  double bytes = double(n) * sizeof(float);
  std::printf("%s\n",
              fmt::format("stream: read {:.2f} GB/s, triad {:.2f} GB/s "
                          "({} MiB arrays, {} threads; checksum {:.0f})",
                          bytes / bestRead * 1e-9, 3 * bytes / bestTriad * 1e-9,
                          mib, omp_get_max_threads(), sink)
                  .c_str());
  return 0;
}
