//===- dynbc.cpp - The dynb compiler command line -------------------------===//
//
// Thin on purpose: every subcommand is a few calls into the Session and
// KernelCache libraries, which the tests and benchmarks call too.
//
//===----------------------------------------------------------------------===//
#include "dynb/Analysis/Signature.h"
#include "dynb/Driver/FiniteCheck.h"
#include "dynb/Driver/Session.h"
#include "dynb/Engine/InterchangeSource.h"
#include "dynb/JIT/GpuKernelCompiler.h"
#include "dynb/JIT/KernelCompiler.h"
#include "dynb/Runtime/CudaDriver.h"
#include "dynb/Runtime/NpyWriter.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <cstdlib>

using namespace mlir;
using namespace dynb;
namespace cl = llvm::cl;

static cl::SubCommand
    compileCmd("compile",
               "Compile instance graphs and print one stage (--emit)");
static cl::SubCommand
    runCmd("run",
           "Compile and run instance graphs; optionally check and save them");
static cl::SubCommand
    statsCmd("stats",
             "Print instances, nodes, signatures, launches and lower bounds");

static cl::OptionCategory dynbCat("dynb options");

static cl::opt<std::string>
    inputPath(cl::Positional, cl::Required,
              cl::desc("<graphs: .mlir | .json | .jsonl>"), cl::sub(compileCmd),
              cl::sub(runCmd), cl::sub(statsCmd), cl::cat(dynbCat));

