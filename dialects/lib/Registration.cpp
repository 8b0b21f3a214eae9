//===- Registration.cpp - The dialects a dynb program is made of ----------===//
#include "dynb/Dialect/Registration.h"
#include "dynb/Dialect/DynbDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

void dynb::registerDynbDialects(mlir::DialectRegistry &registry) {
  registry.insert<DynbDialect, mlir::func::FuncDialect>();
}

void dynb::loadDynbDialects(mlir::MLIRContext &context) {
  context.loadDialect<DynbDialect, mlir::func::FuncDialect>();
}
