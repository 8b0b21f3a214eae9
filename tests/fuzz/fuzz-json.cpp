//===- fuzz-json.cpp - Fuzzes the JSON interchange importer ---------------===//
//
// Input: one selector byte, then the file's text. The selector's low bits
// pick the file name (`.json`: one document, `.jsonl`: JSON Lines, no
// suffix: the importer probes the first line); when the import succeeds
// (verified IR) the dynb-batch pass runs on it with a strategy and batch
// size from the selector's upper bits, as `dynbc compile` would. With the
// selector's top bit, dynbc's interchange reader reads it too, and may
// accept it only where the importer does.
//
//===----------------------------------------------------------------------===//
#include "FuzzCommon.h"

#include "dynb/Dialect/DynbOps.h"
#include "dynb/Engine/InterchangeSource.h"
#include "dynb/Import/GraphImporter.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>
#include <optional>

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

  // dynbc's interchange reader (InterchangeSource) takes a subset of what
  // the importer takes: whatever it reads, the importer must accept, with
  // the same instances and nodes. Opening it JIT-compiles the model's
  // modules, so only inputs with the top bit set of the selector try it.
  std::optional<uint64_t> recordNodes;
  if (selector & 0x80) {
    std::string whyNot;
    std::unique_ptr<dynb::InterchangeSource> source =
        dynb::InterchangeSource::openText(name, text, {}, whyNot);
    if (source) {
      if (llvm::Error e = source->readAll(0)) {
        llvm::consumeError(std::move(e));
      } else {
        FUZZ_ASSERT_INVARIANT(bool(module));
        dynb::RunResult counts;
        llvm::Expected<std::vector<dynb::rt::Plan>> plans =
            source->plan(dynb::BatchingStrategy::Agenda, counts);
        FUZZ_ASSERT_INVARIANT(bool(plans));
        FUZZ_ASSERT_INVARIANT(
            source->numInstances() ==
            uint64_t(llvm::range_size(module->getOps<dynb::InstanceOp>())));
        recordNodes = counts.nodes;
      }
    }
  }
  if (!module)
    return 0;
  if (recordNodes) {
    uint64_t nodes = 0;
    for (dynb::InstanceOp inst : module->getOps<dynb::InstanceOp>())
      nodes += inst.getBody().front().getOperations().size() - 1;
    FUZZ_ASSERT_INVARIANT(*recordNodes == nodes);
  }

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
    FUZZ_ASSERT_INVARIANT(s.getLaunches() >= s.getLowerBound());
  FUZZ_ASSERT_INVARIANT(options.keepInstances ||
                        module->getOps<dynb::InstanceOp>().empty());
  return 0;
}
