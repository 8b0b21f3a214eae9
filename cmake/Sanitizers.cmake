# Sanitizer and fuzzing builds, for every target of the project.
#
#   DYNB_SANITIZE  comma-separated sanitizers, e.g. "address,undefined" or
#                  "thread" (g++ and clang): -fsanitize=... plus frame
#                  pointers and line tables, on every compile and link.
#   DYNB_FUZZ      the libFuzzer targets in tests/fuzz (clang only). Every
#                  object also gets -fsanitize=fuzzer-no-link (coverage
#                  for the fuzzer) and libstdc++'s checked containers
#                  (_GLIBCXX_ASSERTIONS); DYNB_SANITIZE defaults to
#                  "address,undefined" there.
#
# UBSan reports are recoverable: run with UBSAN_OPTIONS=halt_on_error=1 to
# stop at the first (tools/dev does, for tests and fuzzing), and a
# suppressions file can then be used to get past a known report.
#
# Keep NDEBUG in these builds (DYNB_ENABLE_ASSERTIONS=OFF): LLVM's headers
# then agree with Debian's libMLIR about NDEBUG-dependent layouts (with
# -UNDEBUG, llvm::Statistic becomes TrackingStatistic in dynb's passes but
# is NoopStatistic inside libMLIR, and UBSan reports the mismatch).
#
# Debian's libMLIR.so and libLLVM.so are not instrumented: reports stop at
# their boundary, and ASan's container-overflow annotations can misfire
# across it (run with ASAN_OPTIONS=detect_container_overflow=0).
# Use a build folder of its own for each setting (tools/dev uses build-asan
# and build-fuzz).

option(DYNB_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang)" OFF)
set(DYNB_SANITIZE "" CACHE STRING
    "Sanitizers for every target, e.g. 'address,undefined' or 'thread' (empty: none)")

set(DYNB_SANITIZE_EFFECTIVE "${DYNB_SANITIZE}")
if(DYNB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DYNB_FUZZ needs clang (libFuzzer), e.g. "
            "-DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19; "
            "got ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(DYNB_SANITIZE_EFFECTIVE STREQUAL "")
    set(DYNB_SANITIZE_EFFECTIVE "address,undefined")
  endif()
endif()

if(NOT DYNB_SANITIZE_EFFECTIVE STREQUAL "")
  string(REPLACE " " "" DYNB_SANITIZE_EFFECTIVE "${DYNB_SANITIZE_EFFECTIVE}")
  if(DYNB_SANITIZE_EFFECTIVE MATCHES "thread" AND
     DYNB_SANITIZE_EFFECTIVE MATCHES "address|leak|memory")
    message(FATAL_ERROR "DYNB_SANITIZE: 'thread' cannot be combined with "
            "'address', 'leak' or 'memory' (got ${DYNB_SANITIZE_EFFECTIVE})")
  endif()
  set(_dynb_san_flags
      -fsanitize=${DYNB_SANITIZE_EFFECTIVE} -fno-omit-frame-pointer
      # Line tables, so reports name files and lines (inlined frames too).
      -g1)
  message(STATUS "dynb: sanitizers ${DYNB_SANITIZE_EFFECTIVE}")
  add_compile_options(${_dynb_san_flags})
  add_link_options(-fsanitize=${DYNB_SANITIZE_EFFECTIVE})
endif()

if(DYNB_FUZZ)
  # Coverage instrumentation without libFuzzer's main(); the fuzz targets
  # link with -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
  # Bounds-checked std::vector/string operator[] and friends: ABI-neutral.
  add_compile_definitions(_GLIBCXX_ASSERTIONS)
  message(STATUS "dynb: fuzzing build (tests/fuzz)")
endif()
