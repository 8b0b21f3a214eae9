//===- StepRunners.h - Executes gather, kernel and loss steps (internal) -===//
#ifndef DYNB_RUNTIME_LIB_STEPRUNNERS_H
#define DYNB_RUNTIME_LIB_STEPRUNNERS_H

#include "dynb/Runtime/Plan.h"
#include "dynb/Runtime/Status.h"
#include "dynb/Runtime/ThreadPool.h"

#include <cstdint>
#include <vector>

namespace dynb::rt {

/// Where a run's buffers live: bases[id] is row 0 of buffer id, and rows are
/// buffers[id].cols floats apart.
struct ResolvedBuffers {
  const std::vector<BufferDesc> &buffers;
  const std::vector<float *> &bases;

  float *at(BufferId buffer, int64_t row, int64_t col) const {
    return bases[buffer] + row * buffers[buffer].cols + col;
  }
};

/// Copies the step's rows; splits them across the pool when it copies more
/// than parallelMinBytes.
void runGather(const GatherStep &step, const ResolvedBuffers &resolved,
               ThreadPool &pool, int64_t parallelMinBytes);

/// Calls the kernel on rows [begin, end) of its argument regions, on the
/// calling thread.
void runKernelRows(const KernelStep &step, const ResolvedBuffers &resolved,
                   int64_t begin, int64_t end);

/// Calls the kernel once, or once per contiguous row chunk when
/// rows x (summed argument widths) exceeds parallelMinElements.
void runKernel(const KernelStep &step, const ResolvedBuffers &resolved,
               ThreadPool &pool, int64_t parallelMinElements);

/// Writes each row's loss. Rows are a few logits wide (the classes), so the
/// step runs on the calling thread: waking workers would cost more.
void runSoftmaxXent(const SoftmaxXentStep &step,
                    const ResolvedBuffers &resolved);

/// The softmax cross-entropy of one row of `classes` logits against
/// `label`, in double: what runSoftmaxXent stores, rounded to float.
double softmaxXentRow(const float *logits, int64_t classes, int64_t label);

/// Adds the step's contribution to its gradient buffers: a linear's as
/// oneDNN GEMMs on fixed chunks of weight rows, spread over the pool, when
/// m * n * k exceeds parallelMinElements.
Status runParamGrad(const ParamGradStep &step, const ResolvedBuffers &resolved,
                    ThreadPool &pool, int64_t parallelMinElements);

void runFill(const FillStep &step, const ResolvedBuffers &resolved);

} // namespace dynb::rt

#endif // DYNB_RUNTIME_LIB_STEPRUNNERS_H
