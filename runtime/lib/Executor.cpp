//===- Executor.cpp - Runs a Plan over an arena with a thread pool --------===//
#include "dynb/Runtime/Executor.h"

#include "DispatchRunner.h"
#include "MapRunner.h"
#include "PlanValidation.h"
#include "StepRunners.h"
#include "dynb/Runtime/Arena.h"
#include "dynb/Runtime/GemmCache.h"
#include "dynb/Runtime/ThreadPool.h"

#include <fmt/format.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <tuple>

using namespace dynb::rt;

/// Applies an explicit thread count to OpenMP before anything starts its
/// team, so oneDNN's GEMMs and the runtime's loops use the same number.
static unsigned applyThreadCount(unsigned numThreads) {
  if (numThreads)
    omp_set_num_threads(static_cast<int>(numThreads));
  return numThreads;
}

struct Executor::Impl {
  Impl(const ParameterStore &params, ExecutorOptions opts)
      : params(params), opts(opts), pool(applyThreadCount(opts.numThreads)),
        gemm(GemmCacheOptions{opts.smallGemmMaxMacs}) {
    dispatchOpts.kernelParallelMinElements = opts.kernelParallelMinElements;
    dispatchOpts.copyParallelMinBytes = opts.gatherParallelMinBytes;
    dispatchOpts.smallGemmMaxMacs = opts.smallGemmMaxMacs;
    dispatchOpts.body = opts.dispatchBody;
    dispatchOpts.tileMaxRows = opts.dispatchTileMaxRows;
    dispatchOpts.packedWeightMaxBytes = opts.dispatchPackedWeightMaxBytes;
    dispatchOpts.profile = opts.profile;
  }

  Status run(const Plan &plan);
  Status resolveBuffers(const Plan &plan);
  Status runGemm(size_t stepIndex, const GemmStep &step,
                 const ResolvedBuffers &resolved);
  /// The start of a buffer's row 0 after run(), or null if it has none.
  float *basePointer(const Plan &plan, BufferId buffer) const;

  const ParameterStore &params;
  ParameterStore *gradients = nullptr;
  ExecutorOptions opts;
  ThreadPool pool;
  Arena arena;
  GemmCache gemm;
  DispatchRunner dispatch;
  DispatchRunner::Options dispatchOpts;
  MapRunner maps;
  // Kept across runs so that resolving a plan of a familiar size allocates
  // nothing.
  std::vector<float *> bases;
  ExecutorStats stats;
};

float *Executor::Impl::basePointer(const Plan &plan, BufferId buffer) const {
  if (buffer >= plan.buffers.size())
    return nullptr;
  const BufferDesc &desc = plan.buffers[buffer];
  if (desc.kind == BufferDesc::Kind::Parameter) {
    const ParamTensor *tensor = params.find(desc.paramName);
    // Kernels take float *, but validation keeps writes away from
    // parameters.
    return tensor ? const_cast<float *>(tensor->data.data()) : nullptr;
  }
  if (desc.kind == BufferDesc::Kind::Gradient) {
    ParamTensor *tensor =
        gradients ? gradients->findMutable(desc.paramName) : nullptr;
    return tensor ? tensor->data.data() : nullptr;
  }
  if (desc.kind == BufferDesc::Kind::Host)
    return const_cast<float *>(desc.hostData);
  if (desc.arenaOffset < 0 || !arena.data())
    return nullptr;
  return reinterpret_cast<float *>(arena.data() + desc.arenaOffset);
}

