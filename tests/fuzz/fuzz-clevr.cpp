//===- fuzz-clevr.cpp - Fuzzes the CLEVR question importer ----------------===//
//
// Input: one selector byte, then the question file's text. The importer
// builds the IEP model at small sizes (module dim 8 or 16 from the
// selector) and one instance per question; when it succeeds (verified IR)
// the dynb-batch pass runs on it with a strategy and batch size from the
// selector's upper bits, as `dynbc compile` would.
//
//===----------------------------------------------------------------------===//
#include "FuzzCommon.h"

#include "dynb/Dialect/DynbOps.h"
#include "dynb/Import/ClevrImporter.h"
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
  llvm::StringRef text(reinterpret_cast<const char *>(data + 1), size - 1);

  dynb::ClevrModelConfig config;
  config.moduleDim = (selector & 1) ? 16 : 8;
  config.featureChannels = 8;
  config.mapSize = 4;
  config.projDim = 8;
  config.fcDim = 8;
  config.answers = 4;
  config.modulesOnly = (selector >> 1) & 1;
  dynb::ImportLimits limits;
  limits.maxNodes = 100000;

  MLIRContext &ctx = contexts.next();
  OwningOpRef<ModuleOp> module =
      dynb::importClevrQuestions("fuzz.json", text, ctx, config, limits);
  if (!module)
    return 0;
  // The importer promises verified IR and one instance per question.
  FUZZ_ASSERT_INVARIANT(succeeded(mlir::verify(*module)));
  FUZZ_ASSERT_INVARIANT(!module->getOps<dynb::InstanceOp>().empty());

  static const char *const kStrategies[] = {"none", "depth", "agenda",
                                            "agenda"};
  dynb::BatchInstancesOptions options;
  options.strategy = kStrategies[(selector >> 2) & 3];
  options.batchSize = (selector >> 4) & 3; // 0: all in one schedule
  PassManager pm(&ctx);
  pm.addPass(dynb::createBatchInstances(options));
  if (failed(pm.run(*module)))
    return 0;
  for (dynb::ScheduleOp s : module->getOps<dynb::ScheduleOp>())
    FUZZ_ASSERT_INVARIANT(s.getLaunches() >= s.getLowerBound());
  return 0;
}
