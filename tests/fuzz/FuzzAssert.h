//===- FuzzAssert.h - Invariants the fuzz targets check -------------------===//
#ifndef DYNB_TESTS_FUZZ_FUZZASSERT_H
#define DYNB_TESTS_FUZZ_FUZZASSERT_H

#include <cstdio>

/// An invariant of the code under test. A failure traps, which libFuzzer
/// records as a crash together with the input.
#define FUZZ_ASSERT_INVARIANT(cond)                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__,  \
                   __LINE__);                                                  \
      __builtin_trap();                                                        \
    }                                                                          \
  } while (0)

#endif // DYNB_TESTS_FUZZ_FUZZASSERT_H
