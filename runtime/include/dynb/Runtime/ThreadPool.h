//===- ThreadPool.h - Persistent workers for row-parallel runtime steps ---===//
#ifndef DYNB_RUNTIME_THREADPOOL_H
#define DYNB_RUNTIME_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace dynb::rt {

/// A fixed set of worker threads that split a range into contiguous chunks.
/// The calling thread runs chunks too, and takes any no worker has claimed,
/// so a worker that is asleep or descheduled never delays a job it has not
/// started; a pool of N threads starts N - 1 workers. parallelFor() may only
/// be called by one thread at a time and must not be called from a chunk.
class ThreadPool {
public:
  /// numThreads counts the caller; 0 means std::thread::hardware_concurrency.
  explicit ThreadPool(unsigned numThreads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Threads that may take part in parallelFor(), the caller included.
  unsigned numThreads() const {
    return static_cast<unsigned>(workers_.size()) + 1;
  }

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
  void workerLoop();
  /// Runs chunks of job `generation` until none is left to claim.
  void claimAndRunChunks(uint32_t generation);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false; // guarded by mutex_

  // Chunks are claimed by compare-and-swap on one word holding the job's
  // generation (bits 32-63), its chunk count (16-31) and the next unclaimed
  // chunk (0-15). A thread reads the job fields below only after claiming a
  // chunk, and the caller rewrites them only once every chunk is done, so a
  // worker that wakes up late sees a stale generation and touches nothing.
  std::atomic<uint64_t> claimWord_{0};
  std::atomic<unsigned> chunksDone_{0};
  uint32_t generation_ = 0; // the caller's copy of the current generation

  ChunkFn jobFn_ = nullptr;
  void *jobContext_ = nullptr;
  int64_t jobSize_ = 0;
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_THREADPOOL_H
