//===- NestingDepth.h - Refuse inputs nested deep enough to overflow -*- C++
//-*-===//
//
// LLVM's JSON parser and MLIR's attribute parser recurse once per bracket:
// a hostile file of 50,000 '[' overflows the stack before either can report
// an error. Inputs are scanned for their bracket depth first.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_IMPORT_NESTINGDEPTH_H
#define DYNB_IMPORT_NESTINGDEPTH_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace dynb {

/// The deepest nesting of (, [ and { allowed in any input.
constexpr unsigned kMaxNestingDepth = 256;

/// The 1-based line on which `text` first nests (, [ and { deeper than
/// `maxDepth`, or nullopt. Brackets inside double-quoted strings do not
/// count, nor (with `lineComments`) those after `//` on a line.
std::optional<unsigned> findExcessiveNesting(llvm::StringRef text,
                                             unsigned maxDepth,
                                             bool lineComments);

} // namespace dynb

#endif // DYNB_IMPORT_NESTINGDEPTH_H
