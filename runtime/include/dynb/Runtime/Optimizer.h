//===- Optimizer.h - SGD and Adam steps on a parameter store ----*- C++ -*-===//
//
// Applies a batch's parameter gradients to the parameters: SGD (optionally
// with momentum) or Adam, with optional clipping of the gradients' global
// L2 norm and optional lazy updates, which touch only the rows a batch's
// gradient touches (embedding tables: a batch reads few of their rows).
// Defaults follow DyNet's trainers, the peer dynb's training is compared
// with: Adam lr 0.001, beta1 0.9, beta2 0.999, epsilon 1e-8; SGD lr 0.1.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_RUNTIME_OPTIMIZER_H
#define DYNB_RUNTIME_OPTIMIZER_H

#include "dynb/Runtime/ParameterStore.h"
#include "dynb/Runtime/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dynb::rt {

struct OptimizerOptions {
  enum class Kind { Sgd, Adam };
  Kind kind = Kind::Adam;
  /// 0: the kind's default (Adam 0.001, SGD 0.1).
  float learningRate = 0;
  /// SGD: velocity = momentum * velocity + gradient; param -= lr * velocity.
  float momentum = 0;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  /// When positive, every gradient is scaled by clipNorm / norm when the
  /// global L2 norm over all of them exceeds clipNorm.
  float clipNorm = 0;
  /// Update only the rows (last dimension) whose gradient has a nonzero
  /// element, leaving the others' parameters and state as they are.
  bool lazyRows = false;

  float effectiveLearningRate() const {
    return learningRate > 0 ? learningRate : kind == Kind::Adam ? 0.001f : 0.1f;
  }
};

class Optimizer {
public:
  explicit Optimizer(OptimizerOptions options = {});

  /// One step. Every tensor of `gradients` must name a tensor of `params`
  /// of the same shape; parameters without a gradient are left alone. A
  /// gradient holding NaN or Inf is refused and nothing is updated.
  Status step(ParameterStore &params, const ParameterStore &gradients);

  /// Steps taken (Adam's bias correction counts them).
  int64_t steps() const { return steps_; }
  /// The global L2 norm of the last step's gradients, before clipping.
  double lastGradientNorm() const { return lastNorm_; }
  const OptimizerOptions &options() const { return options_; }

  /// The state a later run resumes from, as tensors named under
  /// kStatePrefix: the step count, the kind, and per parameter its moments
  /// (SGD's velocity; Adam's first and second moments).
  void saveState(ParameterStore &out) const;
  /// Takes the tensors saveState wrote out of `in` and resumes from them;
  /// fails, changing nothing, if they are another kind's or malformed.
  Status loadState(ParameterStore &in);
  static constexpr const char *kStatePrefix = "__optimizer__/";

private:
  struct State {
    std::vector<float> first;  // SGD velocity, Adam's first moment
    std::vector<float> second; // Adam's second moment
  };
  OptimizerOptions options_;
  int64_t steps_ = 0;
  double lastNorm_ = 0;
  std::map<std::string, State, std::less<>> state_;
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_OPTIMIZER_H
