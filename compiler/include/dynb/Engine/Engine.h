//===- Engine.h - The embedded JIT: load a model, run batches ---*- C++ -*-===//
//
// The public entry point of dynb's embedded API (docs/api.md). An Engine
// loads a model once (modules from `.mlir` or the JSON interchange,
// parameters from safetensors or a seed), lowers and JIT-compiles each
// module once, and then runs Batches that applications build per request.
// Running a batch schedules its nodes with the same batching library as
// the `dynb-batch` pass and assembles the plan with the same PlanAssembler
// as `dynbc`, without building MLIR (only a per-instance op of a new shape
// compiles a kernel). No MLIR header is needed to use it.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_ENGINE_ENGINE_H
#define DYNB_ENGINE_ENGINE_H

#include "dynb/Batching/Scheduler.h"
#include "dynb/Engine/Batch.h"
#include "dynb/Engine/ModelBuilder.h"
#include "dynb/Engine/Results.h"
#include "dynb/JIT/KernelObjectStore.h"
#include "dynb/Runtime/ParameterStore.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace dynb {

namespace detail {
struct EngineModel;
}

struct EngineOptions {
  /// The model: `.mlir`, `.json` or `.jsonl` (docs/interchange.md). Its
  /// `dynb.param`s and modules are loaded; instances in it are ignored.
  std::string modelPath;
  /// Or the model as interchange JSON in memory (used when not empty; a
  /// model built in C++ comes this way); modelPath then only names it in
  /// messages.
  std::string modelJson;
  /// Or a model built in C++ (ModelBuilder.h), used when set; its name
  /// names it in messages.
  std::shared_ptr<const ModelBuilder> model;
  /// Parameters (safetensors, F32, checked against the model); empty: every
  /// parameter is seeded from `seed` as `dynbc run --seed` does.
  std::string paramsPath;
  uint64_t seed = 1;
  /// The default strategy of run().
  BatchingStrategy strategy = BatchingStrategy::Agenda;
  /// Runtime threads (kernels, gathers and oneDNN); 0: OpenMP's default.
  unsigned threads = 0;
  /// Check each plan against its buffers and the parameters before running
  /// it (cheap; off only for measuring the fast path's floor).
  bool validatePlans = true;
  /// Load the model and compile its modules, but no parameters and no
  /// executor: for a caller that runs the plans itself (dynbc's reader of
  /// interchange files); run() then fails.
  bool planOnly = false;
  /// Compiled modules persist on disk (by default in the user's cache
  /// directory) so that a later process loads them instead of compiling.
  KernelCacheOptions kernelCache;
};

/// The gradient of a batch's summed loss (Engine::gradient).
struct Gradients {
  /// The sum of every loss node of the batch's instances.
  double loss = 0;
  /// One F32 tensor per parameter of the model, of its shape, under its
  /// name (zeros where no loss depends on it).
  rt::ParameterStore values;
  /// Launches of the forward and backward nodes, and their lower bound.
  uint64_t launches = 0, lowerBound = 0;
};

/// What the engine compiled and how long that took.
struct EngineStats {
  unsigned modulesCompiled = 0; // at load, by the JIT
  unsigned modulesLoaded = 0;   // at load, from the persistent kernel cache
  unsigned opKernelsCompiled = 0;
  double jitSeconds = 0;
};

/// Thread-safe: any number of threads may build their own Batches and call
/// run() concurrently; only the execution of plans is serialised (one
/// arena, and oneDNN and the kernels already use every core).
class Engine {
public:
  /// Loads the model and parameters and compiles every module. Errors are
  /// the located messages `dynbc` prints (file:line:col, instance, node).
  static llvm::Expected<std::unique_ptr<Engine>>
  load(const EngineOptions &options);
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  /// Resolves a module or parameter by name once, so that building a
  /// graph never looks names up.
  llvm::Expected<Module> module(llvm::StringRef name) const;
  llvm::Expected<Param> param(llvm::StringRef name) const;
  /// An expert module (one marked with `experts`), for Instance::dispatch.
  llvm::Expected<Experts> experts(llvm::StringRef name) const;

  /// Runs every instance of `batch` with the engine's default strategy (or
  /// `strategy`) and returns their outputs. The batch is emptied either
  /// way, and its Values become stale. Fails, without running anything, on
  /// the first misuse recorded while the batch was built.
  llvm::Expected<Results> run(Batch &batch);
  llvm::Expected<Results> run(Batch &batch, BatchingStrategy strategy);

  /// The gradient of the sum of every loss node (Instance::softmaxXent)
  /// of `batch`'s instances with respect to every parameter: the batched
  /// backward pass of `dynbc grad` (docs/training.md), the instances'
  /// backward nodes batched with their forward ones by the engine's
  /// default strategy (or `strategy`). Discarded instances take no part.
  /// The batch is emptied either way. It goes through MLIR (dynb-grad,
  /// dynb-backward, dynb-batch), so it costs more a node than run().
  llvm::Expected<Gradients> gradient(Batch &batch);
  llvm::Expected<Gradients> gradient(Batch &batch, BatchingStrategy strategy);
  /// The parameters every run reads, for an optimizer step between batches
  /// (rt::Optimizer::step(parameters(), gradients.values)); not while
  /// another thread runs a batch.
  rt::ParameterStore &parameters();

  EngineStats stats() const;
  const EngineOptions &options() const;

  /// For Batch: the loaded model's tables.
  detail::EngineModel &model() { return *model_; }

private:
  Engine();
  std::unique_ptr<detail::EngineModel> model_;
};

} // namespace dynb

#endif // DYNB_ENGINE_ENGINE_H
