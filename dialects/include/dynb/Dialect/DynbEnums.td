//===- DynbEnums.td - The dynb dialect's enum attributes ---*- tablegen -*-===//
#ifndef DYNB_ENUMS_TD
#define DYNB_ENUMS_TD

include "mlir/IR/EnumAttr.td"

// The cases and their order are those of dynb::BatchingStrategy (the
// batching library has no MLIR); DynbOps.cpp holds the one conversion and
// asserts that the two agree.
def Dynb_ScheduleStrategy : I32EnumAttr<"ScheduleStrategy",
    "the batching strategy a schedule was made with", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"depth", 1>,
      I32EnumAttrCase<"agenda", 2>,
    ]> {
  let cppNamespace = "::dynb";
}

#endif // DYNB_ENUMS_TD
