//===- KernelCompiler.cpp - The lowering pipeline and the ORC JIT ---------===//
#include "dynb/JIT/KernelCompiler.h"
#include "dynb/JIT/KernelObjectStore.h"
#include "dynb/Transforms/Passes.h"
#include "dynb/Transforms/Pipelines.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"

#include <cstdlib>
#include <mutex>

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

/// Everything besides the kernels' IR that decides their machine code: a
/// cache entry made under another context is another entry. Bump
/// kKernelFormat when code generation changes in a way none of the rest
/// shows (the kernel ABI, say).
static const std::string &codegenContext() {
  static const std::string context = [] {
    constexpr int kKernelFormat = 1;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "dynb kernel format " << kKernelFormat << "\nLLVM "
       << LLVM_VERSION_STRING << "\n";
    if (llvm::TargetMachine *tm = hostTargetMachine())
      os << tm->getTargetTriple().str() << "\n"
         << tm->getTargetCPU() << "\n"
         << tm->getTargetFeatureString() << "\n";
    // The pass pipeline with its options, and the LLVM optimisation level.
    MLIRContext ctx;
    PassManager pm(&ctx);
    buildKernelsToLLVMPipeline(pm);
    pm.printAsTextualPipeline(os);
    os << "\nO3 codegen Aggressive\n";
    return text;
  }();
  return context;
}

static std::string objectKey(ModuleOp kernels) {
  std::string key = codegenContext();
  llvm::raw_string_ostream os(key);
  kernels->print(os, OpPrintingFlags().printGenericOpForm());
  return key;
}

/// Packed entry points, as mlir::ExecutionEngine names them (it wraps every
/// function `f` as `_mlir_f`).
static std::string packedName(llvm::StringRef kernel) {
  return "_mlir__mlir_ciface_" + kernel.str();
}

/// Links a stored object into a JIT of its own, resolving what it calls
/// from the process as mlir::ExecutionEngine does.
static llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>>
loadObject(std::unique_ptr<llvm::MemoryBuffer> object) {
  auto machine = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine)
    return machine.takeError();
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(std::move(*machine))
          .setObjectLinkingLayerCreator(
              [](llvm::orc::ExecutionSession &session, const llvm::Triple &)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
                    session, [] {
                      return std::make_unique<llvm::SectionMemoryManager>();
                    });
              })
          .create();
  if (!jit)
    return jit.takeError();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  if (llvm::Error e = (*jit)->addObjectFile(std::move(object)))
    return std::move(e);
  return std::move(*jit);
}

/// The kernels of `lowered` from `store`, when it has them and they load.
static bool loadFromStore(LoweredModule &lowered, const std::string &key,
                          const KernelObjectStore &store) {
  std::unique_ptr<llvm::MemoryBuffer> object = store.load(key, llvm::errs());
  if (!object)
    return false;
  std::string path = object->getBufferIdentifier().str();
  auto jit = loadObject(std::move(object));
  llvm::SmallVector<rt::KernelFn, 4> fns;
  llvm::Error error = jit ? llvm::Error::success() : jit.takeError();
  if (!error) {
    for (const std::string &name : lowered.kernelNames) {
      auto address = (*jit)->lookup(packedName(name));
      if (!address) {
        error = address.takeError();
        break;
      }
      fns.push_back(address->toPtr<rt::KernelFn>());
    }
  }
  if (error) {
    llvm::errs() << "warning: kernel cache entry " << path << " does not load ("
                 << llvm::toString(std::move(error))
                 << "); compiling the module again\n";
    return false;
  }
  lowered.kernelFns.assign(fns.begin(), fns.end());
  lowered.loadedCode = std::move(*jit);
  return true;
}

/// Puts the object `engine` compiled into `store`. mlir::ExecutionEngine
/// hands its object out only as a file, so it is written to a temporary
/// file first and read back.
static void storeObject(ExecutionEngine &engine, const std::string &key,
                        const KernelObjectStore &store) {
  llvm::SmallString<128> temp;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("dynb-kernels", "o", temp)) {
    llvm::errs() << "warning: kernel cache: no temporary file (" << ec.message()
                 << ")\n";
    return;
  }
  engine.dumpToObjectFile(temp);
  auto object = llvm::MemoryBuffer::getFile(temp, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (object && (*object)->getBufferSize() > 0)
    store.store(key, (*object)->getBuffer(), llvm::errs());
  llvm::sys::fs::remove(temp);
}

FailureOr<JitOutcome> dynb::jitCompile(LoweredModule &lowered,
                                       const KernelObjectStore *store) {
  ModuleOp kernels = *lowered.kernels;
  initializeNativeTarget();
  // A module of GEMMs alone has no kernels: nothing to compile or keep.
  if (lowered.kernelNames.empty()) {
    lowered.kernelFns.clear();
    return JitOutcome::NoKernels;
  }
  std::string key;
  if (store) {
    key = objectKey(kernels);
    if (loadFromStore(lowered, key, *store))
      return JitOutcome::Loaded;
  }
  if (failed(lowerKernelsToLLVMDialect(kernels)))
    return failure();
  registerTranslations(*kernels.getContext());
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
  opts.enableObjectDump = dumpDir != nullptr || store != nullptr;
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
  if (store)
    storeObject(**engine, key, *store);
  lowered.engine = std::move(*engine);
  return JitOutcome::Compiled;
}
