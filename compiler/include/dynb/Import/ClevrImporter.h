//===- ClevrImporter.h - CLEVR questions as IEP instances -------*- C++ -*-===//
#ifndef DYNB_IMPORT_CLEVRIMPORTER_H
#define DYNB_IMPORT_CLEVRIMPORTER_H

#include "dynb/Import/GraphImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace dynb {

/// The sizes of the IEP execution engine (Johnson et al. 2017;
/// docs/workloads.md section 2). The defaults are the paper's; tests shrink
/// them.
struct ClevrModelConfig {
  int64_t featureChannels = 1024;
  int64_t mapSize = 14;
  int64_t moduleDim = 128;
  /// The classifier's 1x1 projection and hidden dense layer (512 and 1024
  /// at module_dim 128).
  int64_t projDim = 512;
  int64_t fcDim = 1024;
  int64_t answers = 32;
  /// The program modules alone (for timing them): each question reads its
  /// stem output from the parameter `stem_out` [images, module_dim, H, W]
  /// and outputs its root module's map; no stem, no classifier.
  bool modulesOnly = false;
};

/// The 40 program tokens that have modules, in a fixed order: `scene`, the
/// 30 unary tokens, the 9 binary ones.
const std::vector<std::string> &clevrModuleTokens();
/// 0 for `scene`, 1 for the unary tokens, 2 for the binary ones, -1 for a
/// string that is no token.
int clevrTokenArity(llvm::StringRef token);

/// Whether `text` looks like a CLEVR question file: a JSON object whose
/// first key is (or which has near its start the key) "questions".
bool looksLikeClevrQuestions(llvm::StringRef text);

/// Turns each question of a CLEVR question file
/// (`{"questions": [{"program": [{"function", "value_inputs", "inputs"},
/// ...]}]}`) into one `dynb.instance`: the image's features (row `image_index`,
/// or the question's index without one, of the parameter `features`) through
/// the stem, each program node a call of its token's module, the root's
/// output through the classifier. The model (parameters and modules) is
/// declared in full. Errors name the file, the question and the node.
mlir::OwningOpRef<mlir::ModuleOp>
importClevrQuestions(llvm::StringRef name, llvm::StringRef text,
                     mlir::MLIRContext &ctx, const ClevrModelConfig &config,
                     const ImportLimits &limits = {});

} // namespace dynb

#endif // DYNB_IMPORT_CLEVRIMPORTER_H
