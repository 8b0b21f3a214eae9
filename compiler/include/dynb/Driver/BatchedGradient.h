//===- BatchedGradient.h - The batched backward pass of a loaded model ----===//
//
// What `dynbc grad` and `dynbc train` run: the model's instances with their
// backward nodes appended (dynb-grad, then dynb-backward, on a copy of the
// module), batched by a strategy like any instances, and run by one
// executor whose parameter-gradient steps add to a gradient store
// (docs/training.md).
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_BATCHEDGRADIENT_H
#define DYNB_DRIVER_BATCHEDGRADIENT_H

#include "dynb/Driver/Session.h"
#include "dynb/Runtime/Executor.h"

#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <vector>

namespace dynb {

class BatchedGradient {
public:
  /// Differentiates `session`'s model and instances (located diagnostics
  /// on failure). `params` (the session's, or a training session's for a
  /// dev set) are read at every run, so an optimizer may update them
  /// between runs. Without `backward` the instances are left as they are:
  /// runs give the loss and the predictions only (a dev set's).
  static mlir::FailureOr<std::unique_ptr<BatchedGradient>>
  create(Session &session, const rt::ParameterStore &params, unsigned threads,
         bool backward = true);

  size_t numInstances() const { return instances_.size(); }

  /// The plans of instances `order` (indices in file order), `batchSize`
  /// at a time in that order (0: all in one plan), under `strategy`; the
  /// launch counts go to `result`.
  mlir::FailureOr<std::vector<rt::Plan>> plan(llvm::ArrayRef<size_t> order,
                                              int64_t batchSize,
                                              BatchingStrategy strategy,
                                              RunResult &result);

  /// Validates `plan` and runs it after zeroing the gradients, so that
  /// gradients() then holds the gradient of its loss, which it returns.
  /// With `accumulate`, the gradients are not zeroed first: they sum over
  /// the plans run so.
  mlir::FailureOr<double> run(const rt::Plan &plan, bool accumulate = false);
  /// Zeroes every gradient.
  void clear();

  /// A tensor per parameter of the model, of its shape.
  const rt::ParameterStore &gradients() const { return gradients_; }
  /// Loss nodes whose logits' argmax (the lower class on ties) is their
  /// label, and loss nodes, over every run so far.
  struct Predictions {
    int64_t correct = 0, total = 0;
  };
  const Predictions &predictions() const { return predictions_; }
  void clearPredictions() { predictions_ = {}; }

private:
  explicit BatchedGradient(Session &session) : session_(session) {}

  Session &session_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  std::vector<InstanceOp> instances_;
  rt::ParameterStore gradients_;
  Predictions predictions_;
  std::unique_ptr<rt::Executor> executor_;
};

} // namespace dynb

#endif // DYNB_DRIVER_BATCHEDGRADIENT_H
