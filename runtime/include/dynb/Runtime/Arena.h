//===- Arena.h - The one growable, 64-byte aligned block runs work in -----===//
#ifndef DYNB_RUNTIME_ARENA_H
#define DYNB_RUNTIME_ARENA_H

#include "dynb/Runtime/Status.h"

#include <cstddef>
#include <cstdint>

namespace dynb::rt {

/// A single 64-byte aligned allocation that only ever grows. Runs reuse it, so
/// a steady stream of plans of similar size allocates nothing. Growing drops
/// the old contents: every run rewrites what it reads.
class Arena {
public:
  static constexpr int64_t kAlignment = 64;

  Arena() = default;
  ~Arena();
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  /// Makes at least `bytes` bytes available, reallocating only when the
  /// current block is too small.
  Status reserve(int64_t bytes);
  std::byte *data() const { return data_; }
  int64_t capacity() const { return capacity_; }

private:
  std::byte *data_ = nullptr;
  int64_t capacity_ = 0;
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_ARENA_H
