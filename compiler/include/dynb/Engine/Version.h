//===- Version.h - The version of the dynb library and tools ----*- C++ -*-===//
//
// One version for the installed package (dynbConfigVersion.cmake), the
// library an application links and `dynbc --version`, so an application
// can check at run time that it loaded the libdynb it was built against.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_ENGINE_VERSION_H
#define DYNB_ENGINE_VERSION_H

// The version of the headers the application was compiled with.
#define DYNB_VERSION_MAJOR 0
#define DYNB_VERSION_MINOR 1
#define DYNB_VERSION_PATCH 0

namespace dynb {

/// The version of the library loaded at run time, "MAJOR.MINOR.PATCH".
const char *versionString();

} // namespace dynb

#endif // DYNB_ENGINE_VERSION_H
