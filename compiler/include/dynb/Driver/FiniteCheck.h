//===- FiniteCheck.h - Refusing NaN and Inf in parameters and outputs -----===//
//
// What `dynbc run --check-finite` does: a checkpoint with a NaN in it, or a
// model that overflows, is reported where it happens (which tensor and
// element, which instance and output) instead of surfacing as garbage
// downstream.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_FINITECHECK_H
#define DYNB_DRIVER_FINITECHECK_H

#include "dynb/Driver/Outputs.h"
#include "dynb/Runtime/ParameterStore.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace dynb {

/// Fails on the first parameter (in name order) holding NaN or Inf, naming
/// `source` (the file or seed the parameters came from), the tensor, the
/// element's index and how many such elements the tensor holds.
llvm::Error checkFiniteParams(const rt::ParameterStore &params,
                              llvm::StringRef source);

/// Fails on the first non-finite output value, naming the instance, the
/// output and the column; `what` says whose outputs they are (a strategy).
llvm::Error checkFiniteOutputs(const StackedOutputs &outputs,
                               llvm::StringRef what);

} // namespace dynb

#endif // DYNB_DRIVER_FINITECHECK_H
