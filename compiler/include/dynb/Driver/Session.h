//===- Session.h - Batch, compile, run and check what was loaded -*- C++
//-*-===//
//
// What `dynbc` does after loading (ModelLoader.h), as a library the tests
// and benchmarks call too: batch with a strategy, build plans (JIT-compiling
// new modules), run them, stream JSON Lines batch by batch, and compare
// with the reference interpreter.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_SESSION_H
#define DYNB_DRIVER_SESSION_H

#include "dynb/Batching/Scheduler.h"
#include "dynb/Driver/ModelLoader.h"
#include "dynb/Driver/Outputs.h"
#include "dynb/Import/ClevrImporter.h"
#include "dynb/Import/GraphImporter.h"
#include "dynb/JIT/KernelCache.h"
#include "dynb/Lowering/PlanBuilder.h"
#include "dynb/Runtime/ParameterStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <vector>

namespace dynb {

struct RunOptions {
  BatchingStrategy strategy = BatchingStrategy::Agenda;
  /// Instances per batch; 0 runs every instance in one batch.
  int64_t batchSize = 0;
  /// Timed passes over every batch, after one untimed warm-up pass that
  /// also produces the outputs; 0: that pass alone, timed (what a run for
  /// the outputs costs, for whole-process figures).
  unsigned repeat = 1;
  /// Runtime threads; 0: every hardware thread.
  unsigned threads = 0;
  /// Time the runtime's steps by kind during the timed passes.
  bool profile = false;
  /// Streamed runs only (Session::openStream): run the reference on each
  /// batch and compare, with these tolerances, into RunResult::comparison
  /// (a streamed run keeps no instance for runReference afterwards).
  bool check = false;
  double atol = 0, rtol = 0;
};

/// Where the timed passes spent their time, by step kind (seconds summed
/// over the timed passes).
struct StepProfile {
  double gather = 0, gemm = 0, kernel = 0;
  uint64_t gemmFlops = 0;
  /// Map steps (convolutions, pooling, layout changes) and the flops of
  /// the convolutions among them (counted with or without profiling).
  double map = 0;
  uint64_t convFlops = 0;
  /// Dispatch steps, their gate and expert GEMMs included, and of that
  /// time the gate with the routing, the expert body (rows copied in and
  /// out included) and the combine (rt::ExecutorStats).
  double dispatch = 0;
  double dispatchGate = 0, dispatchExperts = 0, dispatchCombine = 0;
};

struct RunResult {
  BatchingStrategy strategy;
  uint64_t instances = 0, nodes = 0, batches = 0;
  uint64_t launches = 0, lowerBound = 0;
  PlanStats plan;
  double scheduleSeconds = 0; // the batching pass
  double planSeconds = 0;     // building plans, JIT excluded
  /// The front end's share before scheduling: reading the input into the
  /// batching graph (JSON parsing and node records with a BatchPlanner;
  /// the MLIR import otherwise, whole-input runs: loadGraphs' time).
  double readSeconds = 0;
  /// Of readSeconds, indexing the JSON text (a BatchPlanner's parse
  /// proper; the rest builds node records). 0 on the MLIR path, whose
  /// parse and IR building are not timed apart.
  double parseSeconds = 0;
  /// The front end that planned: "records" (a BatchPlanner) or "mlir".
  const char *frontEnd = "mlir";
  /// Whether the records front end planned each batch while the one before
  /// it ran (a run for its outputs, when that pays: Session.cpp).
  bool planningOverlapped = false;
  double jitSeconds = 0; // lowering + JIT of modules new to the cache
  unsigned modulesCompiled = 0;
  /// Modules loaded from the persistent kernel cache instead.
  unsigned modulesLoaded = 0;
  std::vector<double> passSeconds; // each timed pass over every batch
  int64_t arenaBytes = 0;          // the arena after the run
  StepProfile profile;             // with RunOptions::profile
  /// Dispatch steps (mixture of experts) over the timed passes: their
  /// GEMMs' flops and the parameter bytes those GEMMs read.
  uint64_t dispatchGemmFlops = 0, dispatchParamBytes = 0;
  /// Resident memory after each batch of the warm-up pass: flat once the
  /// arena has grown to the largest batch.
  std::vector<int64_t> residentAfterBatch;
  /// The memory floor's parts (bytes): the parameters, the most arena
  /// buffers one batch's schedule holds live at once (over every batch),
  /// and the outputs of every instance, which are kept to the end.
  int64_t paramBytes = 0, peakLiveBytes = 0, outputBytes = 0;
  /// Resident memory when the plans are built and before the executor
  /// allocates: the graphs, their schedules and plans, the JIT's code.
  int64_t residentAfterPlans = 0;
  /// The most anonymous (private: heap, arena, JIT code, not the libraries'
  /// file-backed pages) resident memory seen at the points where a run's
  /// memory is highest: once the plans are built and after each batch's
  /// first run. Linux keeps no peak of it, so it is sampled.
  int64_t peakAnonymousSampled = 0;
  void sampleAnonymous();
  StackedOutputs outputs;
  /// With RunOptions::check on a streamed run: every batch against the
  /// reference, and the reference's time.
  Comparison comparison;
  double referenceSeconds = 0;

