//===- GpuKernelCompiler.cpp - Kernels to gpu.launch, NVVM and PTX --------===//
#include "dynb/JIT/GpuKernelCompiler.h"
#include "dynb/Lowering/ModuleLowering.h"
#include "dynb/Transforms/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

using namespace mlir;
using namespace dynb;

static constexpr llvm::StringLiteral kNvptxTriple = "nvptx64-nvidia-cuda";

namespace {

void initializeNvptxTarget() {
  static bool done = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    return true;
  }();
  (void)done;
}

void registerGpuTranslations(MLIRContext &ctx) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  ctx.appendDialectRegistry(registry);
}

} // namespace

LogicalResult dynb::mapKernelsToGpu(ModuleOp kernels, const GpuTarget &target) {
  MLIRContext *ctx = kernels.getContext();
  loadLoweringDialects(*ctx);
  ctx->loadDialect<gpu::GPUDialect, scf::SCFDialect>();
  PassManager pm(ctx);
  KernelsToGpuOptions options;
  options.blockSize = target.blockSize;
  buildKernelsToGpuPipeline(pm, options);
  if (failed(pm.run(kernels)))
    return failure();
  // The ABI holds (every kernel argument a memref of the kernel function).
  return describeGpuLaunches(kernels);
}

FailureOr<SmallVector<GpuLaunch>> dynb::describeGpuLaunches(ModuleOp kernels) {
  SmallVector<GpuLaunch> out;
  WalkResult walked = kernels.walk([&](gpu::LaunchFuncOp launch) {
    GpuLaunch l;
    auto host = launch->getParentOfType<func::FuncOp>();
    l.hostFunction = host ? host.getName().str() : "";
    l.module = launch.getKernelModuleName().str();
    l.kernel = launch.getKernelName().str();
    for (Value v : launch.getKernelOperands()) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!host || !arg || arg.getOwner() != &host.getBody().front() ||
          !isa<MemRefType>(v.getType())) {
        launch.emitError("GPU kernel argument ")
            << l.args.size()
            << " is not a memref argument of the kernel function";
        return WalkResult::interrupt();
      }
      l.args.push_back(arg.getArgNumber());
    }
    out.push_back(std::move(l));
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  return out;
}

LogicalResult dynb::lowerGpuModulesToNVVM(ModuleOp kernels) {
  MLIRContext *ctx = kernels.getContext();
  ctx->loadDialect<LLVM::LLVMDialect, NVVM::NVVMDialect>();
  PassManager pm(ctx);
  buildGpuToNVVMPipeline(pm);
  return pm.run(kernels);
}

FailureOr<SmallVector<PtxModule>>
dynb::compileGpuModulesToPtx(ModuleOp kernels, const GpuTarget &target) {
  initializeNvptxTarget();
  registerGpuTranslations(*kernels.getContext());
  std::string error;
  const llvm::Target *nvptx =
      llvm::TargetRegistry::lookupTarget(kNvptxTriple.str(), error);
  if (!nvptx)
    return kernels.emitError("the NVPTX target is not available in this "
                             "LLVM: ")
           << error;
  // LLVM accepts an unknown chip or feature with only a warning on stderr
  // and emits PTX that ptxas then refuses; refuse them here instead.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      nvptx->createMCSubtargetInfo(kNvptxTriple, "", ""));
  if (!sti->isCPUStringValid(target.chip))
    return kernels.emitError("unknown NVPTX chip '")
           << target.chip << "' (expected e.g. sm_75, sm_80, sm_90)";
  SmallVector<StringRef> features;
  StringRef(target.features).split(features, ',', -1, /*KeepEmpty=*/false);
  for (StringRef f : features) {
    StringRef name = f.drop_front();
    bool known = llvm::any_of(
        sti->getAllProcessorFeatures(),
        [&](const llvm::SubtargetFeatureKV &kv) { return name == kv.Key; });
    if (!(f.starts_with("+") || f.starts_with("-")) || !known)
      return kernels.emitError("unknown NVPTX feature '")
             << f << "' (expected e.g. +ptx80)";
  }
  std::unique_ptr<llvm::TargetMachine> tm(nvptx->createTargetMachine(
      kNvptxTriple, target.chip, target.features, llvm::TargetOptions(),
      /*RM=*/std::nullopt, /*CM=*/std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    return kernels.emitError("no NVPTX target machine for chip '")
           << target.chip << "' with features '" << target.features << "'";

  SmallVector<PtxModule> out;
  for (auto gpuModule : kernels.getOps<gpu::GPUModuleOp>()) {
    llvm::LLVMContext llvmCtx;
    std::unique_ptr<llvm::Module> mod =
        translateModuleToLLVMIR(gpuModule, llvmCtx, gpuModule.getName());
    if (!mod)
      return gpuModule.emitError("translation to LLVM IR failed");
    mod->setDataLayout(tm->createDataLayout());
    mod->setTargetTriple(kNvptxTriple);
    auto optimize = makeOptimizingTransformer(3, 0, tm.get());
    if (llvm::Error e = optimize(mod.get()))
      return gpuModule.emitError("LLVM optimisation failed: ")
             << llvm::toString(std::move(e));
    PtxModule ptx;
    ptx.name = gpuModule.getName().str();
    {
      llvm::raw_string_ostream os(ptx.ptx);
      llvm::buffer_ostream bos(os);
      llvm::legacy::PassManager codegen;
      if (tm->addPassesToEmitFile(codegen, bos, nullptr,
                                  llvm::CodeGenFileType::AssemblyFile))
        return gpuModule.emitError("the NVPTX backend cannot emit PTX");
      codegen.run(*mod);
    }
    out.push_back(std::move(ptx));
  }
  return out;
}

FailureOr<SmallVector<PtxModule>>
dynb::compileKernelsToPtx(ModuleOp kernels, const GpuTarget &target) {
  if (failed(mapKernelsToGpu(kernels, target)) ||
      failed(lowerGpuModulesToNVVM(kernels)))
    return failure();
  return compileGpuModulesToPtx(kernels, target);
}
