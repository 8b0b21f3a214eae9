//===- Commands.h - What dynbc's subcommands do, as library calls -*- C++
//-*-===//
//
// `dynbc compile`, `stats`, `run` and `grad` as functions over a loaded Session
// and a plain options struct, so that the tool's main only parses its command
// line and calls one of them. Each returns the process exit status and has
// printed what went wrong (located diagnostics, or one `dynbc: error:`
// line) when it is not 0.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_COMMANDS_H
#define DYNB_DRIVER_COMMANDS_H

#include "dynb/Driver/Session.h"
#include "dynb/JIT/GpuKernelCompiler.h"
#include "dynb/Runtime/Optimizer.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace dynb {

/// Prints `dynbc: error: MSG` (after flushing the table printed so far) and
/// returns 1, the exit status of a failed command.
int commandError(const llvm::Twine &msg);

/// grad's and train's --strategy: a batching strategy, or none for
/// "reference" (the reference gradient); the error names `command`.
llvm::Expected<std::optional<BatchingStrategy>>
parseGradientStrategy(llvm::StringRef name, llvm::StringRef command);

/// The stages `dynbc compile --emit` prints (docs/emit-stages.md).
enum class EmitStage { Dynb, Batched, Linalg, LLVM, Gpu, Ptx };

struct CompileCommandOptions {
  /// One strategy name (default: agenda).
  std::vector<std::string> strategies;
  int64_t batchSize = 0;
  EmitStage emit = EmitStage::Batched;
  GpuTarget gpu;
  /// "-": stdout.
  std::string outputPath = "-";
};

struct StatsCommandOptions {
  /// Strategy names, a list or "all" (default: agenda).
  std::vector<std::string> strategies;
  int64_t batchSize = 0;
  /// Where the first batch's schedule under the first strategy goes as
  /// Graphviz DOT (empty: none).
  std::string dotPath;
};

enum class RunDevice { Cpu, Cuda };

/// Resident memory with the libraries loaded and nothing read yet, and once
/// the graphs are read: the base the benchmarks' memory floor is set on.
struct MemoryBaseline {
  int64_t residentAtStart = 0, residentAfterLoad = 0, anonymousAtStart = 0;
};

struct RunCommandOptions {
  /// Names the input in the table's first line and in the report.
  std::string inputPath;
  std::vector<std::string> strategies;
  int64_t batchSize = 0;
  /// Exactly one of the two.
  std::optional<std::string> paramsPath;
  std::optional<uint64_t> seed;
  /// Read after the parameters, replacing tensors of the same name.
  std::string featuresPath;
  bool check = false;
  bool checkFinite = false;
  double atol = 1e-4, rtol = 1e-3;
  /// .npy of the first strategy's outputs; empty: none.
  std::string npyPath;
  unsigned repeat = 1;
  unsigned threads = 0;
  bool profile = false;
  RunDevice device = RunDevice::Cpu;
  /// The figures as JSON; empty: none.
  std::string reportPath;
  MemoryBaseline memory;
};

struct GradCommandOptions {
  /// Names the input in messages.
  std::string inputPath;
  /// Exactly one of the two.
  std::optional<std::string> paramsPath;
  std::optional<uint64_t> seed;
  /// The gradients, one F32 tensor per parameter under its own name.
  std::string outputPath;
  /// A batching strategy (the batched backward pass), or "reference": the
  /// reference gradient, in double, one instance at a time.
  std::string strategy = "agenda";
  /// Instances per batch (0: all in one).
  int64_t batchSize = 0;
  /// Runtime threads (0: every hardware thread).
  unsigned threads = 0;
};

struct TrainCommandOptions {
  /// Name the inputs in messages.
  std::string inputPath;
  /// Dev instances, read through `devInput` (empty path: none).
  std::string devPath;
  /// Exactly one of the three: a checkpoint to resume resumes its
  /// parameters, its optimizer state and its epoch count.
  std::optional<std::string> paramsPath;
  std::optional<uint64_t> seed;
  std::optional<std::string> resumePath;
  /// Epochs in all, those of a resumed checkpoint included.
  int64_t epochs = 1;
  /// Instances per optimizer step (0: all of them).
  int64_t batchSize = 64;
  /// How each step's gradient is computed: a batching strategy (the
  /// batched backward pass) or "reference".
  std::string strategy = "agenda";
  /// Runtime threads (0: every hardware thread).
  unsigned threads = 0;
  /// The order of the instances is shuffled before each epoch from this
  /// seed (and the epoch's number).
  uint64_t shuffleSeed = 1;
  rt::OptimizerOptions optimizer;
  /// Where the parameters go after every epoch (required).
  std::string savePath;
  /// Every epoch's figures as JSON; empty: none.
  std::string reportPath;
};

/// How a command's input is read.
struct InputOptions {
  std::string path;
  /// `run` may read interchange files straight into node records (the
  /// record front end); otherwise, and for every other input, the MLIR
  /// importer reads it.
  bool recordFrontEnd = false;
  /// Read one batch at a time (Session::openStream).
  bool stream = false;
  SessionLimits limits;
  KernelCacheOptions kernelCache;
};

/// Applies the limits and the kernel cache to `session` and reads the
/// input: through the record front end where it can, else the importer.
/// Diagnostics are printed; fails when the input cannot be read.
mlir::LogicalResult openInput(Session &session, const InputOptions &options);

int runCompileCommand(Session &session, const CompileCommandOptions &options);
int runStatsCommand(Session &session, const StatsCommandOptions &options);
/// Writes `text` to `path` ("-": stdout) through a temporary file and a
/// rename; 0, or the error printed and 1.
int writeText(llvm::StringRef path, const std::string &text);
int runRunCommand(Session &session, const RunCommandOptions &options);
/// The gradient of the sum of every loss node with respect to every
/// parameter (docs/training.md).
int runGradCommand(Session &session, const GradCommandOptions &options);
/// Epochs of optimizer steps on the loss of `session`'s instances, the dev
/// loss and accuracy after each, the parameters saved after each
/// (docs/training.md). `dev` is read already when options.devPath is set.
int runTrainCommand(Session &session, Session *dev,
                    const TrainCommandOptions &options);

} // namespace dynb

#endif // DYNB_DRIVER_COMMANDS_H
