//===- ElementCount.h - One overflow-checked count of elements -*- C++ -*-===//
//
// A shape's element count is a product of user-given dimensions: computed
// with plain multiplication, [2^32, 2^32] wraps to 0 and a rank-4 shape of
// 65536s to 0 as well, and every later size (bytes to allocate, the memory
// check, a plan's buffer) then trusts a wrong number. Every importer, the
// dialect's verifier and the plan's validation count through this header,
// so one bound holds everywhere. Header-only: the dialect library, which
// links no runtime, uses it too.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_RUNTIME_ELEMENTCOUNT_H
#define DYNB_RUNTIME_ELEMENTCOUNT_H

#include <cstdint>
#include <optional>

namespace dynb {

/// The most elements one tensor may have: 64 GiB of f32, past any model dynb
/// is meant for and far from where int64 products wrap.
constexpr int64_t kMaxTensorElements = int64_t(1) << 34;

/// The number of elements of a tensor whose dimensions are `shape` (any
/// range of integers), or nullopt when a dimension is negative or the count
/// passes `limit` at any point of the product, so that no product wraps.
/// Dimensions of 0 give 0, once the product up to them is within `limit`.
template <typename Range>
std::optional<int64_t> checkedElementCount(const Range &shape,
                                           int64_t limit = kMaxTensorElements) {
  int64_t count = 1;
  for (auto dim : shape) {
    int64_t d = static_cast<int64_t>(dim);
    if (d < 0)
      return std::nullopt;
    if (d != 0 && count > limit / d)
      return std::nullopt;
    count *= d;
  }
  return count;
}

/// rows x cols, checked as above.
inline std::optional<int64_t>
checkedElementCount(int64_t rows, int64_t cols,
                    int64_t limit = kMaxTensorElements) {
  int64_t dims[] = {rows, cols};
  return checkedElementCount(dims, limit);
}

} // namespace dynb

#endif // DYNB_RUNTIME_ELEMENTCOUNT_H
