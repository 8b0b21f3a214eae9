//===- ByteSize.h - Byte counts in the unit that shows them -----*- C++ -*-===//
//
// A limit's message compares two sizes; printed in GiB alone, a small model
// against a small limit read "need 0.00 GiB, more than ... 0.00 GiB".
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_BYTESIZE_H
#define DYNB_DRIVER_BYTESIZE_H

#include <cstdint>
#include <string>

namespace dynb {

/// `bytes` in the largest binary unit (bytes, KiB, MiB, GiB) it fills at
/// least once, with two decimals past bytes: "512 bytes", "1.50 KiB".
std::string formatByteSize(uint64_t bytes);

} // namespace dynb

#endif // DYNB_DRIVER_BYTESIZE_H
