//===- Passes.td - dynb's passes ---------------------------*- tablegen -*-===//
#ifndef DYNB_TRANSFORMS_PASSES_TD
#define DYNB_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def BatchInstances : Pass<"dynb-batch", "mlir::ModuleOp"> {
  let summary = "Merge the instances' nodes into batched launches";
  let description = [{
    Replaces the module's `dynb.instance` ops with `dynb.schedule` ops, one
    per `batch-size` consecutive instances (all of them when 0). Every node
    (an op of an instance) gets a signature (op or callee, attributes other
    than per-instance data such as an embedding's row, operand and result
    types); the batching algorithm (dynb/Batching/Scheduler.h) groups nodes
    of equal signature, and each group becomes one launch fed by
    `dynb.gather` ops. The schedule records the launches and the lower bound
    on launches as `dynb.launches` and `dynb.lower_bound`.
  }];
  let options = [
    Option<"strategy", "strategy", "std::string", /*default=*/"\"agenda\"",
           "Scheduling strategy: none | depth | agenda">,
    Option<"batchSize", "batch-size", "int64_t", /*default=*/"0",
           "Instances per schedule (0: all instances in one schedule)">,
    Option<"keepInstances", "keep-instances", "bool", /*default=*/"false",
           "Leave the instances in place beside the schedules (a driver "
           "that runs several strategies on one module uses this instead of "
           "copying the module)">,
  ];
  // No pass statistics: with Debian's libMLIR (built without assertions)
  // an assertions build of dynb would disagree with it on their layout. The
  // counts are on each schedule (dynb.launches, dynb.lower_bound,
  // dynb.nodes).
  let dependentDialects = ["::dynb::DynbDialect"];
}

#endif // DYNB_TRANSFORMS_PASSES_TD
