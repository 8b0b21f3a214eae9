//===- PlanValidation.h - Checks a Plan before it is run (internal) -------===//
#ifndef DYNB_RUNTIME_LIB_PLANVALIDATION_H
#define DYNB_RUNTIME_LIB_PLANVALIDATION_H

#include "dynb/Runtime/ParameterStore.h"
#include "dynb/Runtime/Plan.h"
#include "dynb/Runtime/Status.h"

namespace dynb::rt {

/// Reports the first inconsistency between the plan, its buffers and the
/// parameter store, naming the step or buffer at fault.
Status validatePlan(const Plan &plan, const ParameterStore &params);

} // namespace dynb::rt

#endif // DYNB_RUNTIME_LIB_PLANVALIDATION_H
