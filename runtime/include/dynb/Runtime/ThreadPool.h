//===- ThreadPool.h - Row-parallel loops on the runtime's threads ---------===//
#ifndef DYNB_RUNTIME_THREADPOOL_H
#define DYNB_RUNTIME_THREADPOOL_H

#include <cstdint>
#include <type_traits>

namespace dynb::rt {

/// Splits a range into contiguous chunks run in parallel. The threads are
/// OpenMP's, the same team oneDNN's GEMMs run on: with a second pool of our
/// own, its workers and OpenMP's spinning ones would fight over the cores
/// between steps (on 2 cores that cost more than the kernels themselves).
/// The calling thread runs a chunk too. parallelFor() must not be called
/// from inside a chunk.
class ThreadPool {
public:
  /// numThreads counts the caller; 0 means OpenMP's default
  /// (omp_get_max_threads(): OMP_NUM_THREADS, else the hardware's).
  explicit ThreadPool(unsigned numThreads = 0);

  /// Threads that may take part in parallelFor(), the caller included.
  unsigned numThreads() const { return numThreads_; }

  /// Calls fn(begin, end) on disjoint contiguous chunks covering [0, n), as
  /// many chunks as threads (fewer when n is small), and returns when all
  /// are done.
  template <typename Fn> void parallelFor(int64_t n, Fn &&fn) {
    using FnType = std::remove_reference_t<Fn>;
    runChunks(
        n,
        [](void *context, int64_t begin, int64_t end) {
          (*static_cast<FnType *>(context))(begin, end);
        },
        const_cast<void *>(static_cast<const void *>(&fn)));
  }

private:
  using ChunkFn = void (*)(void *context, int64_t begin, int64_t end);
  void runChunks(int64_t n, ChunkFn fn, void *context);

  unsigned numThreads_;
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_THREADPOOL_H
