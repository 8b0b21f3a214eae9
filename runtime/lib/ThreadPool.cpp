//===- ThreadPool.cpp - parallelFor over OpenMP's thread team -------------===//
#include "dynb/Runtime/ThreadPool.h"

#include <omp.h>

#include <algorithm>
#include <thread>

using namespace dynb::rt;

ThreadPool::ThreadPool(unsigned numThreads)
    : numThreads_(numThreads ? numThreads
                             : static_cast<unsigned>(
                                   std::max(1, omp_get_max_threads()))) {}

void ThreadPool::runChunks(int64_t n, ChunkFn fn, void *context) {
  if (n <= 0)
    return;
  int64_t chunks = std::min<int64_t>(n, numThreads_);
  if (chunks == 1) {
    fn(context, 0, n);
    return;
  }
  // One chunk an iteration, statically spread: every chunk runs even when
  // OpenMP grants fewer threads than asked for.
#pragma omp parallel for schedule(static, 1) num_threads(chunks)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = n * c / chunks;
    int64_t end = n * (c + 1) / chunks;
    fn(context, begin, end);
  }
}
