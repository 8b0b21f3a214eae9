//===- CompileCommand.cpp - dynbc compile: print one --emit stage ---------===//
#include "dynb/Driver/Commands.h"
#include "dynb/Driver/StrategyList.h"
#include "dynb/JIT/KernelCompiler.h"
#include "dynb/Lowering/ModuleLowering.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace dynb;

int dynb::commandError(const llvm::Twine &msg) {
  // The table rows printed so far come before the error that ends them.
  llvm::outs().flush();
  llvm::WithColor::error(llvm::errs(), "dynbc") << msg << "\n";
  return 1;
}

int dynb::writeText(llvm::StringRef path, const std::string &text) {
  if (llvm::Error e =
          llvm::writeToOutput(path, [&](llvm::raw_ostream &os) -> llvm::Error {
            os << text;
            return llvm::Error::success();
          }))
    return commandError(llvm::toString(std::move(e)));
  return 0;
}

namespace {

/// --emit=gpu and --emit=ptx of one module's kernels. PTX modules are
/// separated by comment lines naming them (tests/lit/dynbc/Inputs/split-ptx.py
/// splits them for ptxas).
LogicalResult emitGpu(ModuleOp kernels, EmitStage emit, const GpuTarget &target,
                      llvm::raw_ostream &os) {
  if (failed(mapKernelsToGpu(kernels, target)))
    return failure();
  if (emit == EmitStage::Gpu) {
    kernels.print(os);
    os << "\n";
    return success();
  }
  if (failed(lowerGpuModulesToNVVM(kernels)))
    return failure();
  auto launches = describeGpuLaunches(kernels);
  auto ptx = compileGpuModulesToPtx(kernels, target);
  if (failed(launches) || failed(ptx))
    return failure();
  for (const PtxModule &m : *ptx) {
    os << "// ---- ptx module @" << m.name << " (" << target.chip << ")";
    for (const GpuLaunch &l : *launches)
      if (l.module == m.name) {
        os << ": entry " << l.kernel << ", launched by @" << l.hostFunction
           << "(";
        llvm::interleaveComma(l.args, os,
                              [&](unsigned a) { os << "arg" << a; });
        os << ")";
      }
    os << "\n" << m.ptx << "// ---- end ptx module @" << m.name << "\n";
  }
  return success();
}

} // namespace

int dynb::runCompileCommand(Session &session,
                            const CompileCommandOptions &options) {
  auto strats = parseStrategyList(options.strategies, /*single=*/true);
  if (!strats)
    return commandError(llvm::toString(strats.takeError()));
  std::string text;
  llvm::raw_string_ostream os(text);
  if (options.emit == EmitStage::Dynb) {
    session.module().print(os);
    return writeText(options.outputPath, os.str());
  }
  auto batched = session.batch(strats->front(), options.batchSize);
  if (failed(batched))
    return 1;
  if (options.emit == EmitStage::Batched) {
    (*batched)->print(os);
    return writeText(options.outputPath, os.str());
  }
  // Each distinct launched module (or batched op) once, in schedule order.
  llvm::StringSet<> seen;
  for (ScheduleOp s : (*batched)->getOps<ScheduleOp>())
    for (Operation &op : s.getBody().front()) {
      if (isa<GatherOp, YieldOp, LookupOp, BatchedSoftmaxXentOp,
              BatchedSoftmaxXentGradOp, LinearGradOp, BatchedEmbeddingGradOp,
              ZerosOp>(op))
        continue;
      if (!seen.insert(launchCodeKey(op)).second)
        continue;
      Operation *target = &op;
      if (auto call = dyn_cast<BatchedCallOp>(op))
        target = (*batched)->lookupSymbol<func::FuncOp>(call.getCallee());
      auto lowered = session.kernels().lowerOnly(target);
      if (failed(lowered))
        return 1;
      (*lowered)->printSteps(os);
      ModuleOp kernels = *(*lowered)->kernels;
      if (options.emit == EmitStage::Linalg) {
        kernels.print(os);
        os << "\n";
        continue;
      }
      if (options.emit == EmitStage::Gpu || options.emit == EmitStage::Ptx) {
        if (failed(emitGpu(kernels, options.emit, options.gpu, os)))
          return 1;
        continue;
      }
      if (failed(lowerKernelsToLLVMDialect(kernels)) ||
          failed(printOptimizedLLVMIR(kernels, os)))
        return 1;
    }
  return writeText(options.outputPath, os.str());
}
