//===- Signature.h - What a node computes, hashed once and interned -------===//
#ifndef DYNB_ANALYSIS_SIGNATURE_H
#define DYNB_ANALYSIS_SIGNATURE_H

#include "dynb/Batching/BatchingGraph.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace dynb {

/// Two nodes share a signature, and so may share a launch, exactly when they
/// compute the same function: same op (a call's callee is an attribute), same
/// attributes other than per-instance data (an embedding's row), same operand
/// and result types. Attributes and types are uniqued by MLIR, so the key is
/// a short list of pointers: hashing it is cheap and equality is exact.
class SignatureTable {
public:
  SignatureId intern(mlir::Operation *op);
  size_t size() const { return representatives_.size(); }
  /// An op that has this signature (the first one interned).
  mlir::Operation *representative(SignatureId id) const {
    return representatives_[id];
  }
  /// A short human-readable name: `call @leaf`, `linear @W`, `tanh [16]`.
  std::string describe(SignatureId id) const;

private:
  using Key = llvm::SmallVector<const void *, 16>;
  struct KeyInfo {
    static Key getEmptyKey() { return {reinterpret_cast<const void *>(-1)}; }
    static Key getTombstoneKey() {
      return {reinterpret_cast<const void *>(-2)};
    }
    static unsigned getHashValue(const Key &k);
    static bool isEqual(const Key &a, const Key &b) { return a == b; }
  };
  llvm::DenseMap<Key, SignatureId, KeyInfo> ids_;
  Key scratch_;
  llvm::SmallVector<mlir::Operation *, 0> representatives_;
};

} // namespace dynb

#endif // DYNB_ANALYSIS_SIGNATURE_H
