//===- Version.cpp - The version of the dynb library ----------------------===//
#include "dynb/Engine/Version.h"

#define DYNB_STRINGIFY_(X) #X
#define DYNB_STRINGIFY(X) DYNB_STRINGIFY_(X)

const char *dynb::versionString() {
  return DYNB_STRINGIFY(DYNB_VERSION_MAJOR) "." DYNB_STRINGIFY(
      DYNB_VERSION_MINOR) "." DYNB_STRINGIFY(DYNB_VERSION_PATCH);
}
