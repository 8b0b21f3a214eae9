//===- DynbOps.h - The dynb dialect's operations ----------------*- C++ -*-===//
#ifndef DYNB_DIALECT_DYNBOPS_H
#define DYNB_DIALECT_DYNBOPS_H

#include "dynb/Dialect/DynbDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dynb/Dialect/DynbEnums.h.inc"
#include "dynb/Dialect/DynbInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dynb/Dialect/DynbOps.h.inc"

namespace dynb {
/// Looks up the parameter `name` from `from` (any op below the module).
ParamOp lookupParam(mlir::Operation *from, mlir::SymbolTableCollection &tables,
                    mlir::FlatSymbolRefAttr name);

/// The attribute that marks a module as the experts of `dynb.dispatch`: the
/// number of experts its stacked parameters hold.
inline constexpr llvm::StringLiteral kExpertsAttrName = "dynb.experts";
/// The expert count of an expert module, 0 for any other module.
int64_t expertCount(mlir::func::FuncOp fn);
} // namespace dynb

#endif // DYNB_DIALECT_DYNBOPS_H
