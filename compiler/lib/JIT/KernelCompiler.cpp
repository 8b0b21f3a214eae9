//===- KernelCompiler.cpp - The lowering pipeline and the ORC JIT ---------===//
#include "dynb/JIT/KernelCompiler.h"
#include "dynb/Transforms/Passes.h"
#include "dynb/Transforms/Pipelines.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"

#include <cstdlib>

using namespace mlir;
using namespace dynb;

namespace {

void initializeNativeTarget() {
  static bool done = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)done;
}

llvm::TargetMachine *hostTargetMachine() {
  initializeNativeTarget();
  static std::unique_ptr<llvm::TargetMachine> tm = [] {
    auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!builder) {
      llvm::consumeError(builder.takeError());
      return std::unique_ptr<llvm::TargetMachine>();
    }
    builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto made = builder->createTargetMachine();
    if (!made) {
      llvm::consumeError(made.takeError());
      return std::unique_ptr<llvm::TargetMachine>();
    }
    return std::move(*made);
  }();
  return tm.get();
}

} // namespace

std::unique_ptr<Pass> dynb::createExpandMathPass() {
  return createExpandMath();
}

LogicalResult dynb::lowerKernelsToLLVMDialect(ModuleOp kernels) {
  MLIRContext *ctx = kernels.getContext();
  loadLoweringDialects(*ctx);
  PassManager pm(ctx);
  buildKernelsToLLVMPipeline(pm);
  return pm.run(kernels);
}

static void registerTranslations(MLIRContext &ctx) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx.appendDialectRegistry(registry);
}

LogicalResult dynb::printOptimizedLLVMIR(ModuleOp kernels,
                                         llvm::raw_ostream &os) {
  registerTranslations(*kernels.getContext());
  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> mod = translateModuleToLLVMIR(kernels, llvmCtx);
  if (!mod)
    return kernels.emitError("translation to LLVM IR failed");
  llvm::TargetMachine *tm = hostTargetMachine();
  if (tm) {
    mod->setDataLayout(tm->createDataLayout());
    mod->setTargetTriple(tm->getTargetTriple().getTriple());
  }
  auto optimize = makeOptimizingTransformer(3, 0, tm);
  if (llvm::Error e = optimize(mod.get()))
    return kernels.emitError("LLVM optimisation failed: ")
           << llvm::toString(std::move(e));
  mod->print(os, nullptr);
  return success();
}

LogicalResult dynb::jitCompile(LoweredModule &lowered) {
  ModuleOp kernels = *lowered.kernels;
  if (failed(lowerKernelsToLLVMDialect(kernels)))
    return failure();
  registerTranslations(*kernels.getContext());
  initializeNativeTarget();
  // ExecutionEngineOptions holds a function_ref: the transformer must
  // outlive create().
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(3, 0, hostTargetMachine());
  ExecutionEngineOptions opts;
  opts.transformer = optimize;
  opts.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  // DYNB_JIT_OBJECT_DIR=dir writes each compiled module's object file there
  // (for objdump and profilers, which see JIT code as anonymous).
  const char *dumpDir = std::getenv("DYNB_JIT_OBJECT_DIR");
  opts.enableObjectDump = dumpDir != nullptr;
  auto engine = ExecutionEngine::create(kernels, opts);
  if (!engine)
    return kernels.emitError("JIT compilation failed: ")
           << llvm::toString(engine.takeError());
  lowered.kernelFns.clear();
  for (const std::string &name : lowered.kernelNames) {
    auto fn = (*engine)->lookupPacked("_mlir_ciface_" + name);
    if (!fn)
      return kernels.emitError("kernel '")
             << name
             << "' not found after JIT: " << llvm::toString(fn.takeError());
    lowered.kernelFns.push_back(reinterpret_cast<rt::KernelFn>(*fn));
  }
  if (dumpDir)
    (*engine)->dumpToObjectFile(std::string(dumpDir) + "/" + lowered.name +
                                ".o");
  lowered.engine = std::move(*engine);
  return success();
}