  double medianPassSeconds() const;
};

/// Reads instances into compact node records and plans them without
/// building MLIR: dynbc's front end for interchange files
/// (dynb::InterchangeSource in the Engine library, docs/architecture.md).
/// When a Session has one, run() plans through it instead of through the
/// dynb-batch pass; the plans are those of the pass, step for step.
/// Failures print nothing: the Session then reads the input through the
/// MLIR importer, whose located diagnostic is the one users see.
class BatchPlanner {
public:
  virtual ~BatchPlanner();
  /// Instances in the input.
  virtual uint64_t numInstances() const = 0;
  /// Reads every instance at once, as batches of `batchSize` (0: one
  /// batch), all held: for callers that plan the whole input together
  /// (the plan equality tests, the fuzz target).
  virtual llvm::Error readAll(int64_t batchSize) = 0;
  /// What Session runs use, whole input or streamed: back to the first
  /// instance, then readNext() reads the next batch of up to `n`
  /// instances in place of the one held (false at the end of the input),
  /// so memory holds one batch's records, not the input's.
  virtual llvm::Error rewind() = 0;
  virtual llvm::Expected<bool> readNext(size_t n) = 0;
  /// Instances in the batches held now.
  virtual uint64_t instancesHeld() const = 0;
  /// Of the reading since readAll() or rewind(), the seconds spent
  /// indexing the JSON text (the parse proper); the rest of the read
  /// decodes values into node records. 0 where the two are not apart.
  virtual double indexSeconds() const { return 0; }
  /// Plans the batches held now with `strategy`, adding nodes, launches,
  /// the lower bound, plan statistics and times to `result` (a counter
  /// added here must be added to addPlanCounts in Session.cpp too: a run
  /// may plan into a result of its own on another thread). Called from one
  /// thread at a time, not always the same one.
  virtual llvm::Expected<std::vector<rt::Plan>> plan(BatchingStrategy strategy,
                                                     RunResult &result) = 0;
};

/// A ModelLoader that also batches, plans, runs and checks what it loaded.
class Session : public ModelLoader {
public:
  /// Diagnostics (located, as dynbc prints them) go to `diagnostics`.
  explicit Session(llvm::raw_ostream &diagnostics = llvm::errs());
  ~Session();

  /// Opens a JSON Lines file for streamed runs: only the model is read now;
  /// each run() reads, plans and runs one batch of instances at a time and
  /// lets go of it before the next, so memory holds one batch's graphs and
  /// plan (the timed passes repeat each batch's plan in place). Outputs
  /// are kept for every instance. module() then holds the model and the
  /// current batch; runReference() is not available (use
  /// RunOptions::check).
  mlir::LogicalResult openStream(llvm::StringRef path);
  bool streaming() const { return stream_ != nullptr; }
  /// Plans through `planner` instead of the dynb-batch pass. Load the
  /// model first: the model only (loadJsonGraphs of the model's text), or
  /// openStream for a streamed run.
  void setPlanner(std::unique_ptr<BatchPlanner> planner, llvm::StringRef path);
  bool hasPlanner() const { return planner_ != nullptr; }

  uint64_t numInstances();
  /// A copy of the loaded module batched by `dynb-batch`.
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
  batch(BatchingStrategy strategy, int64_t batchSize);
  /// Adds `dynb.schedule` ops to the loaded module itself, leaving its
  /// instances in place (no copy); the caller erases the schedules.
  mlir::FailureOr<llvm::SmallVector<ScheduleOp>>
  addSchedules(BatchingStrategy strategy, int64_t batchSize);

  mlir::FailureOr<RunResult> run(const RunOptions &options);
  mlir::FailureOr<StackedOutputs> runReference();

  /// Makes the plans of `module`'s instances (schedules added and erased
  /// again), adding their counts to `result`. The module shares this
  /// session's context and parameters (a copy of module(), transformed).
  mlir::FailureOr<std::vector<rt::Plan>> buildPlans(mlir::ModuleOp module,
                                                    const RunOptions &options,
                                                    RunResult &result);

private:
  mlir::FailureOr<RunResult> runStreamed(const RunOptions &options);
  mlir::FailureOr<llvm::SmallVector<ScheduleOp>>
  addSchedulesTo(mlir::ModuleOp module, BatchingStrategy strategy,
                 int64_t batchSize);
  mlir::FailureOr<StackedOutputs> referenceOf(mlir::ModuleOp module);
  /// The memory check made before the executor allocates.
  mlir::LogicalResult checkPlanMemory(const std::vector<rt::Plan> &plans,
                                      uint64_t firstBatch, mlir::Location loc);

  /// The planner failed: reads the input through the MLIR importer, whose
  /// diagnostic explains the failure. Succeeds (with a warning) only if the
  /// importer accepts the input, which then runs on the MLIR path.
  mlir::LogicalResult fallBackToImporter(llvm::Error why);

  std::unique_ptr<BatchPlanner> planner_;
  std::string plannerPath_;
  std::unique_ptr<JsonLinesStream> stream_;
};

} // namespace dynb

#endif // DYNB_DRIVER_SESSION_H
