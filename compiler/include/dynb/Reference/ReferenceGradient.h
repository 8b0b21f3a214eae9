//===- ReferenceGradient.h - Reverse mode, one instance at a time -*- C++
//-*-===//
//
// The oracle of training: the gradient of the sum of an instance's loss
// nodes with respect to every parameter, by reverse-mode differentiation in
// double precision over a tape of the instance's ops (module calls inlined).
// It shares nothing with the batched path but the IR and the parameters,
// and its own forward pass (also in double) is what the finite-difference
// tests perturb (tests/unit/reference/ReferenceGradientTest.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_REFERENCE_REFERENCEGRADIENT_H
#define DYNB_REFERENCE_REFERENCEGRADIENT_H

#include "dynb/Dialect/DynbOps.h"
#include "dynb/Runtime/ParameterStore.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <string>
#include <vector>

namespace dynb {

class ReferenceGradient {
public:
  /// Reads every tensor of `params` into double precision once.
  ReferenceGradient(mlir::ModuleOp model, const rt::ParameterStore &params);

  /// The sum of the instance's loss nodes, forward only. Fails, with a
  /// located error, on an op reverse mode does not support yet (dispatch
  /// and the feature-map ops).
  mlir::FailureOr<double> loss(InstanceOp instance);
  /// Adds the gradient of the instance's loss to gradients() and returns
  /// that loss.
  mlir::FailureOr<double> accumulate(InstanceOp instance);

  /// The vector-Jacobian product of module `fn` on one row of arguments:
  /// the adjoints of its arguments for `resultAdjoints` (one per result),
  /// whose parameter gradients are added to gradients(). The checks of
  /// dynb-grad's adjoint modules compare with it.
  mlir::FailureOr<std::vector<std::vector<double>>>
  moduleAdjoint(mlir::func::FuncOp fn,
                llvm::ArrayRef<std::vector<double>> arguments,
                llvm::ArrayRef<std::vector<double>> resultAdjoints);

  /// One tensor per parameter of the store, same shape, in double: the sum
  /// over every accumulate() so far.
  const std::map<std::string, std::vector<double>> &gradients() const {
    return gradients_;
  }
  const std::vector<int64_t> &shapeOf(const std::string &param) const;
  /// gradients() rounded to F32, as the tensors an optimizer or a
  /// safetensors file takes.
  rt::ParameterStore gradientsAsStore() const;
  void clearGradients();
  /// Reads the values of `params` again (after an optimizer step); the
  /// store must hold the tensors it was constructed with, same shapes.
  void setParams(const rt::ParameterStore &params);

  /// Loss nodes evaluated by loss() and accumulate() since the last
  /// clearPredictions(), and how many of them put their label first (the
  /// first of equal logits wins, as argmax does).
  struct Predictions {
    int64_t correct = 0;
    int64_t total = 0;
  };
  const Predictions &predictions() const { return predictions_; }
  void clearPredictions() { predictions_ = {}; }

  /// Moves element `index` of `param` by `delta` (in double) for every later
  /// loss() and accumulate(): central differences are two nudges.
  void nudge(llvm::StringRef param, int64_t index, double delta);

private:
  struct Tape;
  mlir::FailureOr<double> forward(InstanceOp instance, Tape &tape);
  /// Evaluates `block`'s ops onto the tape; `env` maps its values to tape
  /// slots, `results` gets the slots its terminator returns.
  mlir::LogicalResult record(mlir::Block &block,
                             llvm::DenseMap<mlir::Value, unsigned> &env,
                             llvm::SmallVectorImpl<unsigned> &results,
                             Tape &tape);
  /// Adds the tape's parameter gradients to gradients(); `adjoints`, when
  /// given, receives every slot's adjoint (empty: none reached it).
  void backward(Tape &tape,
                std::vector<std::vector<double>> *adjoints = nullptr);
  struct Tensor;
  mlir::FailureOr<const Tensor *> param(mlir::Operation *user,
                                        llvm::StringRef name) const;

  mlir::ModuleOp model;
  Predictions predictions_;
  struct Tensor {
    std::vector<int64_t> shape;
    std::vector<double> data;
  };
  std::map<std::string, Tensor, std::less<>> params_;
  std::map<std::string, std::vector<double>> gradients_;
};

} // namespace dynb

#endif // DYNB_REFERENCE_REFERENCEGRADIENT_H
