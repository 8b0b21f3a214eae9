//===- InstanceGraph.h - dynb.instance ops as the batching library's graph ===//
#ifndef DYNB_ANALYSIS_INSTANCEGRAPH_H
#define DYNB_ANALYSIS_INSTANCEGRAPH_H

#include "dynb/Analysis/Signature.h"
#include "dynb/Batching/BatchingGraph.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace dynb {

class InstanceOp;

/// Every op of some instances, one node each in program order, with an
/// edge to each op whose result it reads and its signature interned. The
/// dynb-batch pass schedules this graph and `dynbc stats --dot` draws it;
/// building it in one place keeps the drawing the pass's own schedule.
struct InstanceGraph {
  BatchingGraph graph;
  SignatureTable signatures;
  /// NodeId -> op.
  llvm::SmallVector<mlir::Operation *, 0> nodes;
  /// NodeId -> the position of its instance in the list it was built from.
  llvm::SmallVector<uint32_t, 0> instanceOf;
  llvm::DenseMap<mlir::Operation *, NodeId> nodeOf;
};

InstanceGraph buildInstanceGraph(llvm::ArrayRef<InstanceOp> instances);

} // namespace dynb

#endif // DYNB_ANALYSIS_INSTANCEGRAPH_H
