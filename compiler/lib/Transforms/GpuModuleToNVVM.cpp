//===- GpuModuleToNVVM.cpp - gpu.module to NVVM without libdevice ---------===//
//
// The polynomial expansions (dynb-expand-math) need only floor, fabs and fma,
// which are single PTX instructions: those LLVM intrinsics stay legal here,
// where convert-gpu-to-nvvm would call libdevice (__nv_floorf), and the PTX
// links nothing.
//
//===----------------------------------------------------------------------===//
#include "dynb/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

namespace dynb {
#define GEN_PASS_DEF_GPUMODULETONVVM
#include "dynb/Transforms/Passes.h.inc"
} // namespace dynb

using namespace mlir;

namespace {

struct GpuModuleToNVVMPass
    : public dynb::impl::GpuModuleToNVVMBase<GpuModuleToNVVMPass> {
  void runOnOperation() override {
    // The NVVM patterns would turn a math op into a libdevice call, which
    // the PTX could not resolve: refuse it here, at the op.
    WalkResult math = getOperation().walk([](Operation *op) {
      if (!isa<math::MathDialect>(op->getDialect()))
        return WalkResult::advance();
      op->emitError("'")
          << op->getName()
          << "' would need libdevice on the GPU: expand it (dynb-expand-math) "
             "or lower it to LLVM intrinsics (convert-math-to-llvm) first";
      return WalkResult::interrupt();
    });
    if (math.wasInterrupted())
      return signalPassFailure();
    MLIRContext *ctx = &getContext();
    LowerToLLVMOptions options(ctx);
    LLVMTypeConverter converter(ctx, options);
    RewritePatternSet patterns(ctx);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns);
    populateGpuToNVVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*ctx);
    configureGpuToNVVMConversionLegality(target);
    target.addLegalOp<LLVM::FFloorOp, LLVM::FAbsOp, LLVM::FMAOp>();
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
