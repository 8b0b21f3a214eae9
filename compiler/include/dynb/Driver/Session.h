//===- Session.h - Load, batch, compile, run and check: one place -*- C++
//-*-===//
//
// What `dynbc` does, as a library the tests and benchmarks call too: load a
// model and a batch of instances, load or seed the parameters, batch with a
// strategy, build plans (JIT-compiling new modules), run them, and compare
// with the reference interpreter.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_SESSION_H
#define DYNB_DRIVER_SESSION_H

#include "dynb/Batching/Scheduler.h"
#include "dynb/Driver/Outputs.h"
#include "dynb/Import/ClevrImporter.h"
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
  /// also produces the outputs.
  unsigned repeat = 1;
  /// Runtime threads; 0: every hardware thread.
  unsigned threads = 0;
  /// Time the runtime's steps by kind during the timed passes.
  bool profile = false;
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
};

struct RunResult {
  BatchingStrategy strategy;
  uint64_t instances = 0, nodes = 0, batches = 0;
  uint64_t launches = 0, lowerBound = 0;
  PlanStats plan;
  double scheduleSeconds = 0; // the batching pass
  double planSeconds = 0;     // building plans, JIT excluded
  double jitSeconds = 0;      // lowering + JIT of modules new to the cache
  unsigned modulesCompiled = 0;
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
  StackedOutputs outputs;

  double medianPassSeconds() const;
};

/// What a session refuses before allocating: defaults fit a 24 GiB machine.
struct SessionLimits {
  /// Nodes in the input (0: no limit).
  uint64_t maxNodes = 20'000'000;
  /// Parameters plus the largest batch's arena, bytes (0: no limit).
  uint64_t maxMemoryBytes = uint64_t(16) << 30;
};

class Session {
public:
  /// Diagnostics (located, as dynbc prints them) go to `diagnostics`.
  explicit Session(llvm::raw_ostream &diagnostics = llvm::errs());
  ~Session();

  mlir::MLIRContext &context() { return *ctx_; }
  /// The loaded (unbatched) model and instances.
  mlir::ModuleOp module() { return *module_; }
  const rt::ParameterStore &params() const { return params_; }
  KernelCache &kernels() { return *kernels_; }

  /// Reads graphs (see importGraphFile); diagnostics go to stderr.
  mlir::LogicalResult loadGraphs(llvm::StringRef path);
  /// The same from interchange JSON in memory; `name` is used in locations.
  mlir::LogicalResult loadJsonGraphs(llvm::StringRef name,
                                     llvm::StringRef text);
  /// Reads parameters and checks them against the model's dynb.param ops.
  llvm::Error loadParams(llvm::StringRef path);
  /// Reads more tensors (e.g. CLEVR image features), replacing those of
  /// the same name, and checks the whole set against the model again.
  llvm::Error loadMoreParams(llvm::StringRef path);
  /// Seeds every parameter of the model (deterministic); fails when they
  /// would exceed the memory limit.
  llvm::Error seedParams(uint64_t seed);
  void setLimits(const SessionLimits &limits) { limits_ = limits; }
  /// The IEP model's sizes for CLEVR question files (see ClevrImporter.h).
  void setClevrConfig(const ClevrModelConfig &config) { clevr_ = config; }
  const SessionLimits &limits() const { return limits_; }

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

private:
  llvm::Error checkParams();
  /// What the runtime path needs of a loaded module beyond the verifier.
  mlir::LogicalResult checkLoaded();

  std::unique_ptr<mlir::MLIRContext> ctx_;
  llvm::SourceMgr sourceMgr_;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagHandler_;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> jsonDiagHandler_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  rt::ParameterStore params_;
  std::unique_ptr<KernelCache> kernels_;
  SessionLimits limits_;
  ClevrModelConfig clevr_;
};

/// Peak resident memory of this process, bytes (0 where unknown).
int64_t peakResidentBytes();
/// Current resident memory of this process, bytes (0 where unknown).
int64_t residentBytes();

} // namespace dynb

#endif // DYNB_DRIVER_SESSION_H
