//===- PlanBuilder.h - A batched schedule as a runtime plan -----*- C++ -*-===//
#ifndef DYNB_LOWERING_PLANBUILDER_H
#define DYNB_LOWERING_PLANBUILDER_H

#include "dynb/Dialect/DynbOps.h"
#include "dynb/JIT/KernelCache.h"
#include "dynb/Lowering/PlanAssembler.h"
#include "dynb/Runtime/Plan.h"

namespace dynb {

/// Translates a `dynb.schedule` into a runtime Plan (through PlanAssembler):
/// every batched value becomes a window of an arena buffer, every launch the
/// steps of its (cached, compiled) module, every gather a view when its rows
/// are consecutive rows of one value, else a row copy. Arena offsets are
/// planned by liveness.
mlir::FailureOr<rt::Plan> buildPlan(ScheduleOp schedule, KernelCache &cache,
                                    PlanStats *stats = nullptr);

} // namespace dynb

#endif // DYNB_LOWERING_PLANBUILDER_H
