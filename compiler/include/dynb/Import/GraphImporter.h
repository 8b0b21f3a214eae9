//===- GraphImporter.h - Reads models and instance batches ------*- C++ -*-===//
#ifndef DYNB_IMPORT_GRAPHIMPORTER_H
#define DYNB_IMPORT_GRAPHIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace llvm {
class SourceMgr;
}

namespace dynb {

/// Refusals made before memory is spent on a hostile or mistaken input.
struct ImportLimits {
  /// Nodes (module and instance ops) at most; 0: no limit.
  uint64_t maxNodes = 0;
  /// Compile budgets: a module body is JIT-compiled, and LLVM's code
  /// generation grows faster than linearly in the ops of one kernel and the
  /// operands of one op, so inputs past these are refused before compiling
  /// (0: no limit). The defaults are far above any workload's.
  uint64_t maxModuleOps = kDefaultMaxModuleOps;
  uint64_t maxOpInputs = kDefaultMaxOpInputs;
  static constexpr uint64_t kDefaultMaxModuleOps = 1000;
  static constexpr uint64_t kDefaultMaxOpInputs = 256;
};

/// Reads a model and a batch of instances: the dynb dialect (`.mlir`), or the
/// JSON interchange form (docs/interchange.md), one document (`.json`) or
/// JSON Lines (`.jsonl`, or any file whose first line is a complete model
/// header). Problems are reported as MLIR diagnostics located at the file,
/// the instance and the node; the result is then null. The module is
/// verified.
mlir::OwningOpRef<mlir::ModuleOp>
importGraphFile(llvm::StringRef path, mlir::MLIRContext &ctx,
                llvm::SourceMgr &sourceMgr, const ImportLimits &limits = {});

/// Parses `.mlir` text as dynbc reads it: refused before parsing if it
/// nests deep enough to overflow the parser (findExcessiveMlirNesting), and
/// after parsing if a shape has more elements than kMaxTensorElements
/// (before any verifier or size computation could multiply its
/// dimensions), then verified. `buffer` joins `sourceMgr` once the scan
/// passes, so that diagnostics show source lines from then on.
mlir::OwningOpRef<mlir::ModuleOp>
parseMlirGraphs(std::unique_ptr<llvm::MemoryBuffer> buffer,
                llvm::SourceMgr &sourceMgr, mlir::MLIRContext &ctx);

/// Imports interchange JSON from memory; `name` is used in locations.
mlir::OwningOpRef<mlir::ModuleOp>
importJsonGraphs(llvm::StringRef name, llvm::StringRef text,
                 mlir::MLIRContext &ctx, const ImportLimits &limits = {});

/// Imports a model (params and modules, no instances) held as JSON values
/// rather than text, as ModelBuilder makes it; `name` is used in locations,
/// with the module and node of each problem.
mlir::OwningOpRef<mlir::ModuleOp>
importJsonModel(llvm::StringRef name, const llvm::json::Object &model,
                mlir::MLIRContext &ctx, const ImportLimits &limits = {});

/// Reads a JSON Lines file (docs/interchange.md) a batch of instances at a
/// time, so that a run holds one batch's graphs rather than the file's. Each
/// batch comes as a module of its own, in a context the caller chooses: a
/// context lives as long as the process and keeps every location, type and
/// attribute ever made in it, so a long run reads each batch into a fresh
/// context and drops it afterwards. Errors are located at the file, the
/// line, the instance and the node as in importGraphFile, and each line
/// gets the same checks (nesting, duplicate keys, the verifier).
class JsonLinesStream {
public:
  ~JsonLinesStream();
  JsonLinesStream(const JsonLinesStream &) = delete;
  JsonLinesStream &operator=(const JsonLinesStream &) = delete;

  /// Opens `path` and imports its model (first line) into `ctx`; null,
  /// after a diagnostic, when the file cannot be read or the model is bad.
  static std::unique_ptr<JsonLinesStream> open(llvm::StringRef path,
                                               mlir::MLIRContext &ctx,
                                               const ImportLimits &limits = {});

  /// The model as imported by open(), without instances (once).
  mlir::OwningOpRef<mlir::ModuleOp> takeModel();
  /// The model and the next up to `maxInstances` instances (0: all that are
  /// left) as a new module in `ctx`; a null module at the end of the file.
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
  next(mlir::MLIRContext &ctx, size_t maxInstances);
  /// Back to the first instance, for another pass over the file (errors
  /// go to `ctx`).
  mlir::LogicalResult rewind(mlir::MLIRContext &ctx);
  /// Non-blank instance lines in the file, counted on open.
  uint64_t numInstances() const;

private:
  struct Impl;
  explicit JsonLinesStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace dynb

#endif // DYNB_IMPORT_GRAPHIMPORTER_H
