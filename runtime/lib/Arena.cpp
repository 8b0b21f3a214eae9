//===- Arena.cpp - The one growable, 64-byte aligned block runs work in ---===//
#include "dynb/Runtime/Arena.h"

#include <fmt/format.h>

#include <cstdlib>
#include <limits>

using namespace dynb::rt;

Arena::~Arena() { std::free(data_); }

Status Arena::reserve(int64_t bytes) {
  if (bytes < 0)
    return Status::error(fmt::format("arena: negative size {}", bytes));
  if (bytes <= capacity_)
    return Status::ok();
  // aligned_alloc wants a multiple of the alignment; sizes within one
  // alignment of INT64_MAX would overflow the rounding, and no machine has
  // that much memory anyway.
  if (bytes > std::numeric_limits<int64_t>::max() - kAlignment)
    return Status::error(fmt::format("arena: cannot allocate {} bytes", bytes));
  int64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // The old contents are dead between runs, so free before allocating rather
  // than holding both blocks at once.
  std::free(data_);
  data_ = static_cast<std::byte *>(
      std::aligned_alloc(kAlignment, static_cast<size_t>(rounded)));
  if (!data_) {
    capacity_ = 0;
    return Status::error(
        fmt::format("arena: cannot allocate {} bytes", rounded));
  }
  capacity_ = rounded;
  return Status::ok();
}
