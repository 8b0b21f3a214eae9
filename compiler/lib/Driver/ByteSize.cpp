//===- ByteSize.cpp - Byte counts in the unit that shows them -------------===//
#include "dynb/Driver/ByteSize.h"

#include "llvm/Support/FormatVariadic.h"

std::string dynb::formatByteSize(uint64_t bytes) {
  static const char *const units[] = {"KiB", "MiB", "GiB"};
  if (bytes < 1024)
    return llvm::formatv("{0} bytes", bytes);
  double value = double(bytes) / 1024.0;
  unsigned unit = 0;
  while (unit + 1 < std::size(units) && value >= 1024.0) {
    value /= 1024.0;
    ++unit;
  }
  return llvm::formatv("{0:F2} {1}", value, units[unit]);
}
