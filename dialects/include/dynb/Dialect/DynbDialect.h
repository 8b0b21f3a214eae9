//===- DynbDialect.h - The dynb dialect -------------------------*- C++ -*-===//
#ifndef DYNB_DIALECT_DYNBDIALECT_H
#define DYNB_DIALECT_DYNBDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "dynb/Dialect/DynbOpsDialect.h.inc"

#endif // DYNB_DIALECT_DYNBDIALECT_H
