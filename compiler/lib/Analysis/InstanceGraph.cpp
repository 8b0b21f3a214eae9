//===- InstanceGraph.cpp - dynb.instance ops as the batching library's graph //
#include "dynb/Analysis/InstanceGraph.h"
#include "dynb/Dialect/DynbOps.h"

#include <algorithm>

using namespace dynb;

InstanceGraph dynb::buildInstanceGraph(llvm::ArrayRef<InstanceOp> instances) {
  InstanceGraph g;
  llvm::SmallVector<NodeId, 4> deps;
  for (auto [i, listed] : llvm::enumerate(instances)) {
    InstanceOp inst = listed; // a handle; its accessors are not const
    for (mlir::Operation &op : inst.getBody().front().without_terminator()) {
      deps.clear();
      for (mlir::Value v : op.getOperands())
        if (mlir::Operation *def = v.getDefiningOp())
          deps.push_back(g.nodeOf.lookup(def));
      // One edge per producer, however many of its results are read.
      llvm::sort(deps);
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      g.nodeOf[&op] = g.graph.addNode(g.signatures.intern(&op), deps);
      g.nodes.push_back(&op);
      g.instanceOf.push_back(uint32_t(i));
    }
  }
  return g;
}
