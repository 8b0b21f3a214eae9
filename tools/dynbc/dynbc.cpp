//===- dynbc.cpp - The dynb compiler command line -------------------------===//
//
// Thin on purpose: the command line is parsed here, and each subcommand is
// one call into the driver library (dynb/Driver/Commands.h), which the
// tests and benchmarks call too.
//
//===----------------------------------------------------------------------===//
#include "dynb/Driver/Commands.h"
#include "dynb/Driver/MemoryProbes.h"
#include "dynb/Driver/StrategyList.h"
#include "dynb/Engine/Version.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace dynb;
namespace cl = llvm::cl;

static cl::SubCommand
    compileCmd("compile",
               "Compile instance graphs and print one stage (--emit)");
static cl::SubCommand
    runCmd("run",
           "Compile and run instance graphs; optionally check and save them");
static cl::SubCommand
    gradCmd("grad", "Write the gradient of the instances' summed loss with "
                    "respect to every parameter");
static cl::SubCommand
    trainCmd("train", "Train the parameters on the instances' loss: epochs "
                      "of optimizer steps, dev loss and accuracy, a "
                      "checkpoint after each epoch");
static cl::SubCommand
    statsCmd("stats",
             "Print instances, nodes, signatures, launches and lower bounds");

static cl::OptionCategory dynbCat("dynb options");

static cl::opt<std::string>
    inputPath(cl::Positional, cl::Required,
              cl::desc("<graphs: .mlir | .json | .jsonl>"), cl::sub(compileCmd),
              cl::sub(runCmd), cl::sub(statsCmd), cl::sub(gradCmd),
              cl::sub(trainCmd), cl::cat(dynbCat));

