//===- NestingDepth.h - Refuse inputs nested deep enough to overflow
//-------===//
//
// LLVM's JSON parser and MLIR's parser recurse once per bracket, and MLIR's
// also once per nested type (tuple<tuple<...>>) and per term of an affine
// expression: a hostile file of 50,000 '[' overflows the stack before
// either can report an error. Inputs are scanned for their depth first.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_IMPORT_NESTINGDEPTH_H
#define DYNB_IMPORT_NESTINGDEPTH_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace dynb {

/// The deepest nesting of (, [ and { allowed in any input.
constexpr unsigned kMaxNestingDepth = 256;

/// The 1-based line on which `text` first nests (, [ and { deeper than
/// `maxDepth`, or nullopt. Brackets inside double-quoted strings do not
/// count, nor (with `lineComments`) those after `//` on a line.
std::optional<unsigned> findExcessiveNesting(llvm::StringRef text,
                                             unsigned maxDepth,
                                             bool lineComments);

/// The most terms (operators) one affine_map or affine_set may have: MLIR's
/// affine parser recurses once per term, and the expression it builds is as
/// deep as it is long.
constexpr unsigned kMaxAffineTerms = 1024;

/// What would make MLIR's parser (or a walk of what it builds) recurse past
/// the stack in `.mlir` text, found without parsing it.
struct MlirNestingFinding {
  unsigned line;
  std::string message;
};

/// The first place in `.mlir` text that nests deeper than `maxDepth`,
/// counting every construct MLIR's parser recurses on: ( [ { and the angle
/// brackets of types and attributes (tuple<tuple<...>>), through type and
/// attribute aliases (an alias weighs as deep as its definition), and
/// affine expressions longer than kMaxAffineTerms; or nullopt. Strings and
/// `//` comments do not count.
std::optional<MlirNestingFinding> findExcessiveMlirNesting(llvm::StringRef text,
                                                           unsigned maxDepth);

} // namespace dynb

#endif // DYNB_IMPORT_NESTINGDEPTH_H
