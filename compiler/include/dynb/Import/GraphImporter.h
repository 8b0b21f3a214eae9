//===- GraphImporter.h - Reads models and instance batches ------*- C++ -*-===//
#ifndef DYNB_IMPORT_GRAPHIMPORTER_H
#define DYNB_IMPORT_GRAPHIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace llvm {
class SourceMgr;
}

namespace dynb {

/// Refusals made before memory is spent on a hostile or mistaken input.
struct ImportLimits {
  /// Nodes (module and instance ops) at most; 0: no limit.
  uint64_t maxNodes = 0;
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

/// Imports interchange JSON from memory; `name` is used in locations.
mlir::OwningOpRef<mlir::ModuleOp>
importJsonGraphs(llvm::StringRef name, llvm::StringRef text,
                 mlir::MLIRContext &ctx, const ImportLimits &limits = {});

/// The registry of dialects dynb's tools load.
void registerDynbDialects(mlir::MLIRContext &ctx);

} // namespace dynb

#endif // DYNB_IMPORT_GRAPHIMPORTER_H
