//===- MemoryProbes.cpp - This process's resident memory ------------------===//
#include "dynb/Driver/MemoryProbes.h"

#include <cstring>
#include <fstream>
#include <string>

using namespace dynb;

/// A "Name:  N kB" line of /proc/self/status, in bytes (0 where there is
/// no such file or line: not Linux).
static int64_t statusField(const char *field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  size_t len = std::strlen(field);
  while (std::getline(status, line))
    if (line.compare(0, len, field) == 0)
      return std::stoll(line.substr(len)) * 1024;
  return 0;
}

int64_t dynb::peakResidentBytes() { return statusField("VmHWM:"); }
int64_t dynb::residentBytes() { return statusField("VmRSS:"); }
int64_t dynb::residentAnonymousBytes() { return statusField("RssAnon:"); }