Status Executor::Impl::resolveBuffers(const Plan &plan) {
  bases.resize(plan.buffers.size());
  for (BufferId id = 0; id < plan.buffers.size(); ++id) {
    const BufferDesc &desc = plan.buffers[id];
    int64_t elements = desc.rows * desc.cols;
    if (desc.kind == BufferDesc::Kind::Parameter) {
      const ParamTensor *tensor = params.find(desc.paramName);
      if (!tensor)
        return Status::error(fmt::format("buffer {}: unknown parameter '{}'",
                                         id, desc.paramName));
      if (static_cast<int64_t>(tensor->data.size()) < elements)
        return Status::error(
            fmt::format("buffer {}: parameter '{}' has {} elements, not {}", id,
                        desc.paramName, tensor->data.size(), elements));
      bases[id] = const_cast<float *>(tensor->data.data());
      continue;
    }
    if (desc.kind == BufferDesc::Kind::Gradient) {
      ParamTensor *tensor =
          gradients ? gradients->findMutable(desc.paramName) : nullptr;
      if (!tensor)
        return Status::error(fmt::format(
            "buffer {}: no gradient store holds '{}' (the plan has a backward "
            "pass: Executor::setGradients)",
            id, desc.paramName));
      if (static_cast<int64_t>(tensor->data.size()) != elements)
        return Status::error(
            fmt::format("buffer {}: gradient '{}' has {} elements, not {}", id,
                        desc.paramName, tensor->data.size(), elements));
      bases[id] = tensor->data.data();
      continue;
    }
    if (desc.kind == BufferDesc::Kind::Host) {
      if (!desc.hostData && elements > 0)
        return Status::error(
            fmt::format("buffer {}: host buffer without data", id));
      // Kernels take float *, but validation keeps writes away.
      bases[id] = const_cast<float *>(desc.hostData);
      continue;
    }
    int64_t bytes = elements * static_cast<int64_t>(sizeof(float));
    if (desc.arenaOffset < 0 || desc.arenaOffset % Arena::kAlignment != 0 ||
        desc.arenaOffset + bytes > plan.arenaBytes)
      return Status::error(fmt::format(
          "buffer {}: arena offset {} for {} bytes does not fit the {}-byte "
          "arena (was planArena() called?)",
          id, desc.arenaOffset, bytes, plan.arenaBytes));
    bases[id] = reinterpret_cast<float *>(arena.data() + desc.arenaOffset);
  }
  return Status::ok();
}

Status Executor::Impl::runGemm(size_t stepIndex, const GemmStep &step,
                               const ResolvedBuffers &resolved) {
  GemmArgs args;
  args.m = step.a.rows;
  args.k = step.a.cols;
  args.n = step.c.cols;
  args.a = resolved.at(step.a.buffer, step.a.row, step.a.col);
  args.lda = resolved.buffers[step.a.buffer].cols;
  args.w = resolved.bases[step.weight];
  args.bias = step.hasBias ? resolved.bases[step.bias] : nullptr;
  args.c = resolved.at(step.c.buffer, step.c.row, step.c.col);
  args.ldc = resolved.buffers[step.c.buffer].cols;
  args.relu = step.relu;
  args.weightAsStored = step.weightAsStored;
  Status status = gemm.run(args);
  stats.gemmPrimitivesCreated = gemm.primitivesCreated();
  if (status)
    return Status::error(
        fmt::format("step {} (gemm): {}", stepIndex, status.message()));
  ++stats.gemmCalls;
  return Status::ok();
}

Status Executor::Impl::run(const Plan &plan) {
  if (plan.version != kPlanFormatVersion)
    return Status::error(
        fmt::format("plan format version {} is not the runtime's {}",
                    plan.version, kPlanFormatVersion));
  if (Status status = arena.reserve(plan.arenaBytes))
    return status;
  stats.arenaCapacityBytes = arena.capacity();
  if (Status status = resolveBuffers(plan))
    return status;

  ResolvedBuffers resolved{plan.buffers, bases};
  using Clock = std::chrono::steady_clock;
  Clock::time_point start;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step &step = plan.steps[s];
    if (opts.profile)
      start = Clock::now();
    switch (step.kind()) {
    case Step::Kind::Gather:
      runGather(step.gather(), resolved, pool, opts.gatherParallelMinBytes);
      stats.gatherRowsCopied += step.gather().sources.size();
      break;
    case Step::Kind::Gemm:
      if (Status status = runGemm(s, step.gemm(), resolved))
        return status;
      break;
    case Step::Kind::Kernel:
      runKernel(step.kernel(), resolved, pool, opts.kernelParallelMinElements);
      ++stats.kernelCalls;
      break;
    case Step::Kind::Dispatch: {
      Status status = dispatch.run(step.dispatch(), resolved, gemm, pool,
                                   dispatchOpts, stats);
      stats.gemmPrimitivesCreated = gemm.primitivesCreated();
      stats.dispatchPackedWeightBytes = dispatch.packedWeightBytes();
      if (status)
        return Status::error(
            fmt::format("step {} (dispatch): {}", s, status.message()));
      ++stats.dispatchCalls;
      break;
    }
    case Step::Kind::Map:
      if (Status status = maps.run(step.map(), resolved))
        return Status::error(
            fmt::format("step {} (map): {}", s, status.message()));
      ++stats.mapCalls;
      stats.convFlops += 2 * mapStepMacs(step.map());
      break;
    case Step::Kind::SoftmaxXent:
      runSoftmaxXent(step.softmaxXent(), resolved);
      break;
    case Step::Kind::ParamGrad:
      if (Status status = runParamGrad(step.paramGrad(), resolved, pool,
                                       opts.kernelParallelMinElements))
        return Status::error(
            fmt::format("step {} (param_grad): {}", s, status.message()));
      ++stats.paramGradCalls;
      break;
    case Step::Kind::Fill:
      runFill(step.fill(), resolved);
      break;
    }
    if (opts.profile) {
      double seconds =
          std::chrono::duration<double>(Clock::now() - start).count();
      if (step.kind() == Step::Kind::Gather) {
        stats.gatherSeconds += seconds;
      } else if (step.kind() == Step::Kind::Dispatch) {
        stats.dispatchSeconds += seconds;
      } else if (step.kind() == Step::Kind::Map) {
        stats.mapSeconds += seconds;
      } else if (step.kind() == Step::Kind::ParamGrad) {
        stats.paramGradSeconds += seconds;
      } else if (step.kind() == Step::Kind::Gemm) {
        stats.gemmSeconds += seconds;
        stats.gemmFlops += 2 * uint64_t(step.gemm().a.rows) *
                           uint64_t(step.gemm().a.cols) *
                           uint64_t(step.gemm().c.cols);
      } else {
        stats.kernelSeconds += seconds;
      }
    }
  }
  return Status::ok();
}

