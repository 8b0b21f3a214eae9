//===- MemoryProbes.h - This process's resident memory ----------*- C++ -*-===//
//
// What the memory checks of the tests and the report's rss_* fields read:
// the kernel's own accounting of this process, so the figures match what
// /usr/bin/time and the benchmarks see from outside.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_MEMORYPROBES_H
#define DYNB_DRIVER_MEMORYPROBES_H

#include <cstdint>

namespace dynb {

/// Peak resident memory of this process, bytes (0 where unknown).
int64_t peakResidentBytes();
/// Current resident memory of this process, bytes (0 where unknown).
int64_t residentBytes();
/// Its anonymous part (RssAnon): what the process allocated, without the
/// pages of its libraries and other mapped files.
int64_t residentAnonymousBytes();

} // namespace dynb

#endif // DYNB_DRIVER_MEMORYPROBES_H
