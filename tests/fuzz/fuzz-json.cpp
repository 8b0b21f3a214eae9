//===- fuzz-json.cpp - Fuzzes the JSON interchange importer ---------------===//
//
// Input: one selector byte, then the file's text. The selector's low bits
// pick the file name (`.json`: one document, `.jsonl`: JSON Lines, no
// suffix: the importer probes the first line); when the import succeeds
// (verified IR) the dynb-batch pass runs on it with a strategy and batch
// size from the selector's upper bits, as `dynbc compile` would.
//
//===----------------------------------------------------------------------===//
#include "FuzzCommon.h"

#include "dynb/Dialect/DynbOps.h"
#include "dynb/Import/GraphImporter.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static dynb::fuzz::FuzzContext contexts;
  if (size < 1)
    return 0;
  const uint8_t selector = data[0];
  static const char *const kNames[] = {"fuzz.json", "fuzz.jsonl", "fuzz.txt",
                                       "fuzz.json"};
  llvm::StringRef name = kNames[selector & 3];
  llvm::StringRef text(reinterpret_cast<const char *>(data + 1), size - 1);

  MLIRContext &ctx = contexts.next();
  // The module (and everything it owns) is destroyed at the end of the
  // scope, before the next input.
  OwningOpRef<ModuleOp> module = dynb::importJsonGraphs(name, text, ctx);
  if (!module)
    return 0;

  static const char *const kStrategies[] = {"none", "depth", "agenda",
                                            "agenda"};
  dynb::BatchInstancesOptions options;
  options.strategy = kStrategies[(selector >> 2) & 3];
  options.batchSize = (selector >> 4) & 3; // 0: all in one schedule
  options.keepInstances = (selector >> 6) & 1;
  // The importer promises verified IR.
  FUZZ_ASSERT_INVARIANT(succeeded(mlir::verify(*module)));
  PassManager pm(&ctx);
  pm.addPass(dynb::createBatchInstances(options));
  if (failed(pm.run(*module)))
    return 0;
  // A schedule never launches fewer groups than its lower bound, and
  // without keep-instances no instance is left.
  for (dynb::ScheduleOp s : module->getOps<dynb::ScheduleOp>())
    FUZZ_ASSERT_INVARIANT(
        s->getAttrOfType<IntegerAttr>("dynb.launches").getInt() >=
        s->getAttrOfType<IntegerAttr>("dynb.lower_bound").getInt());
  FUZZ_ASSERT_INVARIANT(options.keepInstances ||
                        module->getOps<dynb::InstanceOp>().empty());
  return 0;
}
