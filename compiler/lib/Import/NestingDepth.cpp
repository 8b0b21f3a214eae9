//===- NestingDepth.cpp - A bracket-depth scan before parsing -------------===//
#include "dynb/Import/NestingDepth.h"

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
