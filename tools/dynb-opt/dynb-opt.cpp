//===- dynb-opt.cpp - mlir-opt with the dynb dialect and passes -----------===//
#include "dynb/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<dynb::DynbDialect, mlir::func::FuncDialect>();
  dynb::registerDynbPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "dynb optimizer driver\n", registry));
}
