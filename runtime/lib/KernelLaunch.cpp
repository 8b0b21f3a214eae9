//===- KernelLaunch.cpp - Calls JIT kernels through the packed memref ABI -===//
#include "StepRunners.h"

#include <vector>

using namespace dynb::rt;

namespace {

// Kernels rarely take more arguments than this; more spill to the heap.
constexpr size_t kInlineKernelArgs = 16;

/// Calls the kernel on rows [begin, end) of every argument region. Each
/// caller builds its own descriptors, so chunks on different threads share
/// nothing.
void callOnRows(const KernelStep &step, const ResolvedBuffers &resolved,
                int64_t begin, int64_t end) {
  size_t numArgs = step.args.size();
  MemRefDesc2D inlineDescs[kInlineKernelArgs];
  MemRefDesc2D *inlineDescPtrs[kInlineKernelArgs];
  void *inlineArgs[kInlineKernelArgs];
  std::vector<MemRefDesc2D> heapDescs;
  std::vector<MemRefDesc2D *> heapDescPtrs;
  std::vector<void *> heapArgs;
  MemRefDesc2D *descs = inlineDescs;
  MemRefDesc2D **descPtrs = inlineDescPtrs;
  void **args = inlineArgs;
  if (numArgs > kInlineKernelArgs) {
    heapDescs.resize(numArgs);
    heapDescPtrs.resize(numArgs);
    heapArgs.resize(numArgs);
    descs = heapDescs.data();
    descPtrs = heapDescPtrs.data();
    args = heapArgs.data();
  }
  for (size_t i = 0; i < numArgs; ++i) {
    const Region &region = step.args[i];
    float *origin = resolved.at(region.buffer, region.row + begin, region.col);
    descs[i] = MemRefDesc2D{origin,
                            origin,
                            0,
                            {end - begin, region.cols},
                            {resolved.buffers[region.buffer].cols, 1}};
    descPtrs[i] = &descs[i];
    args[i] = &descPtrs[i];
  }
  step.fn(args);
}

} // namespace

void dynb::rt::runKernelRows(const KernelStep &step,
                             const ResolvedBuffers &resolved, int64_t begin,
                             int64_t end) {
  if (end > begin)
    callOnRows(step, resolved, begin, end);
}

void dynb::rt::runKernel(const KernelStep &step,
                         const ResolvedBuffers &resolved, ThreadPool &pool,
                         int64_t parallelMinElements) {
  int64_t width = 0;
  for (const Region &arg : step.args)
    width += arg.cols;
  if (step.rows > 1 && step.rows * width > parallelMinElements &&
      pool.numThreads() > 1) {
    pool.parallelFor(step.rows, [&](int64_t begin, int64_t end) {
      callOnRows(step, resolved, begin, end);
    });
    return;
  }
  // Kernels are elementwise over rows, so no rows means nothing to do.
  if (step.rows > 0)
    callOnRows(step, resolved, 0, step.rows);
}
