//===- AdjointRules.h - The adjoints of the elementwise ops and concat ----===//
//
// Shared by dynb-grad (inside modules, where the forward values an adjoint
// reads become the adjoint module's arguments) and dynb-backward (inside
// instances, where they are read directly).
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_TRANSFORMS_ADJOINTRULES_H
#define DYNB_TRANSFORMS_ADJOINTRULES_H

#include "dynb/Dialect/DynbOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace dynb {

/// If `op` is add, mul, neg, sigmoid, tanh, relu or concat, builds the
/// adjoints of its operands from `dy`, its result's adjoint, passes each
/// to `accumulate(operand, adjoint)` and returns true; otherwise builds
/// nothing and returns false. `saved(v)` is how the adjoint reads forward
/// value v (a product's factors, a sigmoid's or tanh's output, a relu's
/// input).
bool buildLocalAdjoint(
    mlir::OpBuilder &b, mlir::Operation *op, mlir::Value dy,
    llvm::function_ref<mlir::Value(mlir::Value)> saved,
    llvm::function_ref<void(mlir::Value, mlir::Value)> accumulate);

} // namespace dynb

#endif // DYNB_TRANSFORMS_ADJOINTRULES_H
