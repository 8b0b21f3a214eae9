//===- NestingDepth.cpp - A bracket-depth scan before parsing -------------===//
#include "dynb/Import/NestingDepth.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace dynb;

std::optional<unsigned> dynb::findExcessiveNesting(llvm::StringRef text,
                                                   unsigned maxDepth,
                                                   bool lineComments) {
  unsigned depth = 0, line = 1;
  bool inString = false, inComment = false;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      inComment = false;
      continue;
    }
    if (inComment)
      continue;
    if (inString) {
      if (c == '\\')
        ++i; // the escaped character cannot end the string
      else if (c == '"')
        inString = false;
      continue;
    }
    switch (c) {
    case '"':
      inString = true;
      break;
    case '/':
      if (lineComments && i + 1 < e && text[i + 1] == '/')
        inComment = true;
      break;
    case '(':
    case '[':
    case '{':
      if (++depth > maxDepth)
        return line;
      break;
    case ')':
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

namespace {
/// The state of one scan of `.mlir` text.
class MlirNestingScan {
public:
  MlirNestingScan(llvm::StringRef text, unsigned maxDepth)
      : text(text), maxDepth(maxDepth) {}

  std::optional<MlirNestingFinding> run() {
    for (i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (c == '\n') {
        ++line;
        // An alias definition is one statement; it ends with its line once
        // its brackets are closed.
        if (depth == 0)
          defining.clear();
        continue;
      }
      if (c == '"') {
        skipString();
        continue;
      }
      if (c == '/' && peek(1) == '/') {
        while (i + 1 < text.size() && text[i + 1] != '\n')
          ++i;
        continue;
      }
      // affine_map and affine_set open an expression only when their '<'
      // comes next.
      if (c != '<' && c != ' ' && c != '\t' && c != '\r')
        pendingAffine = false;
      if (std::optional<MlirNestingFinding> f = step(c))
        return f;
    }
    return std::nullopt;
  }

private:
  char peek(size_t ahead) const {
    return i + ahead < text.size() ? text[i + ahead] : '\0';
  }
  static bool isIdentifierChar(char c) {
    return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
  }
  void skipString() {
    for (++i; i < text.size(); ++i) {
      if (text[i] == '\\')
        ++i;
      else if (text[i] == '"' || text[i] == '\n')
        break;
    }
    if (i < text.size() && text[i] == '\n')
      --i; // the newline is counted by the main loop
  }
  std::optional<MlirNestingFinding> tooDeep() const {
    return MlirNestingFinding{
        line, "brackets nest deeper than " + std::to_string(maxDepth) +
                  " levels; no dynb input needs that, and parsers would "
                  "overflow the stack"};
  }
  /// Depth as the parser sees it here: the brackets open now, plus the
  /// deepest alias used inside them.
  std::optional<MlirNestingFinding> reach(unsigned effective) {
    if (!defining.empty())
      aliasDepth[defining] = std::max(aliasDepth[defining], effective);
    if (effective > maxDepth)
      return tooDeep();
    return std::nullopt;
  }
  std::optional<MlirNestingFinding> open() {
    ++depth;
    return reach(depth);
  }
  void close() {
    if (depth == 0)
      return;
    if (affineDepth && depth == affineDepth) {
      affineDepth = 0;
      affineTerms = 0;
    }
    --depth;
  }
  std::optional<MlirNestingFinding> term() {
    if (!affineDepth || ++affineTerms <= kMaxAffineTerms)
      return std::nullopt;
    return MlirNestingFinding{
        line, "an affine expression has more than " +
                  std::to_string(kMaxAffineTerms) +
                  " terms; no dynb input needs that, and MLIR's parser would "
                  "overflow the stack"};
  }

  std::optional<MlirNestingFinding> step(char c) {
    switch (c) {
    case '(':
    case '[':
    case '{':
      return open();
    case '<':
      // `<=` compares; every other '<' opens a type or attribute body.
      if (peek(1) == '=')
        return std::nullopt;
      if (std::optional<MlirNestingFinding> f = open())
        return f;
      if (pendingAffine) {
        affineDepth = depth;
        affineTerms = 0;
      }
      pendingAffine = false;
      return std::nullopt;
    case ')':
    case ']':
    case '}':
      close();
      return std::nullopt;
    case '>':
      // `->` is an arrow and `>=` a comparison: neither closes a body.
      if (i > 0 && text[i - 1] == '-')
        return std::nullopt;
      if (peek(1) == '=')
        return std::nullopt;
      close();
      return std::nullopt;
    case '+':
    case '*':
      return term();
    case '-':
      return peek(1) == '>' ? std::nullopt : term();
    case '#':
    case '!':
      return alias();
    default:
      if (llvm::isAlpha(c) || c == '_')
        return word();
      return std::nullopt;
    }
  }

  /// `#name` or `!name`: a use of an alias, or at the start of a
  /// statement its definition.
  std::optional<MlirNestingFinding> alias() {
    size_t begin = i;
    while (i + 1 < text.size() && isIdentifierChar(text[i + 1]))
      ++i;
    std::string name = text.slice(begin, i + 1).str();
    if (name.size() == 1)
      return std::nullopt;
    if (depth == 0 && defining.empty()) {
      size_t j = i + 1;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t'))
        ++j;
      if (j < text.size() && text[j] == '=' &&
          (j + 1 >= text.size() || text[j + 1] != '=')) {
        defining = name;
        aliasDepth[defining] = 0;
        return std::nullopt;
      }
    }
    auto it = aliasDepth.find(name);
    if (it == aliasDepth.end())
      return std::nullopt;
    return reach(depth + it->second);
  }

  /// A bare word: affine_map and affine_set open affine expressions;
  /// floordiv, ceildiv and mod are terms of one.
  std::optional<MlirNestingFinding> word() {
    size_t begin = i;
    while (i + 1 < text.size() && isIdentifierChar(text[i + 1]))
      ++i;
    llvm::StringRef w = text.slice(begin, i + 1);
    if (w == "affine_map" || w == "affine_set") {
      pendingAffine = true;
      return std::nullopt;
    }
    if (w == "floordiv" || w == "ceildiv" || w == "mod")
      return term();
    return std::nullopt;
  }

  llvm::StringRef text;
  unsigned maxDepth;
  size_t i = 0;
  unsigned line = 1, depth = 0;
  /// The depth of the '<' that opened the affine expression being read
  /// (0: none), and its terms so far.
  unsigned affineDepth = 0, affineTerms = 0;
  bool pendingAffine = false;
  /// The alias being defined, and how deep each defined one reaches.
  std::string defining;
  llvm::StringMap<unsigned> aliasDepth;
};
} // namespace

std::optional<MlirNestingFinding>
dynb::findExcessiveMlirNesting(llvm::StringRef text, unsigned maxDepth) {
  return MlirNestingScan(text, maxDepth).run();
}
