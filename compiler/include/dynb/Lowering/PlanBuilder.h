//===- PlanBuilder.h - A batched schedule as a runtime plan -----*- C++ -*-===//
#ifndef DYNB_LOWERING_PLANBUILDER_H
#define DYNB_LOWERING_PLANBUILDER_H

#include "dynb/Dialect/DynbOps.h"
#include "dynb/JIT/KernelCache.h"
#include "dynb/Runtime/Plan.h"

namespace dynb {

struct PlanStats {
  uint64_t launches = 0;       // batched ops of the schedule
  uint64_t gathersCopied = 0;  // gathers that copy rows
  uint64_t gathersAsViews = 0; // gathers that became views (no copy)
  uint64_t concatsPlaced = 0;  // concats whose inputs were gathered in place
};

/// Translates a `dynb.schedule` into a runtime Plan: every batched value
/// becomes a window of an arena buffer, every launch the steps of its
/// (cached, compiled) module, every gather a view when its rows are
/// consecutive rows of one value, else a row copy. Arena offsets are planned
/// by liveness.
mlir::FailureOr<rt::Plan> buildPlan(ScheduleOp schedule, KernelCache &cache,
                                    PlanStats *stats = nullptr);

} // namespace dynb

#endif // DYNB_LOWERING_PLANBUILDER_H
