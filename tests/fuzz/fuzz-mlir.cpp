//===- fuzz-mlir.cpp - Fuzzes dynbc's .mlir reader, dynb-grad, dynb-batch -===//
//
// Input: MLIR text. It is read as dynbc reads it (parseMlirGraphs: the
// nesting scan, the size check, the verifier), and if it verified, dynb-grad
// runs on a copy and the dynb-batch pass on the input (the pass manager
// verifies their results). The pass options come from the input's length and
// last byte, so that every input is replayable.
//
//===----------------------------------------------------------------------===//
#include "FuzzCommon.h"

#include "dynb/Dialect/DynbOps.h"
#include "dynb/Import/GraphImporter.h"

#include "dynb/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static dynb::fuzz::FuzzContext contexts;
  // MLIR's lexer relies on a NUL after the text (as MemoryBuffer and
  // SourceMgr provide for files): a comment or string at the end of a bare
  // buffer would make it read past the input. std::string has one.
  const std::string text(reinterpret_cast<const char *>(data), size);
  MLIRContext &ctx = contexts.next();
  // Parsed as dynbc parses it: the nesting scan and the size check first.
  llvm::SourceMgr sourceMgr;
  OwningOpRef<ModuleOp> module = dynb::parseMlirGraphs(
      llvm::MemoryBuffer::getMemBuffer(text, "fuzz.mlir",
                                       /*RequiresNullTerminator=*/true),
      sourceMgr, ctx);
  if (!module)
    return 0;

  // dynb-grad may refuse a module (a located error), never crash; what it
  // writes verifies, and every adjoint names the module it differentiates.
  {
    OwningOpRef<ModuleOp> copy(module->clone());
    PassManager grad(&ctx);
    grad.addPass(dynb::createDifferentiateModules());
    if (succeeded(grad.run(*copy)))
      for (auto fn : copy->getOps<func::FuncOp>())
        if (auto of =
                fn->getAttrOfType<FlatSymbolRefAttr>("dynb.grad.adjoint_of"))
          FUZZ_ASSERT_INVARIANT(copy->lookupSymbol<func::FuncOp>(of.getAttr()));
  }

  const uint8_t selector = size ? data[size - 1] : 0;
  static const char *const kStrategies[] = {"none", "depth", "agenda",
                                            "agenda"};
  dynb::BatchInstancesOptions options;
  options.strategy = kStrategies[size % 4];
  options.batchSize = selector % 4; // 0: all in one schedule
  options.keepInstances = (selector >> 2) & 1;
  // Schedules that came with the input carry whatever attributes the input
  // gave them; only the pass's own are held to the bound.
  llvm::SmallPtrSet<Operation *, 4> given;
  for (dynb::ScheduleOp s : module->getOps<dynb::ScheduleOp>())
    given.insert(s);
  PassManager pm(&ctx);
  pm.addPass(dynb::createBatchInstances(options));
  if (failed(pm.run(*module)))
    return 0;
  // Without keep-instances the pass leaves no instance behind, and no
  // schedule it made launches fewer groups than its lower bound.
  FUZZ_ASSERT_INVARIANT(options.keepInstances ||
                        module->getOps<dynb::InstanceOp>().empty());
  for (dynb::ScheduleOp s : module->getOps<dynb::ScheduleOp>()) {
    if (given.contains(s))
      continue;
    FUZZ_ASSERT_INVARIANT(s.getLaunches() >= s.getLowerBound());
  }
  return 0;
}
