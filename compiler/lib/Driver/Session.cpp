//===- Session.cpp - The batch, plan, run and check flow behind dynbc -----===//
#include "dynb/Driver/Session.h"
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Driver/ByteSize.h"
#include "dynb/Driver/MemoryProbes.h"
#include "dynb/Import/GraphImporter.h"
#include "dynb/Import/Safetensors.h"
#include "dynb/Reference/ReferenceInterpreter.h"
#include "dynb/Runtime/Executor.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <thread>

using namespace mlir;
using namespace dynb;

namespace {
double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Adds what BatchPlanner::plan counts (its schedule, plan and JIT
/// figures) from `part` to `total`.
void addPlanCounts(RunResult &total, const RunResult &part) {
  total.nodes += part.nodes;
  total.batches += part.batches;
  total.launches += part.launches;
  total.lowerBound += part.lowerBound;
  total.plan.launches += part.plan.launches;
  total.plan.gathersCopied += part.plan.gathersCopied;
  total.plan.gathersAsViews += part.plan.gathersAsViews;
  total.plan.concatsPlaced += part.plan.concatsPlaced;
  total.scheduleSeconds += part.scheduleSeconds;
  total.planSeconds += part.planSeconds;
  total.jitSeconds += part.jitSeconds;
  total.modulesCompiled += part.modulesCompiled;
  total.modulesLoaded += part.modulesLoaded;
}
} // namespace

void RunResult::sampleAnonymous() {
  peakAnonymousSampled =
      std::max(peakAnonymousSampled, residentAnonymousBytes());
}

double RunResult::medianPassSeconds() const {
  if (passSeconds.empty())
    return 0;
  std::vector<double> s = passSeconds;
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

Session::Session(llvm::raw_ostream &diagnostics) : ModelLoader(diagnostics) {}

Session::~Session() = default;

BatchPlanner::~BatchPlanner() = default;

void Session::setPlanner(std::unique_ptr<BatchPlanner> planner,
                         StringRef path) {
  planner_ = std::move(planner);
  plannerPath_ = path.str();
}

LogicalResult Session::fallBackToImporter(llvm::Error why) {
  std::string message = llvm::toString(std::move(why));
  planner_.reset();
  // The importer's diagnostic is the one users see for a bad input.
  if (streaming()) {
    if (failed(stream_->rewind(*ctx_)))
      return failure();
    for (;;) {
      FailureOr<OwningOpRef<ModuleOp>> batch = stream_->next(*ctx_, 1);
      if (failed(batch))
        return failure();
      if (!*batch)
        break;
    }
  } else if (failed(loadGraphs(plannerPath_))) {
    return failure();
  }
  emitError(UnknownLoc::get(ctx_.get()))
      << plannerPath_ << ": the interchange reader refused an input the "
      << "importer accepts (a bug in dynb; --front-end=mlir reads it): "
      << message;
  return failure();
}

uint64_t Session::numInstances() {
  if (planner_)
    return planner_->numInstances();
  if (stream_)
    return stream_->numInstances();
  return llvm::range_size(module_->getOps<InstanceOp>());
}

static std::string gib(uint64_t bytes) { return formatByteSize(bytes); }

/// Runs dynb-batch on `module`. Without `verifyAfter`, the caller verifies
/// what it needs (the instances were verified on load; verifying them all
/// again costs more than the pass).
static LogicalResult runBatchPass(ModuleOp module, BatchingStrategy strategy,
                                  int64_t batchSize, bool keepInstances,
                                  bool verifyAfter) {
  PassManager pm(module.getContext());
  pm.enableVerifier(verifyAfter);
  BatchInstancesOptions opts;
  opts.strategy = toString(strategy).str();
  opts.batchSize = batchSize;
  opts.keepInstances = keepInstances;
  pm.addPass(createBatchInstances(opts));
  return pm.run(module);
}

FailureOr<OwningOpRef<ModuleOp>> Session::batch(BatchingStrategy strategy,
                                                int64_t batchSize) {
  OwningOpRef<ModuleOp> copy = module_->clone();
  if (failed(runBatchPass(*copy, strategy, batchSize, /*keepInstances=*/false,
                          /*verifyAfter=*/true)))
    return failure();
  return std::move(copy);
}

FailureOr<SmallVector<ScheduleOp>>
Session::addSchedules(BatchingStrategy strategy, int64_t batchSize) {
  return addSchedulesTo(*module_, strategy, batchSize);
}

FailureOr<SmallVector<ScheduleOp>>
Session::addSchedulesTo(ModuleOp module, BatchingStrategy strategy,
                        int64_t batchSize) {
  if (failed(runBatchPass(module, strategy, batchSize,
                          /*keepInstances=*/true, /*verifyAfter=*/false)))
    return failure();
  SmallVector<ScheduleOp> schedules(module.getOps<ScheduleOp>());
  for (ScheduleOp s : schedules)
    if (failed(verify(s)))
      return failure();
  return schedules;
}

FailureOr<StackedOutputs> Session::runReference() {
  if (llvm::Error e = checkParams()) {
    emitError(module_->getLoc()) << llvm::toString(std::move(e));
    return failure();
  }
  // A planner's session holds the model alone: the reference reads the
  // instances through the importer, independently of the planner.
  if (planner_ && module_->getOps<InstanceOp>().empty() &&
      failed(loadGraphs(plannerPath_)))
    return failure();
  return referenceOf(*module_);
}

FailureOr<StackedOutputs> Session::referenceOf(ModuleOp module) {
  ReferenceInterpreter interp(module, params_);
  StackedOutputs out;
  for (InstanceOp inst : module.getOps<InstanceOp>()) {
    FailureOr<std::vector<std::vector<float>>> r = interp.run(inst);
    if (failed(r))
      return failure();
    if (out.values.empty()) {
      out.values.resize(r->size());
      for (auto &v : *r)
        out.widths.push_back(v.size());
    }
    for (size_t p = 0; p < r->size(); ++p)
      llvm::append_range(out.values[p], (*r)[p]);
  }
  out.hasLoss = interp.hasLoss();
  out.loss = interp.loss();
  return out;
}

FailureOr<std::vector<rt::Plan>> Session::buildPlans(ModuleOp module,
                                                     const RunOptions &options,
                                                     RunResult &result) {
  auto t0 = std::chrono::steady_clock::now();
  FailureOr<SmallVector<ScheduleOp>> schedules =
      addSchedulesTo(module, options.strategy, options.batchSize);
  if (failed(schedules))
    return failure();
  result.scheduleSeconds += secondsSince(t0);
  // The schedules are only needed until their plans are built.
  auto eraseSchedules = llvm::make_scope_exit([&] {
    for (ScheduleOp s : *schedules)
      s.erase();
  });

  KernelCacheStats before = kernels_->stats();
  t0 = std::chrono::steady_clock::now();
  std::vector<rt::Plan> plans;
  for (ScheduleOp s : *schedules) {
    FailureOr<rt::Plan> plan = buildPlan(s, *kernels_, &result.plan);
    if (failed(plan))
      return failure();
    result.nodes += s.getNodes();
    result.launches += s.getLaunches();
    result.lowerBound += s.getLowerBound();
    plans.push_back(std::move(*plan));
  }
  result.batches += plans.size();
  double jit = kernels_->stats().jitSeconds - before.jitSeconds;
  result.jitSeconds += jit;
  result.modulesCompiled += kernels_->stats().compiled - before.compiled;
  result.modulesLoaded += kernels_->stats().loaded - before.loaded;
  result.planSeconds += secondsSince(t0) - jit;
  result.paramBytes = int64_t(parameterBytes());
  for (const rt::Plan &plan : plans)
    result.peakLiveBytes =
        std::max(result.peakLiveBytes, rt::peakLiveBytes(plan));
  return plans;
}

LogicalResult Session::checkPlanMemory(const std::vector<rt::Plan> &plans,
                                       uint64_t firstBatch, Location loc) {
  // Checked before the executor allocates anything: the arena grows to the
  // largest plan.
  int64_t largest = 0;
  size_t largestIndex = 0;
  for (auto [i, plan] : llvm::enumerate(plans))
    if (plan.arenaBytes > largest) {
      largest = plan.arenaBytes;
      largestIndex = i;
    }
  // The executor's copies of expert weights in oneDNN's layout count too.
  uint64_t packed = uint64_t(rt::dispatchPackedWeightBytes(plans, {}));
  uint64_t needed = parameterBytes() + uint64_t(largest) + packed;
  if (limits_.maxMemoryBytes && needed > limits_.maxMemoryBytes)
    return emitError(loc) << "batch " << firstBatch + largestIndex << " needs "
                          << gib(largest) << " of buffers (" << gib(needed)
                          << " with the parameters"
                          << (packed ? " and packed expert weights" : "")
                          << "), more than " << limits_.memoryLimitName
                          << " of " << gib(limits_.maxMemoryBytes)
                          << "; use smaller batches or raise the limit";
  return success();
}

namespace {
/// What a run does with its executor, shared by the whole-input and the
/// streamed flow: validation, the warm-up pass that collects outputs, and
/// the timed passes.
class PlanRunner {
public:
  PlanRunner(const rt::ParameterStore &params, const RunOptions &options,
             RunResult &result)
      : params(params), options(options), result(result) {
    executor.emplace(params, executorOptions(options, options.threads));
  }

  /// Runs later plans on `threads` threads (a new executor: its arena and
  /// counts start afresh, so not with timed passes or profiles).
  void useThreads(unsigned threads) {
    executor.reset();
    executor.emplace(params, executorOptions(options, threads));
  }

  LogicalResult validate(const std::vector<rt::Plan> &plans, Location loc) {
    for (const rt::Plan &plan : plans) {
      rt::Status s = executor->validate(plan);
      if (!s.isOk())
        return emitError(loc) << "invalid plan: " << s.message();
    }
    return success();
  }
  /// Runs `plan` once and appends its outputs to `out`.
  LogicalResult runCollecting(const rt::Plan &plan, StackedOutputs &out,
                              uint64_t reserveInstances, Location loc) {
    if (failed(runOnce(plan, loc)))
      return failure();
    if (out.values.empty()) {
      // Reserved once: growing by doubling would make resident memory jump
      // in the middle of a long run.
      out.values.resize(plan.outputs.size());
      for (auto [p, r] : llvm::enumerate(plan.outputs)) {
        out.widths.push_back(r.cols);
        out.values[p].reserve(reserveInstances * r.cols);
      }
    }
    for (size_t p = 0; p < plan.outputs.size(); ++p) {
      executor->copyOutput(plan, p, buffer);
      llvm::append_range(out.values[p], buffer);
    }
    if (!plan.losses.empty()) {
      out.hasLoss = true;
      out.loss += executor->loss(plan);
    }
    return success();
  }
  LogicalResult runOnce(const rt::Plan &plan, Location loc) {
    rt::Status s = executor->run(plan);
    if (!s.isOk())
      return emitError(loc) << "run failed: " << s.message();
    return success();
  }
  /// Runs every plan `repeat` times, adding each pass's time to
  /// RunResult::passSeconds (a streamed run calls this once a batch, and
  /// its passes are the sums over the batches) and the executor's counts
  /// to the result.
  LogicalResult timedPasses(const std::vector<rt::Plan> &plans, unsigned repeat,
                            Location loc) {
    if (repeat == 0)
      return success(); // the caller timed the warm-up pass
    result.passSeconds.resize(repeat, 0.0);
    rt::ExecutorStats beforeTimed = executor->stats();
    for (unsigned r = 0; r < repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      for (const rt::Plan &plan : plans)
        if (failed(runOnce(plan, loc)))
          return failure();
      result.passSeconds[r] += secondsSince(start);
    }
    addTimedStats(beforeTimed);
    return success();
  }

private:
  /// Adds what the executor counted since `beforeTimed` to the result.
  void addTimedStats(const rt::ExecutorStats &beforeTimed) {
    const rt::ExecutorStats &after = executor->stats();
    result.arenaBytes = after.arenaCapacityBytes;
    result.profile.gather += after.gatherSeconds - beforeTimed.gatherSeconds;
    result.profile.gemm += after.gemmSeconds - beforeTimed.gemmSeconds;
    result.profile.kernel += after.kernelSeconds - beforeTimed.kernelSeconds;
    result.profile.gemmFlops += after.gemmFlops - beforeTimed.gemmFlops;
    result.profile.map += after.mapSeconds - beforeTimed.mapSeconds;
    result.profile.convFlops += after.convFlops - beforeTimed.convFlops;
    result.profile.dispatch +=
        after.dispatchSeconds - beforeTimed.dispatchSeconds;
    result.profile.dispatchGate +=
        after.dispatchGateSeconds - beforeTimed.dispatchGateSeconds;
    result.profile.dispatchExperts +=
        after.dispatchExpertSeconds - beforeTimed.dispatchExpertSeconds;
    result.profile.dispatchCombine +=
        after.dispatchCombineSeconds - beforeTimed.dispatchCombineSeconds;
    result.dispatchGemmFlops +=
        after.dispatchGemmFlops - beforeTimed.dispatchGemmFlops;
    result.dispatchParamBytes +=
        after.dispatchParamBytes - beforeTimed.dispatchParamBytes;
  }

  static rt::ExecutorOptions executorOptions(const RunOptions &options,
                                             unsigned threads) {
    rt::ExecutorOptions exOpts;
    exOpts.numThreads = threads;
    exOpts.profile = options.profile;
    return exOpts;
  }

  const rt::ParameterStore &params;
  const RunOptions &options;
  std::optional<rt::Executor> executor;
  RunResult &result;
  std::vector<float> buffer;
};
} // namespace

FailureOr<RunResult> Session::run(const RunOptions &options) {
  if (llvm::Error e = checkParams()) {
    emitError(module_->getLoc()) << llvm::toString(std::move(e));
    return failure();
  }
  // Node records are read, planned and run a batch at a time, whole input
  // or streamed: memory holds the batches being planned and the outputs,
  // never the whole input.
  if (streaming() || planner_)
    return runStreamed(options);
  RunResult result;
  result.strategy = options.strategy;
  result.instances = numInstances();

  FailureOr<std::vector<rt::Plan>> plans =
      buildPlans(*module_, options, result);
  result.readSeconds = loadSeconds_;
  if (failed(plans) || failed(checkPlanMemory(*plans, 0, module_->getLoc())))
    return failure();
  result.residentAfterPlans = residentBytes();
  result.sampleAnonymous();

  Location loc = module_->getLoc();
  PlanRunner runner(params_, options, result);
  if (failed(runner.validate(*plans, loc)))
    return failure();
  // Warm-up pass: also collects the outputs. Without timed passes
  // (repeat 0: run once, as a user who wants the outputs does) it is the
  // pass that is timed.
  auto warmUp = std::chrono::steady_clock::now();
  for (const rt::Plan &plan : *plans) {
    if (failed(
            runner.runCollecting(plan, result.outputs, result.instances, loc)))
      return failure();
    result.residentAfterBatch.push_back(residentBytes());
    result.sampleAnonymous();
  }
  if (options.repeat == 0)
    result.passSeconds.assign(1, secondsSince(warmUp));
  for (const std::vector<float> &v : result.outputs.values)
    result.outputBytes += int64_t(v.size() * sizeof(float));
  if (failed(runner.timedPasses(*plans, options.repeat, loc)))
    return failure();
  return result;
}

LogicalResult Session::openStream(StringRef path) {
  if (path.ends_with(".mlir") || path.ends_with(".json") || path == "-")
    return emitError(UnknownLoc::get(ctx_.get()))
           << "--stream reads a JSON Lines file (.jsonl, "
              "docs/interchange.md), not '"
           << path << "'";
  ImportLimits importLimits = limits_.importLimits();
  stream_ = JsonLinesStream::open(path, *ctx_, importLimits);
  if (!stream_)
    return failure();
  module_ = stream_->takeModel();
  return checkLoaded();
}

namespace {
/// A context for one streamed batch, with the session's diagnostics: the
/// batch's locations, types and attributes (gather rows, embedding indices)
/// go when it goes.
struct BatchContext {
  std::unique_ptr<MLIRContext> ctx;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
};
} // namespace

/// A fresh context for one streamed batch, with the session's diagnostics.
static BatchContext newBatchContext(MLIRContext &parent,
                                    llvm::raw_ostream &diagnostics) {
  BatchContext context;
  context.ctx = std::make_unique<MLIRContext>(parent.getDialectRegistry(),
                                              MLIRContext::Threading::DISABLED);
  context.ctx->printOpOnDiagnostic(false);
  context.handler = attachJsonDiagnostics(*context.ctx, diagnostics);
  return context;
}

FailureOr<RunResult> Session::runStreamed(const RunOptions &options) {
  RunResult result;
  result.strategy = options.strategy;
  result.instances = numInstances();
  if (stream_ && failed(stream_->rewind(*ctx_)))
    return failure();
  PlanRunner runner(params_, options, result);
  // batchSize 0 reads every instance as one batch, as the whole-input run
  // batches them.
  size_t perBatch = size_t(std::max<int64_t>(options.batchSize, 0));
  uint64_t firstInstance = 0;

  // The reference of the next batch, read through the importer (in a
  // context of its own) and interpreted.
  auto referenceOfNext =
      [&](std::optional<StackedOutputs> &reference) -> LogicalResult {
    BatchContext context = newBatchContext(*ctx_, diagnostics_);
    FailureOr<OwningOpRef<ModuleOp>> module =
        stream_->next(*context.ctx, perBatch);
    if (failed(module))
      return failure();
    if (!*module)
      return emitError(module_->getLoc())
             << "the input ended before the batch being checked";
    auto t0 = std::chrono::steady_clock::now();
    FailureOr<StackedOutputs> ref = referenceOf(**module);
    if (failed(ref))
      return failure();
    result.referenceSeconds += secondsSince(t0);
    reference = std::move(*ref);
    return success();
  };
  // Runs one batch's plans: the warm-up run of each plan collects its
  // outputs (compared with `reference` if given); the timed passes then
  // repeat the plans while the batch is loaded.
  auto runBatch = [&](std::vector<rt::Plan> &plans, uint64_t batch,
                      uint64_t read,
                      const std::optional<StackedOutputs> &reference,
                      Location loc) -> LogicalResult {
    if (failed(checkPlanMemory(plans, batch, loc)) ||
        failed(runner.validate(plans, loc)))
      return failure();
    if (batch == 0)
      result.residentAfterPlans = residentBytes();
    result.sampleAnonymous();
    StackedOutputs batchOutputs;
    auto warmUp = std::chrono::steady_clock::now();
    for (const rt::Plan &plan : plans)
      if (failed(runner.runCollecting(plan, batchOutputs, read, loc)))
        return failure();
    if (options.repeat == 0) {
      result.passSeconds.resize(1, 0.0);
      result.passSeconds[0] += secondsSince(warmUp);
    }
    if (reference)
      accumulateComparison(
          result.comparison,
          compareOutputs(*reference, batchOutputs, options.atol, options.rtol),
          int64_t(firstInstance));
    if (result.outputs.values.empty()) {
      result.outputs.widths = batchOutputs.widths;
      result.outputs.values.resize(batchOutputs.values.size());
      for (auto [p, width] : llvm::enumerate(batchOutputs.widths))
        result.outputs.values[p].reserve(result.instances * width);
    }
    for (auto [p, values] : llvm::enumerate(batchOutputs.values))
      llvm::append_range(result.outputs.values[p], values);
    result.outputs.hasLoss |= batchOutputs.hasLoss;
    result.outputs.loss += batchOutputs.loss;
    result.residentAfterBatch.push_back(residentBytes());
    result.sampleAnonymous();
    if (failed(runner.timedPasses(plans, options.repeat, loc)))
      return failure();
    firstInstance += read;
    return success();
  };

  if (planner_) {
    result.frontEnd = "records";
    if (llvm::Error e = planner_->rewind()) {
      (void)fallBackToImporter(std::move(e));
      return failure();
    }
    // One batch read and planned, with what planning added to a result of
    // its own, so that it can be made on the planning thread while the
    // previous batch runs.
    struct PlannedBatch {
      bool more = false;
      std::string error; // the planner's refusal, if any
      std::vector<rt::Plan> plans;
      uint64_t held = 0;
      RunResult counts;
    };
    auto planNext = [&](PlannedBatch &out) {
      out = PlannedBatch();
      auto t0 = std::chrono::steady_clock::now();
      llvm::Expected<bool> more = planner_->readNext(perBatch);
      out.counts.readSeconds = secondsSince(t0);
      out.counts.parseSeconds = planner_->indexSeconds();
      if (!more) {
        out.error = llvm::toString(more.takeError());
        return;
      }
      out.more = *more;
      if (!out.more)
        return;
      out.held = planner_->instancesHeld();
      llvm::Expected<std::vector<rt::Plan>> plans =
          planner_->plan(options.strategy, out.counts);
      if (!plans) {
        out.error = llvm::toString(plans.takeError());
        return;
      }
      out.plans = std::move(*plans);
    };
    // A run for its outputs may plan the next batch while this one runs:
    // the planner (node records, no MLIR of this session) and the executor
    // share nothing. Whether it pays is measured on the batches after the
    // first (which pays for JIT). With every hardware thread running, the
    // executor gives one up, which costs a run at most threads/(threads-1)
    // of its time, so overlap wins when planning a batch takes longer than
    // 1/(threads-1) of running it. Small models gain: on SST trees at
    // hdim 8 (`sst2dynb --hdim 8`), the run column of `dynbc run F --seed 7
    // --batch-size 64 --repeat 3` is within a few percent for `--threads 1`
    // and `--threads 2`, while planning takes about twice as long as the
    // run. Large ones keep every thread. The report's `planning_overlapped`
    // says which was chosen. Timed passes, profiles and checked streams
    // stay sequential, so run-only figures have the machine to themselves.
    unsigned hardwareThreads =
        std::max(1u, std::thread::hardware_concurrency());
    unsigned runThreads = options.threads ? options.threads : hardwareThreads;
    bool mayOverlap = options.repeat == 0 && !options.profile &&
                      !(options.check && stream_) && hardwareThreads > 1;
    bool overlap = false;
    constexpr uint64_t kProbeBatches = 16;
    double fastestPlan = HUGE_VAL, fastestRun = HUGE_VAL;
    std::optional<llvm::StdThreadPool> planningThread;
    PlannedBatch current, next;
    std::shared_future<void> nextReady;
    auto planWall = std::chrono::steady_clock::now();
    planNext(current);
    double planSeconds = secondsSince(planWall);
    for (uint64_t batch = 0;; ++batch) {
      result.readSeconds += current.counts.readSeconds;
      result.parseSeconds = current.counts.parseSeconds;
      if (!current.error.empty()) {
        (void)fallBackToImporter(makeError(current.error));
        return failure();
      }
      if (!current.more)
        break;
      addPlanCounts(result, current.counts);
      std::optional<StackedOutputs> reference;
      // A whole-input run's check is its caller's (runReference).
      if (options.check && stream_ && failed(referenceOfNext(reference)))
        return failure();
      for (const rt::Plan &plan : current.plans)
        result.peakLiveBytes =
            std::max(result.peakLiveBytes, rt::peakLiveBytes(plan));
      if (overlap)
        nextReady = planningThread->async([&] { planNext(next); });
      auto runWall = std::chrono::steady_clock::now();
      LogicalResult ran = runBatch(current.plans, batch, current.held,
                                   reference, module_->getLoc());
      double runSeconds = secondsSince(runWall);
      if (overlap)
        nextReady.wait();
      if (failed(ran))
        return failure();
      if (overlap) {
        current = std::move(next);
        continue;
      }
      if (mayOverlap && batch >= 1 && batch <= kProbeBatches) {
        // The least of each over the probed batches: early runs are slow
        // with first touches of the arena and the outputs.
        fastestPlan = std::min(fastestPlan, planSeconds);
        fastestRun = std::min(fastestRun, runSeconds);
      }
      if (mayOverlap && batch == kProbeBatches) {
        if (runThreads < hardwareThreads) {
          overlap = true;
        } else if (runThreads > 1 &&
                   fastestPlan > fastestRun / (runThreads - 1)) {
          runner.useThreads(runThreads - 1);
          overlap = true;
        }
        if (overlap)
          planningThread.emplace(llvm::hardware_concurrency(1));
        result.planningOverlapped = overlap;
      }
      planWall = std::chrono::steady_clock::now();
      planNext(current);
      planSeconds = secondsSince(planWall);
    }
  } else {
    for (uint64_t batch = 0;; ++batch) {
      BatchContext context = newBatchContext(*ctx_, diagnostics_);
      auto t0 = std::chrono::steady_clock::now();
      FailureOr<OwningOpRef<ModuleOp>> module =
          stream_->next(*context.ctx, perBatch);
      result.readSeconds += secondsSince(t0);
      if (failed(module))
        return failure();
      if (!*module)
        break;
      ModuleOp batchModule = **module;
      uint64_t read = llvm::range_size(batchModule.getOps<InstanceOp>());
      std::optional<StackedOutputs> reference;
      if (options.check) {
        t0 = std::chrono::steady_clock::now();
        FailureOr<StackedOutputs> ref = referenceOf(batchModule);
        if (failed(ref))
          return failure();
        result.referenceSeconds += secondsSince(t0);
        reference = std::move(*ref);
      }
      FailureOr<std::vector<rt::Plan>> plans =
          buildPlans(batchModule, options, result);
      if (failed(plans) || failed(runBatch(*plans, batch, read, reference,
                                           batchModule.getLoc())))
        return failure();
    }
  }
  result.paramBytes = int64_t(parameterBytes());
  for (const std::vector<float> &v : result.outputs.values)
    result.outputBytes += int64_t(v.size() * sizeof(float));
  return result;
}
