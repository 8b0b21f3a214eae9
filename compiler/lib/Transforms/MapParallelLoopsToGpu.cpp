//===- MapParallelLoopsToGpu.cpp - Parallel loops as 1-D GPU launches -----===//
//
// MLIR's own mapping (gpu-map-parallel-loops + convert-parallel-loops-to-gpu)
// puts the dimensions of a loop nest on grid dimensions: for the kernels'
// [batch x width] loops that is one thread a block, or a block of `width`
// threads, which wastes most of the GPU at widths like 4 or 256 x small N.
// Flattening the iteration space onto one grid dimension gives full blocks
// whatever the shape, and keeps neighbouring threads on neighbouring
// columns, so loads and stores coalesce.
//
//===----------------------------------------------------------------------===//
#include "dynb/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace dynb {
#define GEN_PASS_DEF_MAPPARALLELLOOPSTOGPU
#include "dynb/Transforms/Passes.h.inc"
} // namespace dynb

using namespace mlir;

namespace {

struct MapParallelLoopsToGpuPass
    : public dynb::impl::MapParallelLoopsToGpuBase<MapParallelLoopsToGpuPass> {
  using MapParallelLoopsToGpuBase::MapParallelLoopsToGpuBase;

  void runOnOperation() override {
    if (blockSize == 0) {
      getOperation().emitError("dynb-map-parallel-to-gpu: block-size must be "
                               "positive");
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> loops;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops)
      if (failed(mapLoop(loop)))
        return signalPassFailure();
  }

  LogicalResult mapLoop(scf::ParallelOp loop);
};

/// ceil(a / b) for a >= 0, b > 0, as (a + b - 1) / b: plain arith ops,
/// which every lowering handles (arith.ceildivui needs arith-expand first).
Value ceilDiv(OpBuilder &b, Location loc, Value a, Value d) {
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  Value dMinusOne = b.create<arith::SubIOp>(loc, d, one);
  Value sum = b.create<arith::AddIOp>(loc, a, dMinusOne);
  return b.create<arith::DivUIOp>(loc, sum, d);
}

/// Iterations of one loop dimension: ceil((ub - lb) / step), or 0 when the
/// range is empty (steps of scf.parallel are positive).
Value tripCount(OpBuilder &b, Location loc, Value lb, Value ub, Value step) {
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value empty = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, ub, lb);
  Value span = b.create<arith::SubIOp>(loc, ub, lb);
  Value count = ceilDiv(b, loc, span, step);
  return b.create<arith::SelectOp>(loc, empty, zero, count);
}

/// Trip counts of every dimension and their product.
std::pair<SmallVector<Value>, Value> tripCounts(OpBuilder &b,
                                                scf::ParallelOp loop) {
  Location loc = loop.getLoc();
  SmallVector<Value> counts;
  Value total = b.create<arith::ConstantIndexOp>(loc, 1);
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    counts.push_back(tripCount(b, loc, lb, ub, step));
    total = b.create<arith::MulIOp>(loc, total, counts.back());
  }
  return {counts, total};
}

LogicalResult MapParallelLoopsToGpuPass::mapLoop(scf::ParallelOp loop) {
  if (loop.getNumResults() != 0)
    return loop.emitError("a parallel loop with reductions has no GPU "
                          "mapping yet");
  // The trip counts are computed twice, on the host for the grid and in the
  // kernel for the bounds check, from the loop's bounds: the kernels' bounds
  // are constants and memref.dim ops, which
  // gpu-launch-sink-index-computations copies into the kernel, so its
  // arguments stay the memrefs alone.
  Location loc = loop.getLoc();
  OpBuilder b(loop);

  // Host side: the grid, and no launch at all for an empty iteration space
  // (CUDA refuses a grid of zero blocks).
  Value hostTotal = tripCounts(b, loop).second;
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  Value block = b.create<arith::ConstantIndexOp>(loc, blockSize);
  Value nonEmpty =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, hostTotal, zero);
  auto guard = b.create<scf::IfOp>(loc, nonEmpty, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());
  Value grid = ceilDiv(b, loc, hostTotal, block);
  auto launch = b.create<gpu::LaunchOp>(loc, grid, one, one, block, one, one);

  // Device side: this thread's linear index, then the loop's induction
  // variables by row-major delinearisation.
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  auto [counts, total] = tripCounts(b, loop);
  // The block size as the constant, not gpu.block_dim: the kernel is
  // compiled for it (.maxntid), and a known factor makes cheaper code.
  Value blockBase = b.create<arith::MulIOp>(loc, launch.getBlockIds().x, block);
  Value id = b.create<arith::AddIOp>(loc, blockBase, launch.getThreadIds().x);
  Value inRange =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, id, total);
  auto ifOp = b.create<scf::IfOp>(loc, inRange, /*withElseRegion=*/false);
  b.create<gpu::TerminatorOp>(loc);

  b.setInsertionPointToStart(ifOp.thenBlock());
  unsigned rank = loop.getNumLoops();
  SmallVector<Value> ivs(rank);
  Value rest = id;
  for (unsigned d = rank; d-- > 0;) {
    Value index =
        d == 0 ? rest : b.create<arith::RemUIOp>(loc, rest, counts[d]);
    if (d > 0)
      rest = b.create<arith::DivUIOp>(loc, rest, counts[d]);
    Value scaled = b.create<arith::MulIOp>(loc, index, loop.getStep()[d]);
    ivs[d] = b.create<arith::AddIOp>(loc, loop.getLowerBound()[d], scaled);
  }

  // Move the loop body in; its terminator (scf.reduce, with nothing to
  // reduce) is dropped.
  Block &loopBody = *loop.getBody();
  loopBody.getTerminator()->erase();
  Block *then = ifOp.thenBlock();
  then->getOperations().splice(then->getTerminator()->getIterator(),
                               loopBody.getOperations());
  for (auto [arg, iv] : llvm::zip(loopBody.getArguments(), ivs))
    arg.replaceAllUsesWith(iv);
  loop.erase();
  return success();
}

} // namespace
