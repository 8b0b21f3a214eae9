//===- Signature.cpp - Interning node signatures --------------------------===//
#include "dynb/Analysis/Signature.h"
#include "dynb/Dialect/DynbOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace dynb;

unsigned SignatureTable::KeyInfo::getHashValue(const Key &k) {
  return static_cast<unsigned>(llvm::hash_combine_range(k.begin(), k.end()));
}

SignatureId SignatureTable::intern(Operation *op) {
  // Runs once a node on the batching path: the key is built from uniqued
  // pointers in a reused buffer, without making a dictionary per op.
  Key &key = scratch_;
  key.clear();
  key.push_back(op->getName().getAsOpaquePointer());
  auto batchable = dyn_cast<BatchableOpInterface>(op);
  // Inherent attributes one by one: getAttrs() would build a dictionary
  // from the op's properties for every node (a tenth of planning a
  // backward step: perf on `dynbc train`).
  for (StringAttr name : op->getName().getAttributeNames()) {
    if (batchable && batchable.isPerRowAttribute(name))
      continue;
    std::optional<Attribute> value = op->getInherentAttr(name);
    key.push_back(name.getAsOpaquePointer());
    key.push_back(value ? value->getAsOpaquePointer() : nullptr);
  }
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    if (batchable && batchable.isPerRowAttribute(attr.getName()))
      continue;
    key.push_back(attr.getName().getAsOpaquePointer());
    key.push_back(attr.getValue().getAsOpaquePointer());
  }
  // Separate operand and result types so (a)->(b,c) differs from (a,b)->(c).
  key.push_back(reinterpret_cast<const void *>(op->getNumOperands()));
  for (Type t : op->getOperandTypes())
    key.push_back(t.getAsOpaquePointer());
  for (Type t : op->getResultTypes())
    key.push_back(t.getAsOpaquePointer());
  auto it = ids_.find(key);
  if (it != ids_.end())
    return it->second;
  SignatureId id = representatives_.size();
  ids_.try_emplace(key, id);
  representatives_.push_back(op);
  return id;
}

std::string SignatureTable::describe(SignatureId id) const {
  Operation *op = representatives_[id];
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName().stripDialect();
  if (auto batchable = dyn_cast<BatchableOpInterface>(op))
    batchable.describeSignature(os);
  os << " (";
  llvm::interleaveComma(op->getOperandTypes(), os);
  os << ") -> (";
  llvm::interleaveComma(op->getResultTypes(), os);
  os << ')';
  return os.str();
}
