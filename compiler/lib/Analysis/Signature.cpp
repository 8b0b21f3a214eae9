//===- Signature.cpp - Interning node signatures --------------------------===//
#include "dynb/Analysis/Signature.h"
#include "dynb/Dialect/DynbOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace dynb;

DictionaryAttr SignatureTable::signatureAttributes(Operation *op) {
  // An embedding's row is the instance's data, not part of the function.
  if (auto emb = dyn_cast<EmbeddingOp>(op)) {
    NamedAttrList attrs(op->getAttrDictionary());
    attrs.erase(emb.getIndexAttrName());
    return attrs.getDictionary(op->getContext());
  }
  return op->getAttrDictionary();
}

unsigned SignatureTable::KeyInfo::getHashValue(
    const llvm::SmallVector<const void *, 8> &k) {
  return static_cast<unsigned>(llvm::hash_combine_range(k.begin(), k.end()));
}

SignatureId SignatureTable::intern(Operation *op) {
  llvm::SmallVector<const void *, 8> key;
  key.push_back(op->getName().getAsOpaquePointer());
  key.push_back(signatureAttributes(op).getAsOpaquePointer());
  // Separate operand and result types so (a)->(b,c) differs from (a,b)->(c).
  key.push_back(reinterpret_cast<const void *>(op->getNumOperands()));
  for (Type t : op->getOperandTypes())
    key.push_back(t.getAsOpaquePointer());
  for (Type t : op->getResultTypes())
    key.push_back(t.getAsOpaquePointer());
  auto [it, inserted] =
      ids_.try_emplace(std::move(key), representatives_.size());
  if (inserted)
    representatives_.push_back(op);
  return it->second;
}

std::string SignatureTable::describe(SignatureId id) const {
  Operation *op = representatives_[id];
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName().stripDialect();
  if (auto call = dyn_cast<CallOp>(op))
    os << ' ' << call.getCalleeAttr();
  else if (auto emb = dyn_cast<EmbeddingOp>(op))
    os << ' ' << emb.getTableAttr();
  else if (auto lin = dyn_cast<LinearOp>(op))
    os << ' ' << lin.getWeightAttr();
  os << " (";
  llvm::interleaveComma(op->getOperandTypes(), os);
  os << ") -> (";
  llvm::interleaveComma(op->getResultTypes(), os);
  os << ')';
  return os.str();
}
