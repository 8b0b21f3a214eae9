//===- Pipelines.cpp - dynb's pass pipelines, registered by name ----------===//
#include "dynb/Transforms/Pipelines.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void dynb::buildKernelsToLLVMPipeline(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createExpandMath());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createConvertMathToLLVMPass());
  // Math ops with neither a polynomial nor an LLVM intrinsic: libm calls.
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void dynb::buildKernelsToGpuPipeline(OpPassManager &pm,
                                     const KernelsToGpuOptions &options) {
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createExpandMath());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createMapParallelLoopsToGpu(
      MapParallelLoopsToGpuOptions{options.blockSize}));
  // Constants and memref.dim move into the launch body, so the outlined
  // kernel's arguments are the memrefs alone (the kernel ABI,
  // dynb/JIT/GpuKernelCompiler.h).
  pm.addPass(createGpuLauchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createCanonicalizerPass());
}

void dynb::buildGpuToNVVMPipeline(OpPassManager &pm) {
  OpPassManager &gpuPm = pm.nest<gpu::GPUModuleOp>();
  gpuPm.addPass(createConvertSCFToCFPass());
  gpuPm.addPass(createConvertMathToLLVMPass());
  gpuPm.addPass(createGpuModuleToNVVM());
  gpuPm.addPass(createReconcileUnrealizedCastsPass());
}

void dynb::registerDynbPipelines() {
  PassPipelineRegistration<>(
      "dynb-kernels-to-llvm",
      "Lower a kernels module (linalg on memrefs) to the LLVM dialect, as "
      "the JIT does: linalg to loops, tanh and exp to polynomials, then to "
      "LLVM",
      buildKernelsToLLVMPipeline);
  PassPipelineRegistration<KernelsToGpuOptions>(
      "dynb-kernels-to-gpu",
      "Lower a kernels module (linalg on memrefs) to host functions that "
      "make 1-D launches of outlined gpu.module kernels",
      buildKernelsToGpuPipeline);
  PassPipelineRegistration<>(
      "dynb-gpu-to-nvvm",
      "Lower the gpu.modules of dynb-kernels-to-gpu's output to the LLVM and "
      "NVVM dialects without libdevice",
      buildGpuToNVVMPipeline);
}

void dynb::registerPipelineDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect,
                  cf::ControlFlowDialect, func::FuncDialect, gpu::GPUDialect,
                  linalg::LinalgDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, NVVM::NVVMDialect, scf::SCFDialect>();
}
