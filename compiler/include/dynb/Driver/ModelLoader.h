//===- ModelLoader.h - A model, its instances and parameters -*- C++ -*-===//
//
// The first step of every way in: read graphs (JSON, JSON Lines, .mlir,
// CLEVR questions) into a dynb module, check them for the runtime path, and
// load or seed their parameters, with located diagnostics. The Engine uses
// it alone; dynbc's Session adds batching, planning and running. Messages
// name no CLI flag: a caller names its limits (SessionLimits).
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_MODELLOADER_H
#define DYNB_DRIVER_MODELLOADER_H

#include "dynb/Import/ClevrImporter.h"
#include "dynb/Import/GraphImporter.h"
#include "dynb/JIT/KernelCache.h"
#include "dynb/Runtime/ParameterStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace dynb {

/// What a session refuses before allocating: defaults fit a 24 GiB machine.
struct SessionLimits {
  /// Nodes in the input (0: no limit).
  uint64_t maxNodes = 20'000'000;
  /// The compile budgets (ImportLimits).
  uint64_t maxModuleOps = ImportLimits::kDefaultMaxModuleOps;
  uint64_t maxOpInputs = ImportLimits::kDefaultMaxOpInputs;
  /// Parameters plus the largest batch's arena, bytes (0: no limit).
  uint64_t maxMemoryBytes = uint64_t(16) << 30;
  /// How refusals name that limit: a library caller sets it through its
  /// options, dynbc through a flag, and each says so in its own words.
  std::string memoryLimitName = "the memory limit";

  ImportLimits importLimits() const {
    ImportLimits limits;
    limits.maxNodes = maxNodes;
    limits.maxModuleOps = maxModuleOps;
    limits.maxOpInputs = maxOpInputs;
    return limits;
  }
};

/// Locations made by the JSON importer name the instance and node in a
/// NameLoc around file:line:col; prints them as `file:line:col: error:
/// instance 3, node 17 (call): ...` (the source handler would drop the
/// name, and quote a JSON line that can be megabytes long). Locations in
/// .mlir files fall through to the source manager handler.
/// With `mlirSources`, .mlir locations are printed the same way (without
/// the source excerpt) when their line is not one `mlirSources` holds or is
/// too long to quote.
std::unique_ptr<mlir::ScopedDiagnosticHandler>
attachJsonDiagnostics(mlir::MLIRContext &ctx, llvm::raw_ostream &diagnostics,
                      llvm::SourceMgr *mlirSources = nullptr);

class ModelLoader {
public:
  /// Diagnostics (located, as dynbc prints them) go to `diagnostics`.
  explicit ModelLoader(llvm::raw_ostream &diagnostics = llvm::errs());
  ~ModelLoader();

  mlir::MLIRContext &context() { return *ctx_; }
  /// The loaded (unbatched) model and instances.
  mlir::ModuleOp module() { return *module_; }
  const rt::ParameterStore &params() const { return params_; }
  /// For training, which updates the values in place (never the shapes).
  rt::ParameterStore &mutableParams() { return params_; }
  KernelCache &kernels() { return *kernels_; }

  /// Reads graphs (see importGraphFile); diagnostics go to `diagnostics`.
  mlir::LogicalResult loadGraphs(llvm::StringRef path);
  /// The same from interchange JSON in memory; `name` is used in locations.
  mlir::LogicalResult loadJsonGraphs(llvm::StringRef name,
                                     llvm::StringRef text);
  /// The same from a model held as JSON values (ModelBuilder).
  mlir::LogicalResult loadJsonModel(llvm::StringRef name,
                                    const llvm::json::Object &model);
  /// Reads parameters and checks them against the model's dynb.param ops.
  llvm::Error loadParams(llvm::StringRef path);
  /// Reads more tensors (e.g. CLEVR image features), replacing those of
  /// the same name, and checks the whole set against the model again.
  llvm::Error loadMoreParams(llvm::StringRef path);
  /// Seeds every parameter of the model (deterministic); fails when they
  /// would exceed the memory limit.
  llvm::Error seedParams(uint64_t seed);
  /// Copies every parameter the model declares from `from` (another
  /// loader's or an engine's store); fails, naming `owner`, when one is
  /// missing there or has another shape.
  llvm::Error copyParams(const rt::ParameterStore &from, llvm::StringRef owner);
  void setLimits(const SessionLimits &limits) { limits_ = limits; }
  const SessionLimits &limits() const { return limits_; }
  /// Seconds loadGraphs took (the whole-input MLIR import).
  double loadSeconds() const { return loadSeconds_; }
  /// The IEP model's sizes for CLEVR question files (see ClevrImporter.h).
  void setClevrConfig(const ClevrModelConfig &config) { clevr_ = config; }
  /// Bytes the model's declared parameters take.
  uint64_t parameterBytes();

protected:
  llvm::Error checkParams();
  /// The file the graphs were read from, for errors about the whole model.
  std::string graphFile();
  /// What the runtime path needs of a loaded module beyond the verifier.
  mlir::LogicalResult checkLoaded();

  llvm::raw_ostream &diagnostics_;
  double loadSeconds_ = 0;
  std::unique_ptr<mlir::MLIRContext> ctx_;
  llvm::SourceMgr sourceMgr_;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagHandler_;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> jsonDiagHandler_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  rt::ParameterStore params_;
  std::unique_ptr<KernelCache> kernels_;
  SessionLimits limits_;
  ClevrModelConfig clevr_;
};

} // namespace dynb

#endif // DYNB_DRIVER_MODELLOADER_H
