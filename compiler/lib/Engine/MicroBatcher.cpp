//===- MicroBatcher.cpp - Gathering callers' instances into batches -------===//
#include "dynb/Engine/MicroBatcher.h"

using namespace dynb;

MicroBatcher::MicroBatcher(Engine &engine, MicroBatcherOptions options)
    : engine_(engine), options_(options) {
  if (options_.maxInstances == 0)
    options_.maxInstances = 1;
  worker_ = std::thread([this] { work(); });
}

MicroBatcher::~MicroBatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

std::future<llvm::Expected<InstanceOutputs>>
MicroBatcher::submit(InstanceBuilder build) {
  Request r{std::move(build), {}, std::chrono::steady_clock::now()};
  auto future = r.done.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(r));
  }
  wake_.notify_one();
  return future;
}

uint64_t MicroBatcher::batchesRun() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return batchesRun_;
}

void MicroBatcher::work() {
  std::vector<Request> taken;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return; // stopping, nothing left
    // Wait for a full batch or until the oldest request's deadline.
    auto deadline = queue_.front().queued + options_.maxDelay;
    wake_.wait_until(lock, deadline, [&] {
      return stopping_ || queue_.size() >= options_.maxInstances;
    });
    size_t n = std::min(queue_.size(), options_.maxInstances);
    taken.clear();
    for (size_t i = 0; i < n; ++i) {
      taken.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    // Counted before its callers hear back, so a caller holding all its
    // answers sees every batch that produced them.
    ++batchesRun_;
    lock.unlock();
    runBatch(taken);
    lock.lock();
  }
}

void MicroBatcher::runBatch(std::vector<Request> &requests) {
  Batch batch(engine_);
  std::vector<bool> failed(requests.size(), false);
  for (size_t i = 0; i < requests.size(); ++i) {
    Instance inst = batch.addInstance();
    requests[i].build(inst);
    if (batch.failed(inst.index())) {
      // This caller's mistake is its own: report it, run the others.
      llvm::Error err = batch.error();
      std::string message = llvm::toString(std::move(err));
      batch.discard(inst.index());
      requests[i].done.set_value(
          llvm::createStringError(llvm::inconvertibleErrorCode(), message));
      failed[i] = true;
    }
  }
  llvm::Expected<Results> results = engine_.run(batch);
  if (!results) {
    std::string message = llvm::toString(results.takeError());
    for (size_t i = 0; i < requests.size(); ++i)
      if (!failed[i])
        requests[i].done.set_value(
            llvm::createStringError(llvm::inconvertibleErrorCode(), message));
    return;
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    if (failed[i])
      continue;
    InstanceOutputs out;
    for (size_t k = 0; k < results->numOutputs(i); ++k) {
      llvm::ArrayRef<float> v = results->output(i, k);
      out.outputs.emplace_back(v.begin(), v.end());
    }
    requests[i].done.set_value(std::move(out));
  }
}
