//===- DynbDialect.cpp - Registers the dynb dialect's operations ----------===//
#include "dynb/Dialect/DynbDialect.h"
#include "dynb/Dialect/DynbOps.h"

using namespace mlir;
using namespace dynb;

#include "dynb/Dialect/DynbOpsDialect.cpp.inc"

void DynbDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dynb/Dialect/DynbOps.cpp.inc"
      >();
}
