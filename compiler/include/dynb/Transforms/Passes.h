//===- Passes.h - dynb's passes and pipelines -------------------*- C++ -*-===//
#ifndef DYNB_TRANSFORMS_PASSES_H
#define DYNB_TRANSFORMS_PASSES_H

#include "dynb/Dialect/DynbOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace dynb {

#define GEN_PASS_DECL
#include "dynb/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dynb/Transforms/Passes.h.inc"

} // namespace dynb

#endif // DYNB_TRANSFORMS_PASSES_H
