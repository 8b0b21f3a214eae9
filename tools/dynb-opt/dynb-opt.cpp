//===- dynb-opt.cpp - mlir-opt with the dynb dialect and passes -----------===//
#include "dynb/Dialect/Registration.h"
#include "dynb/Transforms/Passes.h"
#include "dynb/Transforms/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  dynb::registerDynbDialects(registry);
  // What the GPU passes' inputs hold (dynb-map-parallel-to-gpu,
  // dynb-gpu-module-to-nvvm).
  registry.insert<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                  mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect>();
  // What the lowering pipelines read and write (dynb-lower-launches and
  // after: linalg, gpu, NVVM), so that each stage's output parses again.
  dynb::registerPipelineDialects(registry);
  dynb::registerDynbPasses();
  dynb::registerDynbPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "dynb optimizer driver\n", registry));
}
