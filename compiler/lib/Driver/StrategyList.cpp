//===- StrategyList.cpp - Strategy lists and byte sizes from the CLI ------===//
#include "dynb/Driver/StrategyList.h"

#include "llvm/ADT/StringExtras.h"

using namespace dynb;

llvm::Expected<std::vector<BatchingStrategy>>
dynb::parseStrategyList(llvm::ArrayRef<std::string> names, bool single) {
  if (names.empty())
    return std::vector<BatchingStrategy>{BatchingStrategy::Agenda};
  std::vector<BatchingStrategy> out;
  for (const std::string &s : names) {
    if (s == "all") {
      out.insert(out.end(), std::begin(kEveryBatchingStrategy),
                 std::end(kEveryBatchingStrategy));
      continue;
    }
    std::optional<BatchingStrategy> st = parseBatchingStrategy(s);
    if (!st)
      return llvm::createStringError(
          "unknown strategy '" + s + "' (expected none, depth or agenda" +
          (single ? ")" : ", a list of them, or all)"));
    out.push_back(*st);
  }
  if (single && out.size() != 1)
    return llvm::createStringError("compile takes one --strategy");
  return out;
}

std::optional<uint64_t> dynb::parseByteSize(llvm::StringRef text) {
  uint64_t scale = 1;
  if (!text.empty()) {
    char last = llvm::toUpper(text.back());
    if (last == 'K' || last == 'M' || last == 'G') {
      scale = last == 'K' ? 1ull << 10 : last == 'M' ? 1ull << 20 : 1ull << 30;
      text = text.drop_back();
    }
  }
  uint64_t value;
  if (text.getAsInteger(10, value) || value > UINT64_MAX / scale)
    return std::nullopt;
  return value * scale;
}
