//===- ThreadPoolTest.cpp - parallelFor covers its range exactly once -----===//
#include "dynb/Runtime/ThreadPool.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <set>
#include <thread>

using namespace dynb::rt;

TEST(ThreadPoolTest, CoversEveryIndexOnceInContiguousChunks) {
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.numThreads(), threads);
    for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 100, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> chunks{0};
      pool.parallelFor(n, [&](int64_t begin, int64_t end) {
        EXPECT_LT(begin, end);
        chunks.fetch_add(1);
        for (int64_t i = begin; i < end; ++i)
          hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << threads << " threads, n=" << n;
      EXPECT_EQ(chunks.load(), std::min<int64_t>(n, threads));
    }
  }
}

TEST(ThreadPoolTest, CallerTakesPartAndWorkersAreDistinct) {
  ThreadPool pool(3);
  std::mutex mutex;
  std::set<std::thread::id> seen;
  pool.parallelFor(3, [&](int64_t, int64_t) {
    // Hold every chunk long enough that no thread can take two.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen.count(std::this_thread::get_id()));
}

TEST(ThreadPoolTest, ManyBackToBackJobs) {
  // Alternates tiny jobs with pauses long enough for workers to fall asleep,
  // exercising both the spinning and the sleeping wake-up.
  ThreadPool pool(4);
  std::atomic<int64_t> total{0};
  for (int job = 0; job < 20000; ++job) {
    pool.parallelFor(
        8, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
    if (job % 2000 == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(total.load(), 20000 * 8);
}

TEST(ThreadPoolTest, ZeroMeansOpenMPsDefault) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.numThreads(),
            static_cast<unsigned>(std::max(1, omp_get_max_threads())));
}