Executor::Executor(const ParameterStore &params, ExecutorOptions opts)
    : impl_(std::make_unique<Impl>(params, opts)) {}

Executor::~Executor() = default;

Status Executor::validate(const Plan &plan) const {
  try {
    return validatePlan(plan, impl_->params);
  } catch (const std::exception &e) {
    return Status::error(fmt::format("validate: {}", e.what()));
  }
}

void Executor::setGradients(ParameterStore *gradients) {
  impl_->gradients = gradients;
}

Status Executor::run(const Plan &plan) {
  try {
    return impl_->run(plan);
  } catch (const std::exception &e) {
    return Status::error(fmt::format("run: {}", e.what()));
  }
}

const float *Executor::rowPointer(const Plan &plan, BufferId buffer,
                                  int64_t row) const {
  float *base = impl_->basePointer(plan, buffer);
  return base ? base + row * plan.buffers[buffer].cols : nullptr;
}

void Executor::copyOutput(const Plan &plan, size_t p,
                          std::vector<float> &out) const {
  if (p >= plan.outputs.size()) {
    out.clear();
    return;
  }
  const Region &region = plan.outputs[p];
  const float *base = impl_->basePointer(plan, region.buffer);
  if (!base) {
    out.clear();
    return;
  }
  int64_t bufferCols = plan.buffers[region.buffer].cols;
  out.resize(static_cast<size_t>(region.rows * region.cols));
  for (int64_t r = 0; r < region.rows; ++r)
    std::memcpy(out.data() + r * region.cols,
                base + (region.row + r) * bufferCols + region.col,
                static_cast<size_t>(region.cols) * sizeof(float));
}

double Executor::loss(const Plan &plan) const {
  double total = 0;
  for (const Region &region : plan.losses) {
    const float *base = impl_->basePointer(plan, region.buffer);
    if (!base)
      continue;
    int64_t bufferCols = plan.buffers[region.buffer].cols;
    for (int64_t r = 0; r < region.rows; ++r)
      total += base[(region.row + r) * bufferCols + region.col];
  }
  return total;
}

const ExecutorStats &Executor::stats() const { return impl_->stats; }

int64_t dynb::rt::dispatchPackedWeightBytes(const std::vector<Plan> &plans,
                                            const ExecutorOptions &opts) {
  if (opts.dispatchPackedWeightMaxBytes <= 0)
    return 0;
  // The layout's size comes from oneDNN, as the executor's cache asks it.
  GemmCache layouts;
  std::set<std::tuple<std::string, int64_t, int64_t>> seen;
  int64_t total = 0;
  for (const Plan &plan : plans)
    for (const Step &step : plan.steps) {
      if (step.kind() != Step::Kind::Dispatch)
        continue;
      for (const Step &inner : step.dispatch().body) {
        if (inner.kind() != Step::Kind::Gemm)
          continue;
        const GemmStep &g = inner.gemm();
        int64_t k = g.a.cols, n = g.c.cols;
        if (!seen.emplace(plan.buffers[g.weight].paramName, k, n).second)
          continue;
        // As DispatchRunner::packExpertWeights decides, in run order.
        int64_t floats = layouts.packedWeightFloats(k, n);
        int64_t bytes =
            step.dispatch().experts * floats * int64_t(sizeof(float));
        if (floats > 0 && total + bytes <= opts.dispatchPackedWeightMaxBytes)
          total += bytes;
      }
    }
  return total;
}
