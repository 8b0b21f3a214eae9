//===- FiniteCheck.cpp - Refusing NaN and Inf in parameters and outputs ---===//
#include "dynb/Driver/FiniteCheck.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <string>

using namespace dynb;

namespace {
const char *kindOf(float v) {
  if (std::isnan(v))
    return "NaN";
  return v > 0 ? "+Inf" : "-Inf";
}

/// Row-major index -> "[i, j]".
std::string elementIndex(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d)
    s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}
} // namespace

llvm::Error dynb::checkFiniteParams(const rt::ParameterStore &params,
                                    llvm::StringRef source) {
  for (const std::string &name : params.names()) {
    const rt::ParamTensor *t = params.find(name);
    int64_t first = -1, count = 0;
    for (size_t i = 0; i < t->data.size(); ++i)
      if (!std::isfinite(t->data[i])) {
        if (first < 0)
          first = static_cast<int64_t>(i);
        ++count;
      }
    if (first < 0)
      continue;
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}: parameter '{1}' holds {2} at {3}{4}; "
                      "--check-finite refuses parameters that are not finite",
                      source, name, kindOf(t->data[first]),
                      elementIndex(t->shape, first),
                      count > 1 ? llvm::formatv(" (and {0} more non-finite "
                                                "values)",
                                                count - 1)
                                      .str()
                                : std::string()));
  }
  return llvm::Error::success();
}

llvm::Error dynb::checkFiniteOutputs(const StackedOutputs &outputs,
                                     llvm::StringRef what) {
  for (size_t p = 0; p < outputs.values.size(); ++p) {
    const std::vector<float> &v = outputs.values[p];
    int64_t width = outputs.widths[p];
    for (size_t i = 0; i < v.size(); ++i) {
      if (std::isfinite(v[i]))
        continue;
      int64_t instance = static_cast<int64_t>(i) / width;
      int64_t column = static_cast<int64_t>(i) % width;
      size_t count = 0;
      for (size_t j = i; j < v.size(); ++j)
        count += !std::isfinite(v[j]);
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("{0}: instance {1}, output {2} is {3} at column "
                        "{4}{5}; --check-finite refuses outputs that are not "
                        "finite",
                        what, instance, p, kindOf(v[i]), column,
                        count > 1 ? llvm::formatv(" (output {0} holds {1} "
                                                  "non-finite values)",
                                                  p, count)
                                        .str()
                                  : std::string()));
    }
  }
  return llvm::Error::success();
}
