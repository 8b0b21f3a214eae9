//===- ReferenceInterpreter.h - The correctness oracle ----------*- C++ -*-===//
#ifndef DYNB_REFERENCE_REFERENCEINTERPRETER_H
#define DYNB_REFERENCE_REFERENCEINTERPRETER_H

#include "dynb/Dialect/DynbOps.h"
#include "dynb/Runtime/ParameterStore.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <vector>

namespace dynb {

/// Runs each instance alone with plain loops (double accumulation in
/// matrix-vector products), sharing nothing with the batched path but the
/// IR and the parameters (and, for noisy gating, the definition of the noise
/// draw, rt::gatingNoise). Every strategy is checked against it.
class ReferenceInterpreter {
public:
  ReferenceInterpreter(mlir::ModuleOp model, const rt::ParameterStore &params);

  /// The outputs of one instance, one vector per output.
  mlir::FailureOr<std::vector<std::vector<float>>> run(InstanceOp instance);
  /// Runs module `fn` alone on one row of arguments (the checks of
  /// dynb-grad's forward and adjoint modules use it).
  mlir::FailureOr<std::vector<std::vector<float>>>
  callModule(mlir::func::FuncOp fn,
             llvm::ArrayRef<std::vector<float>> arguments);
  /// The sum, in double, of every loss node (`dynb.softmax_xent`) of the
  /// instances run so far, and whether there was one.
  double loss() const { return loss_; }
  bool hasLoss() const { return sawLoss_; }

private:
  mlir::FailureOr<const rt::ParamTensor *> param(mlir::Operation *user,
                                                 llvm::StringRef name);
  mlir::LogicalResult
  evalBlock(mlir::Block &block,
            llvm::DenseMap<mlir::Value, std::vector<float>> &env,
            std::vector<std::vector<float>> &results);
  /// Convolutions, pooling, flatten and channel concat (ReferenceMaps.cpp):
  /// true if `op` is one of them and was evaluated.
  mlir::FailureOr<bool>
  evalMapOp(mlir::Operation *op,
            llvm::DenseMap<mlir::Value, std::vector<float>> &env);
  /// Gate, top k, softmax and the chosen experts, one row at a time, in
  /// double precision.
  mlir::LogicalResult
  evalDispatch(DispatchOp op,
               llvm::DenseMap<mlir::Value, std::vector<float>> &env);

  mlir::ModuleOp model;
  const rt::ParameterStore &params;
  /// The expert whose slice of stacked parameters linear ops read while a
  /// dispatch runs its expert module; -1 elsewhere.
  int64_t expert_ = -1;
  double loss_ = 0;
  bool sawLoss_ = false;
};

} // namespace dynb

#endif // DYNB_REFERENCE_REFERENCEINTERPRETER_H
