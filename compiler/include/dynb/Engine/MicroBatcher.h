//===- MicroBatcher.h - One batch from many callers' instances --*- C++ -*-===//
//
// Callers on any thread submit one instance each (a function that builds
// its graph); a worker gathers submissions until `maxInstances` are waiting
// or the oldest has waited `maxDelay`, builds them into one Batch, runs it,
// and hands each caller its own outputs through a std::future. Requests
// that arrive together thus share launches without knowing of each other.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_ENGINE_MICROBATCHER_H
#define DYNB_ENGINE_MICROBATCHER_H

#include "dynb/Engine/Engine.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace dynb {

struct MicroBatcherOptions {
  size_t maxInstances = 64;
  std::chrono::microseconds maxDelay{2000};
};

/// One caller's outputs, in the order its builder called output().
struct InstanceOutputs {
  std::vector<std::vector<float>> outputs;
};

/// Builds one instance's graph; runs on the batcher's worker thread.
using InstanceBuilder = std::function<void(Instance &)>;

class MicroBatcher {
public:
  explicit MicroBatcher(Engine &engine, MicroBatcherOptions options = {});
  /// Runs what is still queued, then stops the worker.
  ~MicroBatcher();
  MicroBatcher(const MicroBatcher &) = delete;
  MicroBatcher &operator=(const MicroBatcher &) = delete;

  /// Queues one instance. The future holds its outputs, or the error of
  /// its builder (a misuse in it fails it alone) or of the run.
  std::future<llvm::Expected<InstanceOutputs>> submit(InstanceBuilder build);

  /// Batches started so far (for tests and monitoring).
  uint64_t batchesRun() const;

private:
  struct Request {
    InstanceBuilder build;
    std::promise<llvm::Expected<InstanceOutputs>> done;
    std::chrono::steady_clock::time_point queued;
  };
  void work();
  void runBatch(std::vector<Request> &requests);

  Engine &engine_;
  MicroBatcherOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Request> queue_;
  bool stopping_ = false;
  uint64_t batchesRun_ = 0;
  std::thread worker_;
};

} // namespace dynb

#endif // DYNB_ENGINE_MICROBATCHER_H
