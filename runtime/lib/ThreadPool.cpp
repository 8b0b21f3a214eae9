//===- ThreadPool.cpp - Persistent workers for row-parallel runtime steps -===//
#include "dynb/Runtime/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <system_error>

using namespace dynb::rt;

namespace {

// Steps arrive back to back, so a worker that has just finished usually gets
// new work within microseconds, sooner than a futex sleep and wake-up. The
// spin is kept short because oneDNN's OpenMP threads need the same cores for
// the GEMMs between kernel steps.
constexpr std::chrono::microseconds kWorkerSpin{20};
// The caller waits only for chunks already running, which take about as long
// as its own; past this it yields its core to them.
constexpr std::chrono::microseconds kCallerSpin{50};

// Chunk counts and indices live in 16 bits of the claim word.
constexpr unsigned kMaxChunks = 0xffff;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

/// Spins until done() or the budget runs out; reading the clock only every
/// few iterations keeps the loop cheap.
template <typename Done>
bool spinUntil(Done &&done, std::chrono::microseconds budget) {
  auto deadline = std::chrono::steady_clock::now() + budget;
  for (unsigned i = 1;; ++i) {
    if (done())
      return true;
    cpuRelax();
    if (i % 32 == 0 && std::chrono::steady_clock::now() >= deadline)
      return done();
  }
}

uint64_t packClaim(uint32_t generation, unsigned chunks, unsigned next) {
  return static_cast<uint64_t>(generation) << 32 |
         static_cast<uint64_t>(chunks) << 16 | next;
}

} // namespace

ThreadPool::ThreadPool(unsigned numThreads) {
  if (numThreads == 0)
    numThreads = std::max(1u, std::thread::hardware_concurrency());
  numThreads = std::min(numThreads, kMaxChunks);
  workers_.reserve(numThreads - 1);
  for (unsigned i = 1; i < numThreads; ++i) {
    try {
      workers_.emplace_back([this] { workerLoop(); });
    } catch (const std::system_error &) {
      // Fewer workers than asked for is still correct, only slower.
      break;
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

void ThreadPool::claimAndRunChunks(uint32_t generation) {
  uint64_t word = claimWord_.load(std::memory_order_acquire);
  for (;;) {
    unsigned chunks = (word >> 16) & kMaxChunks;
    unsigned next = word & kMaxChunks;
    if (static_cast<uint32_t>(word >> 32) != generation || next >= chunks)
      return;
    if (!claimWord_.compare_exchange_weak(word, word + 1,
                                          std::memory_order_acq_rel,
                                          std::memory_order_acquire))
      continue;
    int64_t begin = jobSize_ * next / chunks;
    int64_t end = jobSize_ * (next + 1) / chunks;
    jobFn_(jobContext_, begin, end);
    chunksDone_.fetch_add(1, std::memory_order_release);
    word = claimWord_.load(std::memory_order_acquire);
  }
}

void ThreadPool::runChunks(int64_t n, ChunkFn fn, void *context) {
  if (n <= 0)
    return;
  unsigned chunks = static_cast<unsigned>(std::min<int64_t>(numThreads(), n));
  if (chunks == 1) {
    fn(context, 0, n);
    return;
  }
  jobFn_ = fn;
  jobContext_ = context;
  jobSize_ = n;
  chunksDone_.store(0, std::memory_order_relaxed);
  uint32_t generation = ++generation_;
  {
    // Publishing under the mutex pairs with the workers' predicate check,
    // so a worker about to sleep cannot miss the job.
    std::lock_guard<std::mutex> lock(mutex_);
    claimWord_.store(packClaim(generation, chunks, 0),
                     std::memory_order_release);
  }
  wake_.notify_all();
  claimAndRunChunks(generation);
  auto allDone = [&] {
    return chunksDone_.load(std::memory_order_acquire) == chunks;
  };
  if (!spinUntil(allDone, kCallerSpin))
    while (!allDone())
      std::this_thread::yield();
}

void ThreadPool::workerLoop() {
  uint32_t seenGeneration = 0;
  auto currentGeneration = [&] {
    return static_cast<uint32_t>(claimWord_.load(std::memory_order_acquire) >>
                                 32);
  };
  for (;;) {
    if (!spinUntil([&] { return currentGeneration() != seenGeneration; },
                   kWorkerSpin)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || currentGeneration() != seenGeneration;
      });
      if (stopping_)
        return;
    }
    seenGeneration = currentGeneration();
    claimAndRunChunks(seenGeneration);
  }
}