static cl::list<std::string> strategies(
    "strategy", cl::CommaSeparated,
    cl::desc("Batching strategy: none | depth | agenda; run and stats also "
             "take a comma-separated list or 'all'; grad and train also "
             "'reference' (the reference gradient, one instance at a time, "
             "in double) (default: agenda)"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(statsCmd), cl::sub(gradCmd),
    cl::sub(trainCmd), cl::cat(dynbCat));

static cl::opt<int64_t> batchSize(
    "batch-size",
    cl::desc("Instances per batch, run as consecutive batches (default 0: "
             "all instances in one batch)"),
    cl::init(0), cl::sub(compileCmd), cl::sub(runCmd), cl::sub(statsCmd),
    cl::sub(gradCmd), cl::cat(dynbCat));

static cl::opt<EmitStage> emit(
    "emit", cl::desc("The stage to print"), cl::init(EmitStage::Batched),
    cl::values(clEnumValN(EmitStage::Dynb, "dynb",
                          "the imported graphs (dynb dialect)"),
               clEnumValN(EmitStage::Batched, "batched",
                          "after dynb-batch: the schedule of batched launches"),
               clEnumValN(EmitStage::Linalg, "linalg",
                          "each launched module as GEMM steps and fused linalg "
                          "kernels, batch size a runtime dimension"),
               clEnumValN(EmitStage::LLVM, "llvm",
                          "the kernels as optimised LLVM IR for this machine"),
               clEnumValN(EmitStage::Gpu, "gpu",
                          "the kernels as GPU launches and outlined "
                          "gpu.module kernels (gpu dialect)"),
               clEnumValN(EmitStage::Ptx, "ptx",
                          "the kernels as PTX for --gpu-chip, one module a "
                          "launch")),
    cl::sub(compileCmd), cl::cat(dynbCat));

static cl::opt<std::string>
    gpuChip("gpu-chip",
            cl::desc("NVPTX chip of --emit=ptx (default sm_90; sm_75 for PTX "
                     "any GPU from Turing on runs)"),
            cl::init(GpuTarget().chip), cl::sub(compileCmd), cl::cat(dynbCat));
static cl::opt<std::string> gpuFeatures(
    "gpu-features",
    cl::desc("NVPTX features of --emit=ptx: the PTX ISA version (default "
             "+ptx80)"),
    cl::init(GpuTarget().features), cl::sub(compileCmd), cl::cat(dynbCat));

static cl::opt<std::string>
    outputPath("o",
               cl::desc("Output file: compile's stage (default: stdout); "
                        "grad's gradients as safetensors (required)"),
               cl::value_desc("file"), cl::init("-"), cl::sub(compileCmd),
               cl::sub(gradCmd), cl::cat(dynbCat));

static cl::opt<std::string>
    paramsPath("params",
               cl::desc("Parameters from a safetensors file (F32 tensors "
                        "named as the model's dynb.param ops)"),
               cl::value_desc("file.safetensors"), cl::sub(runCmd),
               cl::sub(gradCmd), cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<uint64_t>
    seed("seed", cl::desc("Initialise every parameter from this seed instead"),
         cl::sub(runCmd), cl::sub(gradCmd), cl::sub(trainCmd),
         cl::cat(dynbCat));
static cl::opt<bool>
    check("check",
          cl::desc("Also run the reference interpreter; report the max abs/rel "
                   "error and fail above the tolerance"),
          cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<bool> checkFinite(
    "check-finite",
    cl::desc("Refuse parameters holding NaN or Inf (before running) and "
             "outputs holding them (after each strategy); names the tensor "
             "and element, or the instance and output"),
    cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<double> absTolerance("atol",
                                    cl::desc("Absolute tolerance of --check"),
                                    cl::init(1e-4), cl::sub(runCmd),
                                    cl::cat(dynbCat));
static cl::opt<double> relTolerance("rtol",
                                    cl::desc("Relative tolerance of --check"),
                                    cl::init(1e-3), cl::sub(runCmd),
                                    cl::cat(dynbCat));
static cl::opt<std::string> dotPath(
    "dot",
    cl::desc("Also write the first batch's schedule under the first "
             "strategy as Graphviz DOT: a node per op in a box per "
             "instance, labelled and coloured by its launch, an edge per "
             "dependency"),
    cl::value_desc("file.dot"), cl::sub(statsCmd), cl::cat(dynbCat));
static cl::opt<std::string> npyPath(
    "output",
    cl::desc("Write the outputs of the first strategy as .npy: one row an "
             "instance, in instance order (several outputs an instance are "
             "concatenated along the row); written atomically"),
    cl::value_desc("file.npy"), cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<unsigned>
    repeat("repeat",
           cl::desc("Timed passes over all batches after the warm-up pass "
                    "(which produces the outputs); 0: the warm-up pass "
                    "alone, timed (the least work a run for the outputs "
                    "does)"),
           cl::init(1), cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<unsigned>
    threads("threads",
            cl::desc("Runtime threads (default 0: all hardware threads)"),
            cl::init(0), cl::sub(runCmd), cl::sub(gradCmd), cl::sub(trainCmd),
            cl::cat(dynbCat));
static cl::opt<bool> profileSteps(
    "profile",
    cl::desc("Time the runtime's steps by kind (gather, GEMM, kernel, "
             "feature map, dispatch; a dispatch's gate, experts and "
             "combine) and print where each strategy's run time goes"),
    cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<RunDevice> device(
    "device", cl::desc("Where plans run (default cpu)"),
    cl::init(RunDevice::Cpu),
    cl::values(clEnumValN(RunDevice::Cpu, "cpu", "this machine's cores"),
               clEnumValN(RunDevice::Cuda, "cuda",
                          "an NVIDIA GPU through the CUDA driver (not yet "
                          "able to run plans; see docs/gpu.md)")),
    cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<bool> streamInput(
    "stream",
    cl::desc("Read a JSON Lines input one batch at a time: read, batch, "
             "plan and run each --batch-size instances, then let go of them "
             "(memory holds one batch's graphs and plan, and the outputs; "
             "timed passes repeat each batch's plan in place; --check "
             "compares batch by batch)"),
    cl::sub(runCmd), cl::cat(dynbCat));
/// How `run` reads its input.
enum class FrontEnd { Auto, Mlir };
static cl::opt<FrontEnd> frontEnd(
    "front-end", cl::desc("How instances are read and planned"),
    cl::init(FrontEnd::Auto),
    cl::values(
        clEnumValN(FrontEnd::Auto, "auto",
                   "interchange files (.json, .jsonl) straight into node "
                   "records, planned without MLIR; other inputs, and models "
                   "with expert modules or feature maps, through the "
                   "importer (the default)"),
        clEnumValN(FrontEnd::Mlir, "mlir",
                   "every input through the MLIR importer and the dynb-batch "
                   "pass (the same plans, at several microseconds a node)")),
    cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<std::string>
    reportPath("report",
               cl::desc("Also write the figures as JSON to this file"),
               cl::value_desc("file.json"), cl::sub(runCmd), cl::cat(dynbCat));

static cl::opt<std::string> featuresPath(
    "features",
    cl::desc("Also read these tensors after --params or --seed, replacing "
             "those of the same name (CLEVR: the image features, 'features' "
             "[images, C, H, W], as examples/clevr/clevrgen.py writes them)"),
    cl::value_desc("file.safetensors"), cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<int64_t> clevrModuleDim(
    "module-dim",
    cl::desc("CLEVR question files: the IEP module dimension (default 128; "
             "the classifier's projection is 4x and its hidden layer 8x it)"),
    cl::init(ClevrModelConfig().moduleDim), cl::sub(compileCmd),
    cl::sub(runCmd), cl::sub(statsCmd), cl::cat(dynbCat));
static cl::opt<int64_t> clevrFeatureDim(
    "feature-dim",
    cl::desc("CLEVR question files: image feature channels (default 1024)"),
    cl::init(ClevrModelConfig().featureChannels), cl::sub(compileCmd),
    cl::sub(runCmd), cl::sub(statsCmd), cl::cat(dynbCat));
static cl::opt<int64_t> clevrMapSize(
    "map-size",
    cl::desc("CLEVR question files: feature map height and width (default "
             "14)"),
    cl::init(ClevrModelConfig().mapSize), cl::sub(compileCmd), cl::sub(runCmd),
    cl::sub(statsCmd), cl::cat(dynbCat));

static cl::opt<bool> clevrModulesOnly(
    "modules-only",
    cl::desc("CLEVR question files: the program modules alone, from a "
             "parameter 'stem_out' to each root's map (no stem, no "
             "classifier), to time them"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(statsCmd), cl::cat(dynbCat));

static cl::opt<uint64_t>
    maxNodes("max-nodes",
             cl::desc("Refuse inputs with more nodes than this (0: no limit)"),
             cl::init(SessionLimits().maxNodes), cl::sub(compileCmd),
             cl::sub(runCmd), cl::sub(statsCmd), cl::sub(gradCmd),
             cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<uint64_t> maxModuleOps(
    "max-module-ops",
    cl::desc("Refuse modules of more nodes than this: a module is compiled "
             "as one kernel, whose compile time grows faster than its size "
             "(0: no limit)"),
    cl::init(SessionLimits().maxModuleOps), cl::sub(compileCmd),
    cl::sub(runCmd), cl::sub(statsCmd), cl::sub(gradCmd), cl::sub(trainCmd),
    cl::cat(dynbCat));
static cl::opt<uint64_t>
    maxOpInputs("max-op-inputs",
                cl::desc("Refuse nodes with more inputs than this (a concat of "
                         "thousands compiles for minutes; 0: no limit)"),
                cl::init(SessionLimits().maxOpInputs), cl::sub(compileCmd),
                cl::sub(runCmd), cl::sub(statsCmd), cl::sub(gradCmd),
                cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<std::string>
    cacheDir("cache-dir",
             cl::desc("Where compiled modules persist between runs (default: "
                      "$DYNB_CACHE_DIR, else the user's cache directory's "
                      "dynb/kernels)"),
             cl::value_desc("dir"), cl::sub(runCmd), cl::sub(gradCmd),
             cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<bool>
    noCache("no-cache",
            cl::desc("Compile every module, neither loading nor storing "
                     "compiled modules on disk"),
            cl::sub(runCmd), cl::sub(gradCmd), cl::sub(trainCmd),
            cl::cat(dynbCat));

static cl::opt<std::string> maxMemory(
    "max-memory",
    cl::desc("Refuse to run when parameters plus the largest batch's buffers "
             "need more than this many bytes; K, M, G suffixes (default 16G; "
             "0: no limit)"),
    cl::init("16G"), cl::sub(runCmd), cl::cat(dynbCat));

static cl::opt<std::string>
    devPath("dev",
            cl::desc("train: dev instances (with loss nodes) whose loss and "
                     "accuracy are measured after every epoch"),
            cl::value_desc("graphs"), cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<int64_t> epochs("epochs", cl::desc("train: epochs (default 1)"),
                               cl::init(1), cl::sub(trainCmd),
                               cl::cat(dynbCat));
static cl::opt<int64_t> trainBatchSize(
    "batch-size",
    cl::desc("train: instances per optimizer step (default 64; 0: all)"),
    cl::init(64), cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<rt::OptimizerOptions::Kind> optimizerKind(
    "optimizer", cl::desc("train: the optimizer (default adam)"),
    cl::init(rt::OptimizerOptions::Kind::Adam),
    cl::values(clEnumValN(rt::OptimizerOptions::Kind::Adam, "adam",
                          "Adam, beta1 0.9, beta2 0.999, epsilon 1e-8"),
               clEnumValN(rt::OptimizerOptions::Kind::Sgd, "sgd",
                          "SGD, with --momentum")),
    cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<float>
    learningRate("lr",
                 cl::desc("train: learning rate (default: adam 0.001, sgd "
                          "0.1)"),
                 cl::init(0), cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<float> momentum("momentum",
                               cl::desc("train: SGD momentum (default 0)"),
                               cl::init(0), cl::sub(trainCmd),
                               cl::cat(dynbCat));
static cl::opt<float> clipNorm(
    "clip-norm",
    cl::desc("train: scale a step's gradients down to this global L2 norm "
             "when they exceed it (default 0: no clipping)"),
    cl::init(0), cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<bool> lazyRows(
    "lazy-rows",
    cl::desc("train: update only the rows a step's gradient touches (sparse "
             "embedding updates)"),
    cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<uint64_t> shuffleSeed(
    "shuffle-seed",
    cl::desc("train: the instances are shuffled before each epoch from "
             "this seed (default 1)"),
    cl::init(1), cl::sub(trainCmd), cl::cat(dynbCat));
static cl::opt<std::string>
    savePath("save",
             cl::desc("train: the parameters, written after every epoch "
                      "(required)"),
             cl::value_desc("file.safetensors"), cl::sub(trainCmd),
             cl::cat(dynbCat));
static cl::opt<std::string> resumePath(
    "resume",
    cl::desc("train: go on from a checkpoint that --save wrote: its "
             "parameters, optimizer state and epochs (--epochs counts them)"),
    cl::value_desc("checkpoint.safetensors"), cl::sub(trainCmd),
    cl::cat(dynbCat));
static cl::opt<std::string>
    trainReportPath("report", cl::desc("train: every epoch's figures as JSON"),
                    cl::value_desc("file.json"), cl::sub(trainCmd),
                    cl::cat(dynbCat));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(dynbCat);
  // dynb's own version first; LLVM's says which LLVM it was built against.
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "dynbc (dynb) " << versionString() << "\n  built with LLVM "
       << LLVM_VERSION_STRING << "\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "dynb: batch and compile dynamic neural network graphs\n\n"
      "  dynbc compile IN [-o OUT] "
      "[--emit=dynb|batched|linalg|llvm|gpu|ptx] [--strategy=S]\n"
      "  dynbc run IN (--params P.safetensors | --seed N) [--strategy=S,...] "
      "[--batch-size N] [--stream] [--check] [--output OUT.npy] "
      "[--device=cpu|cuda]\n"
      "  dynbc stats IN [--strategy=S,...] [--batch-size N] [--dot OUT.dot]\n"
      "  dynbc grad IN (--params P.safetensors | --seed N) [--strategy=S] "
      "[--batch-size N] -o GRADS.safetensors\n"
      "  dynbc train IN [--dev DEV] (--params P.safetensors | --seed N) "
      "[--resume CKPT] [--epochs E] [--optimizer adam|sgd] [--lr X] "
      "[--batch-size N] [--strategy=S] --save OUT.safetensors\n");
  if (!compileCmd && !runCmd && !statsCmd && !gradCmd && !trainCmd) {
    cl::PrintHelpMessage();
    return 1;
  }
  InputOptions input;
  input.path = inputPath;
  input.recordFrontEnd = runCmd && frontEnd == FrontEnd::Auto;
  input.stream = streamInput;
  input.limits.maxNodes = maxNodes;
  input.limits.maxModuleOps = maxModuleOps;
  input.limits.maxOpInputs = maxOpInputs;
  std::optional<uint64_t> memory = parseByteSize(maxMemory);
  if (!memory)
    return commandError("--max-memory: expected bytes with an optional K, M "
                        "or G suffix, got '" +
                        maxMemory + "'");
  input.limits.maxMemoryBytes = *memory;
  input.limits.memoryLimitName = "the --max-memory limit";
  input.kernelCache.persistent = !noCache;
  input.kernelCache.directory = cacheDir;
  Session session;
  ClevrModelConfig clevr;
  clevr.moduleDim = clevrModuleDim;
  clevr.projDim = 4 * clevrModuleDim;
  clevr.fcDim = 8 * clevrModuleDim;
  clevr.featureChannels = clevrFeatureDim;
  clevr.mapSize = clevrMapSize;
  clevr.modulesOnly = clevrModulesOnly;
  session.setClevrConfig(clevr);
  MemoryBaseline baseline;
  baseline.residentAtStart = residentBytes();
  baseline.anonymousAtStart = residentAnonymousBytes();
  if (failed(openInput(session, input)))
    return 1;
  baseline.residentAfterLoad = residentBytes();
  std::vector<std::string> names(strategies.begin(), strategies.end());
  if (compileCmd)
    return runCompileCommand(
        session, {names, batchSize, emit, {gpuChip, gpuFeatures}, outputPath});
  if (statsCmd)
    return runStatsCommand(session, {names, batchSize, dotPath});
  if (trainCmd) {
    TrainCommandOptions train;
    train.inputPath = inputPath;
    if (paramsPath.getNumOccurrences())
      train.paramsPath = paramsPath;
    if (seed.getNumOccurrences())
      train.seed = seed;
    if (resumePath.getNumOccurrences())
      train.resumePath = resumePath;
    train.devPath = devPath;
    train.epochs = epochs;
    train.batchSize = trainBatchSize;
    train.shuffleSeed = shuffleSeed;
    train.optimizer.kind = optimizerKind;
    train.optimizer.learningRate = learningRate;
    train.optimizer.momentum = momentum;
    train.optimizer.clipNorm = clipNorm;
    train.optimizer.lazyRows = lazyRows;
    train.savePath = savePath;
    if (names.size() > 1)
      return commandError("train takes one --strategy");
    if (!names.empty())
      train.strategy = names.front();
    train.threads = threads;
    train.reportPath = trainReportPath;
    std::optional<Session> dev;
    if (!devPath.empty()) {
      dev.emplace();
      InputOptions devInput = input;
      devInput.path = devPath;
      devInput.recordFrontEnd = false;
      devInput.stream = false;
      if (failed(openInput(*dev, devInput)))
        return 1;
    }
    return runTrainCommand(session, dev ? &*dev : nullptr, train);
  }
  if (gradCmd) {
    GradCommandOptions grad;
    grad.inputPath = inputPath;
    if (paramsPath.getNumOccurrences())
      grad.paramsPath = paramsPath;
    if (seed.getNumOccurrences())
      grad.seed = seed;
    grad.outputPath = outputPath;
    if (names.size() > 1)
      return commandError("grad takes one --strategy");
    if (!names.empty())
      grad.strategy = names.front();
    grad.batchSize = batchSize;
    grad.threads = threads;
    return runGradCommand(session, grad);
  }
  RunCommandOptions run;
  run.inputPath = inputPath;
  run.strategies = names;
  run.batchSize = batchSize;
  if (paramsPath.getNumOccurrences())
    run.paramsPath = paramsPath;
  if (seed.getNumOccurrences())
    run.seed = seed;
  run.featuresPath = featuresPath;
  run.check = check;
  run.checkFinite = checkFinite;
  run.atol = absTolerance;
  run.rtol = relTolerance;
  run.npyPath = npyPath;
  run.repeat = repeat;
  run.threads = threads;
  run.profile = profileSteps;
  run.device = device;
  run.reportPath = reportPath;
  run.memory = baseline;
  return runRunCommand(session, run);
}
