//===- DuplicateKeys.h - JSON objects that name a key twice --*- C++ -*-===//
//
// JSON leaves duplicate keys undefined and parsers disagree on which one
// wins (LLVM's keeps one silently). A safetensors header naming a tensor
// twice, or a node giving "op" twice, would then mean different things to
// dynb and to the tool that wrote it, so inputs are scanned for them.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_IMPORT_DUPLICATEKEYS_H
#define DYNB_IMPORT_DUPLICATEKEYS_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace dynb {

struct DuplicateKey {
  std::string key; // unescaped
  unsigned line;   // 1-based line of the second occurrence
  unsigned depth;  // 1: a key of the outermost object
};

/// The first key that some object of `json` names twice, or nullopt.
/// Meant for text that parses as JSON (or JSON Lines); on other text it
/// stops without a finding where it cannot follow the structure.
std::optional<DuplicateKey> findDuplicateKey(llvm::StringRef json);

} // namespace dynb

#endif // DYNB_IMPORT_DUPLICATEKEYS_H