static cl::list<std::string> strategies(
    "strategy", cl::CommaSeparated,
    cl::desc("Batching strategy: none | depth | agenda; run and stats also "
             "take a comma-separated list or 'all' (default: agenda)"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(statsCmd), cl::cat(dynbCat));

static cl::opt<int64_t> batchSize(
    "batch-size",
    cl::desc("Instances per batch, run as consecutive batches (default 0: "
             "all instances in one batch)"),
    cl::init(0), cl::sub(compileCmd), cl::sub(runCmd), cl::sub(statsCmd),
    cl::cat(dynbCat));

enum class Emit { Dynb, Batched, Linalg, LLVM, Gpu, Ptx };
static cl::opt<Emit> emit(
    "emit", cl::desc("The stage to print"), cl::init(Emit::Batched),
    cl::values(clEnumValN(Emit::Dynb, "dynb",
                          "the imported graphs (dynb dialect)"),
               clEnumValN(Emit::Batched, "batched",
                          "after dynb-batch: the schedule of batched launches"),
               clEnumValN(Emit::Linalg, "linalg",
                          "each launched module as GEMM steps and fused linalg "
                          "kernels, batch size a runtime dimension"),
               clEnumValN(Emit::LLVM, "llvm",
                          "the kernels as optimised LLVM IR for this machine"),
               clEnumValN(Emit::Gpu, "gpu",
                          "the kernels as GPU launches and outlined "
                          "gpu.module kernels (gpu dialect)"),
               clEnumValN(Emit::Ptx, "ptx",
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
    outputPath("o", cl::desc("Output file for compile (default: stdout)"),
               cl::value_desc("file"), cl::init("-"), cl::sub(compileCmd),
               cl::cat(dynbCat));

static cl::opt<std::string>
    paramsPath("params",
               cl::desc("Parameters from a safetensors file (F32 tensors "
                        "named as the model's dynb.param ops)"),
               cl::value_desc("file.safetensors"), cl::sub(runCmd),
               cl::cat(dynbCat));
static cl::opt<uint64_t>
    seed("seed", cl::desc("Initialise every parameter from this seed instead"),
         cl::sub(runCmd), cl::cat(dynbCat));
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
            cl::init(0), cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<bool> profileSteps(
    "profile",
    cl::desc("Time the runtime's steps by kind (gather, GEMM, kernel, "
             "feature map, dispatch; a dispatch's gate, experts and "
             "combine) and print where each strategy's run time goes"),
    cl::sub(runCmd), cl::cat(dynbCat));
enum class Device { Cpu, Cuda };
static cl::opt<Device> device(
    "device", cl::desc("Where plans run (default cpu)"), cl::init(Device::Cpu),
    cl::values(clEnumValN(Device::Cpu, "cpu", "this machine's cores"),
               clEnumValN(Device::Cuda, "cuda",
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
             cl::sub(runCmd), cl::sub(statsCmd), cl::cat(dynbCat));
static cl::opt<std::string>
    cacheDir("cache-dir",
             cl::desc("Where compiled modules persist between runs (default: "
                      "$DYNB_CACHE_DIR, else the user's cache directory's "
                      "dynb/kernels)"),
             cl::value_desc("dir"), cl::sub(runCmd), cl::cat(dynbCat));
static cl::opt<bool>
    noCache("no-cache",
            cl::desc("Compile every module, neither loading nor storing "
                     "compiled modules on disk"),
            cl::sub(runCmd), cl::cat(dynbCat));

static cl::opt<std::string> maxMemory(
    "max-memory",
    cl::desc("Refuse to run when parameters plus the largest batch's buffers "
             "need more than this many bytes; K, M, G suffixes (default 16G; "
             "0: no limit)"),
    cl::init("16G"), cl::sub(runCmd), cl::cat(dynbCat));

namespace {

int fail(const llvm::Twine &msg) {
  // The table rows printed so far come before the error that ends them.
  llvm::outs().flush();
  llvm::WithColor::error(llvm::errs(), "dynbc") << msg << "\n";
  return 1;
}

/// "16G" -> 16 GiB; plain numbers are bytes.
std::optional<uint64_t> parseByteSize(llvm::StringRef text) {
  uint64_t scale = 1;
  if (!text.empty()) {
    char last = llvm::toUpper(text.back());
    if (last == 'K' || last == 'M' || last == 'G') {
      scale = last == 'K' ? 1ull << 10 : last == 'M' ? 1ull << 20 : 1ull << 30;
      text = text.drop_back();
    }
  }
  uint64_t value;
  if (text.getAsInteger(10, value) || value > UINT64_MAX / scale)
    return std::nullopt;
  return value * scale;
}

/// The strategies asked for, in order; "all" expands to every strategy.
std::optional<std::vector<BatchingStrategy>> parseStrategies(bool single) {
  std::vector<BatchingStrategy> out;
  if (strategies.empty())
    return std::vector<BatchingStrategy>{BatchingStrategy::Agenda};
  for (const std::string &s : strategies) {
    if (s == "all") {
      out.insert(out.end(), {BatchingStrategy::None, BatchingStrategy::Depth,
                             BatchingStrategy::Agenda});
      continue;
    }
    std::optional<BatchingStrategy> st = parseBatchingStrategy(s);
    if (!st) {
      fail("unknown strategy '" + s + "' (expected none, depth or agenda" +
           (single ? ")" : ", a list of them, or all)"));
      return std::nullopt;
    }
    out.push_back(*st);
  }
  if (single && out.size() != 1) {
    fail("compile takes one --strategy");
    return std::nullopt;
  }
  return out;
}

int writeText(const std::string &text) {
  if (llvm::Error e = llvm::writeToOutput(
          outputPath, [&](llvm::raw_ostream &os) -> llvm::Error {
            os << text;
            return llvm::Error::success();
          }))
    return fail(llvm::toString(std::move(e)));
  return 0;
}

/// --emit=gpu and --emit=ptx of one module's kernels. PTX modules are
/// separated by comment lines naming them (tests/lit/dynbc/Inputs/split-ptx.py
/// splits them for ptxas).
LogicalResult emitGpu(ModuleOp kernels, llvm::raw_ostream &os) {
  GpuTarget target;
  target.chip = gpuChip;
  target.features = gpuFeatures;
  if (failed(mapKernelsToGpu(kernels, target)))
    return failure();
  if (emit == Emit::Gpu) {
    kernels.print(os);
    os << "\n";
    return success();
  }
  if (failed(lowerGpuModulesToNVVM(kernels)))
    return failure();
  auto launches = describeGpuLaunches(kernels);
  auto ptx = compileGpuModulesToPtx(kernels, target);
  if (failed(launches) || failed(ptx))
    return failure();
  for (const PtxModule &m : *ptx) {
    os << "// ---- ptx module @" << m.name << " (" << target.chip << ")";
    for (const GpuLaunch &l : *launches)
      if (l.module == m.name) {
        os << ": entry " << l.kernel << ", launched by @" << l.hostFunction
           << "(";
        llvm::interleaveComma(l.args, os,
                              [&](unsigned a) { os << "arg" << a; });
        os << ")";
      }
    os << "\n" << m.ptx << "// ---- end ptx module @" << m.name << "\n";
  }
  return success();
}

/// --device=cuda: the driver and a device must be there, and then the
/// backend must say plainly that it cannot run plans yet.
/// DYNB_CUDA_LIBRARY names another driver library (the tests' stand-in).
int refuseCuda() {
  const char *library = std::getenv("DYNB_CUDA_LIBRARY");
  std::unique_ptr<rt::CudaDriver> driver;
  if (rt::Status s = rt::CudaDriver::load(
          driver, library ? library : rt::kCudaDriverLibrary))
    return fail(s.message() + "; no output written");
  rt::CudaDeviceInfo info;
  if (rt::Status s = driver->deviceInfo(0, info))
    return fail(s.message() + "; no output written");
  return fail(fmt::format(
      "the CUDA backend does not yet run plans: found {} (sm_{}{}, {} "
      "device(s)); its kernels compile to PTX (dynbc compile --emit=ptx), "
      "but GEMMs, gathers and plan execution on the device are not "
      "implemented; use --device=cpu; no output written",
      info.name, info.computeMajor, info.computeMinor, driver->deviceCount()));
}

int runCompile(Session &session) {
  auto strats = parseStrategies(/*single=*/true);
  if (!strats)
    return 1;
  std::string text;
  llvm::raw_string_ostream os(text);
  if (emit == Emit::Dynb) {
    session.module().print(os);
    return writeText(os.str());
  }
  auto batched = session.batch(strats->front(), batchSize);
  if (failed(batched))
    return 1;
  if (emit == Emit::Batched) {
    (*batched)->print(os);
    return writeText(os.str());
  }
  // Each distinct launched module (or batched op) once, in schedule order.
  llvm::StringSet<> seen;
  for (ScheduleOp s : (*batched)->getOps<ScheduleOp>())
    for (Operation &op : s.getBody().front()) {
      if (isa<GatherOp, YieldOp, LookupOp>(op))
        continue;
      Operation *target = &op;
      std::string key;
      if (auto call = dyn_cast<BatchedCallOp>(op)) {
        key = "call:" + call.getCallee().str();
        target = (*batched)->lookupSymbol<func::FuncOp>(call.getCallee());
      } else {
        llvm::raw_string_ostream ks(key);
        ks << op.getName() << op.getAttrDictionary();
        for (Type t : op.getOperandTypes())
          ks << cast<RankedTensorType>(t).getShape().drop_front().size()
             << cast<RankedTensorType>(t).getShape().back();
      }
      if (!seen.insert(key).second)
        continue;
      auto lowered = session.kernels().lowerOnly(target);
      if (failed(lowered))
        return 1;
      (*lowered)->printSteps(os);
      if (emit == Emit::Linalg) {
        (*lowered)->kernels->print(os);
        os << "\n";
        continue;
      }
      if (emit == Emit::Gpu || emit == Emit::Ptx) {
        if (failed(emitGpu(*(*lowered)->kernels, os)))
          return 1;
        continue;
      }
      if (failed(lowerKernelsToLLVMDialect(*(*lowered)->kernels)) ||
          failed(printOptimizedLLVMIR(*(*lowered)->kernels, os)))
        return 1;
    }
  return writeText(os.str());
}

int runStats(Session &session) {
  auto strats = parseStrategies(/*single=*/false);
  if (!strats)
    return 1;
  ModuleOp module = session.module();
  SignatureTable sigs;
  llvm::SmallVector<uint64_t> counts;
  uint64_t nodes = 0;
  for (InstanceOp inst : module.getOps<InstanceOp>())
    for (Operation &op : inst.getBody().front().without_terminator()) {
      SignatureId id = sigs.intern(&op);
      if (id >= counts.size())
        counts.resize(id + 1);
      ++counts[id];
      ++nodes;
    }
  llvm::outs() << fmt::format(
      "instances:  {}\nnodes:      {}\nsignatures: {}\n",
      session.numInstances(), nodes, sigs.size());
  for (size_t i = 0; i < sigs.size(); ++i)
    llvm::outs() << fmt::format("  {:>8} x {}\n", counts[i], sigs.describe(i));
  llvm::outs() << "every signature batches (no op of the dialect is "
                  "excluded from batching)\n";
  llvm::outs() << fmt::format("\n{:<8} {:>8} {:>9} {:>12} {:>10} {:>26}\n",
                              "strategy", "batches", "launches", "lower bound",
                              "ratio", "group size min/mean/max");
  for (BatchingStrategy st : *strats) {
    auto batched = session.batch(st, batchSize);
    if (failed(batched))
      return 1;
    uint64_t launches = 0, bound = 0, batches = 0, minN = UINT64_MAX, maxN = 0,
             sumN = 0;
    for (ScheduleOp s : (*batched)->getOps<ScheduleOp>()) {
      ++batches;
      launches += s.getLaunches();
      bound += s.getLowerBound();
      for (Operation &op : s.getBody().front()) {
        if (isa<GatherOp, YieldOp>(op))
          continue;
        Type t = op.getNumOperands() ? op.getOperand(0).getType()
                                     : op.getResult(0).getType();
        uint64_t n = cast<RankedTensorType>(t).getDimSize(0);
        minN = std::min(minN, n);
        maxN = std::max(maxN, n);
        sumN += n;
      }
    }
    llvm::outs() << fmt::format(
        "{:<8} {:>8} {:>9} {:>12} {:>10.2f} {:>14}/{:.1f}/{}\n",
        toString(st).str(), batches, launches, bound,
        bound ? double(launches) / bound : 0.0, launches ? minN : 0,
        launches ? double(sumN) / launches : 0.0, maxN);
  }
  return 0;
}

// Resident memory with the libraries loaded and nothing read yet, and once
// the graphs are read: the base the benchmarks' memory floor is set on.
int64_t residentAtStart = 0, residentAfterLoad = 0, anonymousAtStart = 0;

int runRun(Session &session) {
  auto strats = parseStrategies(/*single=*/false);
  if (!strats)
    return 1;
  if (device == Device::Cuda)
    return refuseCuda();
  bool haveParams = paramsPath.getNumOccurrences() > 0;
  bool haveSeed = seed.getNumOccurrences() > 0;
  if (haveParams == haveSeed)
    return fail("run needs exactly one of --params FILE.safetensors and "
                "--seed N");
  if (batchSize < 0)
    return fail("--batch-size must be >= 0");
  if (profileSteps && repeat == 0)
    return fail("--profile times the timed passes: give --repeat 1 or more");
  if (haveParams) {
    if (llvm::Error e = session.loadParams(paramsPath))
      return fail(llvm::toString(std::move(e)));
  } else if (llvm::Error e = session.seedParams(seed)) {
    return fail(llvm::toString(std::move(e)));
  }
  if (!featuresPath.empty())
    if (llvm::Error e = session.loadMoreParams(featuresPath))
      return fail(llvm::toString(std::move(e)));
  if (checkFinite)
    if (llvm::Error e = checkFiniteParams(
            session.params(), haveParams
                                  ? llvm::StringRef(paramsPath)
                                  : llvm::StringRef("parameters seeded")))
      return fail(llvm::toString(std::move(e)));

  std::optional<StackedOutputs> reference;
  double referenceSeconds = 0;
  // A streamed run checks batch by batch (RunOptions::check).
  if (check && !session.streaming()) {
    auto t0 = std::chrono::steady_clock::now();
    auto ref = session.runReference();
    if (failed(ref))
      return 1;
    referenceSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    reference = std::move(*ref);
  }

  uint64_t instances = session.numInstances();
  llvm::outs() << fmt::format(
      "{}: {} instances, batch size {}, params {}{}\n", inputPath.getValue(),
      instances,
      batchSize == 0 ? std::string("all")
                     : std::to_string(batchSize.getValue()),
      haveParams ? paramsPath.getValue()
                 : "seed " + std::to_string(seed.getValue()),
      check && !session.streaming()
          ? fmt::format(", reference {:.2f} s", referenceSeconds)
      : session.streaming() ? ", streamed"
                            : "");
  llvm::outs() << fmt::format(
      "{:<8} {:>7} {:>9} {:>7} {:>7} {:>8} {:>9} {:>9} {:>12} {:>12} {:>11}"
      "{}\n",
      "strategy", "nodes", "launches", "bound", "ratio", "JIT s", "sched ms",
      "run ms", "instances/s", "nodes/s", "arena MiB",
      check ? "  max abs err  max rel err  check" : "");
  // Diagnostics go to stderr unbuffered; keep the table above them.
  llvm::outs().flush();

  bool allOk = true;
  bool wroteOutput = false;
  std::vector<float> npyRows;
  int64_t npyWidth = 0;
  llvm::json::Array report;
  for (BatchingStrategy st : *strats) {
    RunOptions opts;
    opts.strategy = st;
    opts.batchSize = batchSize;
    opts.repeat = repeat;
    opts.threads = threads;
    opts.profile = profileSteps;
    opts.check = check && session.streaming();
    opts.atol = absTolerance;
    opts.rtol = relTolerance;
    auto r = session.run(opts);
    if (failed(r))
      return 1;
    if (checkFinite)
      if (llvm::Error e = checkFiniteOutputs(r->outputs, toString(st)))
        return fail(llvm::toString(std::move(e)) + "; no output written");
    double runSec = r->medianPassSeconds();
    Comparison cmp;
    if (reference)
      cmp = compareOutputs(*reference, r->outputs, absTolerance, relTolerance);
    else if (opts.check)
      cmp = r->comparison;
    bool checked = reference || opts.check;
    allOk &= cmp.withinTolerance;
    llvm::outs() << fmt::format(
        "{:<8} {:>7} {:>9} {:>7} {:>7.2f} {:>8.3f} {:>9.1f} {:>9.2f} "
        "{:>12.0f} {:>12.0f} {:>11.1f}",
        toString(st).str(), r->nodes, r->launches, r->lowerBound,
        r->lowerBound ? double(r->launches) / r->lowerBound : 0.0,
        r->jitSeconds, r->scheduleSeconds * 1e3, runSec * 1e3,
        runSec > 0 ? instances / runSec : 0.0,
        runSec > 0 ? r->nodes / runSec : 0.0, r->arenaBytes / 1048576.0);
    if (checked)
      llvm::outs() << fmt::format(
          "  {:>11.3g}  {:>11.3g}  {}", cmp.maxAbsError, cmp.maxRelError,
          cmp.withinTolerance
              ? "ok"
              : fmt::format("FAIL (instance {})", cmp.worstInstance));
    llvm::outs() << "\n";
    llvm::outs().flush();
    if (profileSteps) {
      const StepProfile &p = r->profile;
      double total = 0;
      for (double t : r->passSeconds)
        total += t;
      llvm::outs() << fmt::format(
          "  {:<6} time: gemm {:.1f}% ({:.1f} GFLOP/s), kernels {:.1f}%, "
          "gathers {:.1f}%, maps {:.1f}% ({:.1f} conv GFLOP/s), dispatch "
          "{:.1f}% ({:.1f} GFLOP/s), other {:.1f}%\n",
          toString(st).str(), 100 * p.gemm / total,
          p.gemm > 0 ? p.gemmFlops / p.gemm * 1e-9 : 0.0,
          100 * p.kernel / total, 100 * p.gather / total, 100 * p.map / total,
          p.map > 0 ? p.convFlops / p.map * 1e-9 : 0.0,
          100 * p.dispatch / total,
          p.dispatch > 0 ? r->dispatchGemmFlops / p.dispatch * 1e-9 : 0.0,
          100 * (total - p.gemm - p.kernel - p.gather - p.map - p.dispatch) /
              total);
      if (p.dispatch > 0)
        llvm::outs() << fmt::format(
            "  {:<6} dispatch: gate and routing {:.1f}%, experts {:.1f}%, "
            "combine {:.1f}%, other {:.1f}% (of the dispatch time)\n",
            toString(st).str(), 100 * p.dispatchGate / p.dispatch,
            100 * p.dispatchExperts / p.dispatch,
            100 * p.dispatchCombine / p.dispatch,
            100 *
                (p.dispatch - p.dispatchGate - p.dispatchExperts -
                 p.dispatchCombine) /
                p.dispatch);
    }
    report.push_back(llvm::json::Object{
        {"strategy", toString(st)},
        {"instances", int64_t(instances)},
        {"nodes", int64_t(r->nodes)},
        {"batches", int64_t(r->batches)},
        {"launches", int64_t(r->launches)},
        {"lower_bound", int64_t(r->lowerBound)},
        {"gathers_copied", int64_t(r->plan.gathersCopied)},
        {"gathers_as_views", int64_t(r->plan.gathersAsViews)},
        {"concats_placed", int64_t(r->plan.concatsPlaced)},
        {"jit_seconds", r->jitSeconds},
        {"modules_compiled", int64_t(r->modulesCompiled)},
        {"modules_loaded", int64_t(r->modulesLoaded)},
        {"schedule_seconds", r->scheduleSeconds},
        {"plan_seconds", r->planSeconds},
        {"run_seconds", llvm::json::Array(std::vector<llvm::json::Value>(
                            r->passSeconds.begin(), r->passSeconds.end()))},
        {"run_seconds_median", runSec},
        {"arena_bytes", r->arenaBytes},
        {"gemm_seconds", r->profile.gemm},
        {"kernel_seconds", r->profile.kernel},
        {"gather_seconds", r->profile.gather},
        {"gemm_flops", int64_t(r->profile.gemmFlops)},
        {"map_seconds", r->profile.map},
        {"dispatch_seconds", r->profile.dispatch},
        {"dispatch_gate_seconds", r->profile.dispatchGate},
        {"dispatch_expert_seconds", r->profile.dispatchExperts},
        {"dispatch_combine_seconds", r->profile.dispatchCombine},
        {"conv_flops", int64_t(r->profile.convFlops)},
        {"dispatch_gemm_flops", int64_t(r->dispatchGemmFlops)},
        {"dispatch_param_bytes", int64_t(r->dispatchParamBytes)},
        {"peak_rss_bytes", peakResidentBytes()},
        {"rss_start_bytes", residentAtStart},
        {"rss_after_load_bytes", residentAfterLoad},
        {"rss_anon_start_bytes", anonymousAtStart},
        {"rss_anon_peak_sampled_bytes", r->peakAnonymousSampled},
        {"rss_after_plans_bytes", r->residentAfterPlans},
        {"param_bytes", r->paramBytes},
        {"peak_live_bytes", r->peakLiveBytes},
        {"output_bytes", r->outputBytes},
        {"rss_after_batch_bytes",
         llvm::json::Array(std::vector<llvm::json::Value>(
             r->residentAfterBatch.begin(), r->residentAfterBatch.end()))},
        {"max_abs_error", checked ? cmp.maxAbsError : -1.0},
        {"max_rel_error", checked ? cmp.maxRelError : -1.0},
        {"check", checked ? (cmp.withinTolerance ? "ok" : "fail") : "off"},
        {"streamed", session.streaming()},
        {"front_end", r->frontEnd},
        {"read_seconds", r->readSeconds},
        {"parse_seconds", r->parseSeconds},
        {"reference_seconds",
         opts.check ? r->referenceSeconds : referenceSeconds},
    });

    if (!npyPath.empty() && !wroteOutput) {
      wroteOutput = true;
      int64_t width = 0;
      for (int64_t w : r->outputs.widths)
        width += w;
      npyWidth = width;
      npyRows.reserve(instances * width);
      for (uint64_t i = 0; i < instances; ++i)
        for (size_t p = 0; p < r->outputs.widths.size(); ++p) {
          int64_t w = r->outputs.widths[p];
          const float *src = r->outputs.values[p].data() + i * w;
          npyRows.insert(npyRows.end(), src, src + w);
        }
    }
  }
  llvm::outs() << fmt::format("peak resident memory: {:.1f} MiB\n",
                              peakResidentBytes() / 1048576.0);
  if (!reportPath.empty()) {
    if (llvm::Error e = llvm::writeToOutput(
            reportPath, [&](llvm::raw_ostream &os) -> llvm::Error {
              os << llvm::formatv("{0:2}",
                                  llvm::json::Value(llvm::json::Object{
                                      {"input", inputPath.getValue()},
                                      {"results", std::move(report)}}));
              return llvm::Error::success();
            }))
      return fail(llvm::toString(std::move(e)));
  }
  if (!allOk)
    return fail("outputs differ from the reference beyond the tolerance "
                "(atol " +
                fmt::format("{}", absTolerance.getValue()) + ", rtol " +
                fmt::format("{}", relTolerance.getValue()) +
                "); no output written");
  // Only now, with every strategy run and checked: no output on failure.
  if (wroteOutput) {
    rt::Status s = rt::writeNpyAtomic(
        npyPath, {static_cast<int64_t>(instances), npyWidth}, npyRows);
    if (!s.isOk())
      return fail(s.message());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(dynbCat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "dynb: batch and compile dynamic neural network graphs\n\n"
      "  dynbc compile IN [-o OUT] "
      "[--emit=dynb|batched|linalg|llvm|gpu|ptx] [--strategy=S]\n"
      "  dynbc run IN (--params P.safetensors | --seed N) [--strategy=S,...] "
      "[--batch-size N] [--stream] [--check] [--output OUT.npy] "
      "[--device=cpu|cuda]\n"
      "  dynbc stats IN [--strategy=S,...] [--batch-size N]\n");
  if (!compileCmd && !runCmd && !statsCmd) {
    cl::PrintHelpMessage();
    return 1;
  }
  Session session;
  KernelCacheOptions kernelCache;
  kernelCache.persistent = !noCache;
  kernelCache.directory = cacheDir;
  session.kernels().setObjectStore(KernelObjectStore::open(kernelCache));
  SessionLimits limits;
  limits.maxNodes = maxNodes;
  std::optional<uint64_t> memory = parseByteSize(maxMemory);
  if (!memory)
    return fail("--max-memory: expected bytes with an optional K, M or G "
                "suffix, got '" +
                maxMemory + "'");
  limits.maxMemoryBytes = *memory;
  session.setLimits(limits);
  ClevrModelConfig clevr;
  clevr.moduleDim = clevrModuleDim;
  clevr.projDim = 4 * clevrModuleDim;
  clevr.fcDim = 8 * clevrModuleDim;
  clevr.featureChannels = clevrFeatureDim;
  clevr.mapSize = clevrMapSize;
  clevr.modulesOnly = clevrModulesOnly;
  session.setClevrConfig(clevr);
  residentAtStart = residentBytes();
  anonymousAtStart = residentAnonymousBytes();
  std::unique_ptr<InterchangeSource> source;
  std::string notRecords;
  // --stream of a document is openStream's error to report.
  if (runCmd && frontEnd == FrontEnd::Auto &&
      !(streamInput && llvm::StringRef(inputPath).ends_with(".json")))
    source =
        InterchangeSource::open(inputPath, limits, notRecords, kernelCache);
  if (streamInput) {
    if (failed(session.openStream(inputPath)))
      return 1;
  } else if (source) {
    if (failed(session.loadJsonGraphs(inputPath, source->modelJson())))
      return 1;
  } else if (failed(session.loadGraphs(inputPath))) {
    return 1;
  }
  if (source)
    session.setPlanner(std::move(source), inputPath);
  residentAfterLoad = residentBytes();
  if (compileCmd)
    return runCompile(session);
  if (statsCmd)
    return runStats(session);
  return runRun(session);
}
