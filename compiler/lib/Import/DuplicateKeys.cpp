//===- DuplicateKeys.cpp - Find a JSON object that names a key twice ------===//
#include "dynb/Import/DuplicateKeys.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

using namespace dynb;

namespace {
struct Frame {
  bool isObject;
  bool expectKey;
  // Objects in the interchange have a handful of keys; only the outermost
  // one of a safetensors header has many. A set per frame is still cheap
  // next to the parse that follows.
  llvm::StringSet<> keys;
};
} // namespace

std::optional<DuplicateKey> dynb::findDuplicateKey(llvm::StringRef json) {
  llvm::SmallVector<Frame, 16> stack;
  unsigned line = 1;
  for (size_t i = 0, e = json.size(); i < e; ++i) {
    char c = json[i];
    switch (c) {
    case '\n':
      ++line;
      break;
    case '{':
    case '[':
      stack.push_back(Frame{c == '{', c == '{', {}});
      break;
    case '}':
    case ']':
      if (stack.empty())
        return std::nullopt;
      stack.pop_back();
      break;
    case ',':
      if (!stack.empty() && stack.back().isObject)
        stack.back().expectKey = true;
      break;
    case '"': {
      size_t start = i++;
      bool escaped = false;
      for (; i < e && json[i] != '"'; ++i)
        if (json[i] == '\\') {
          escaped = true;
          ++i;
        }
      if (i >= e)
        return std::nullopt; // unterminated: the parser will say so
      if (stack.empty() || !stack.back().expectKey)
        break;
      Frame &top = stack.back();
      top.expectKey = false;
      llvm::StringRef raw = json.slice(start, i + 1);
      std::string key = raw.drop_front().drop_back().str();
      if (escaped) {
        // "\u0045" and "E" are the same key.
        llvm::Expected<llvm::json::Value> v = llvm::json::parse(raw);
        if (!v) {
          llvm::consumeError(v.takeError());
          return std::nullopt;
        }
        key = v->getAsString().value_or("").str();
      }
      if (!top.keys.insert(key).second)
        return DuplicateKey{key, line, static_cast<unsigned>(stack.size())};
      break;
    }
    default:
      break;
    }
  }
  return std::nullopt;
}
