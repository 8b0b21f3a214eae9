//===- Results.h - A run's outputs, per instance, as float spans -*- C++
//-*-===//
#ifndef DYNB_ENGINE_RESULTS_H
#define DYNB_ENGINE_RESULTS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <vector>

namespace dynb {

/// What one run did and where its time went (seconds).
struct BatchStats {
  uint64_t instances = 0, nodes = 0;
  uint64_t launches = 0; // summed over rounds
  /// Runs of the graph: 1, plus one per round of reads (runTasks).
  uint32_t rounds = 1;
  double scheduleSeconds = 0; // scheduleBatches
  double assembleSeconds = 0; // plan assembly (kernel compiles excluded)
  double compileSeconds = 0;  // kernels for per-instance ops of new shapes
  double waitSeconds = 0;     // waiting for another thread's run
  double runSeconds = 0;      // the executor: gathers, GEMMs, kernels
  double copySeconds = 0;     // copying outputs out of the arena
};

/// One output of one instance: its values and its shape (per-instance
/// values are vectors, so the shape is {width}).
struct OutputView {
  llvm::ArrayRef<float> data;
  llvm::SmallVector<int64_t, 2> shape;
};

class Results {
public:
  size_t numInstances() const { return instanceStart_.size() - 1; }
  size_t numOutputs(size_t instance) const {
    return instanceStart_[instance + 1] - instanceStart_[instance];
  }
  /// Output `k` of instance `instance`.
  llvm::ArrayRef<float> output(size_t instance, size_t k) const {
    size_t o = instanceStart_[instance] + k;
    return llvm::ArrayRef<float>(values_).slice(
        outputStart_[o], outputStart_[o + 1] - outputStart_[o]);
  }
  OutputView view(size_t instance, size_t k) const {
    llvm::ArrayRef<float> d = output(instance, k);
    return {d, {static_cast<int64_t>(d.size())}};
  }
  const BatchStats &stats() const { return stats_; }
  /// The batch's loss: the sum, in double and in plan order, of every loss
  /// node (Instance::softmaxXent) of its instances, output or not; and
  /// whether it had any.
  double loss() const { return loss_; }
  bool hasLoss() const { return hasLoss_; }

  /// For the engine: appends the current instance's outputs, then ends it.
  float *appendOutput(int64_t width) {
    size_t at = values_.size();
    values_.resize(at + width);
    outputStart_.push_back(values_.size());
    return values_.data() + at;
  }
  void endInstance() { instanceStart_.push_back(outputStart_.size() - 1); }
  void reserve(size_t instances, size_t outputs, size_t floats) {
    instanceStart_.reserve(instances + 1);
    outputStart_.reserve(outputs + 1);
    values_.reserve(floats);
  }
  BatchStats &mutableStats() { return stats_; }
  void setLoss(double loss, bool hasLoss) {
    loss_ = loss;
    hasLoss_ = hasLoss;
  }

private:
  std::vector<float> values_;
  /// Output o is values_[outputStart_[o], outputStart_[o+1]).
  std::vector<uint64_t> outputStart_ = {0};
  /// Instance i has outputs [instanceStart_[i], instanceStart_[i+1]).
  std::vector<uint32_t> instanceStart_ = {0};
  BatchStats stats_;
  double loss_ = 0;
  bool hasLoss_ = false;
};

} // namespace dynb

#endif // DYNB_ENGINE_RESULTS_H
