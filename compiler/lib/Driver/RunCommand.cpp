//===- RunCommand.cpp - dynbc run: run, check, report and save ------------===//
//
// Every strategy asked for runs over the same loaded input; the table is
// printed as they finish, and the outputs are written only after every
// strategy ran and passed its check, so a failure never leaves a file.
//
//===----------------------------------------------------------------------===//
#include "dynb/Driver/Commands.h"
#include "dynb/Driver/FiniteCheck.h"
#include "dynb/Driver/MemoryProbes.h"
#include "dynb/Driver/RunReport.h"
#include "dynb/Driver/StrategyList.h"
#include "dynb/Runtime/CudaDriver.h"
#include "dynb/Runtime/NpyWriter.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

using namespace mlir;
using namespace dynb;

namespace {

/// --device=cuda: the driver and a device must be there, and then the
/// backend must say plainly that it cannot run plans yet.
/// DYNB_CUDA_LIBRARY names another driver library (the tests' stand-in).
int refuseCuda() {
  const char *library = std::getenv("DYNB_CUDA_LIBRARY");
  std::unique_ptr<rt::CudaDriver> driver;
  if (rt::Status s = rt::CudaDriver::load(
          driver, library ? library : rt::kCudaDriverLibrary))
    return commandError(s.message() + "; no output written");
  rt::CudaDeviceInfo info;
  if (rt::Status s = driver->deviceInfo(0, info))
    return commandError(s.message() + "; no output written");
  return commandError(fmt::format(
      "the CUDA backend does not yet run plans: found {} (sm_{}{}, {} "
      "device(s)); its kernels compile to PTX (dynbc compile --emit=ptx), "
      "but GEMMs, gathers and plan execution on the device are not "
      "implemented; use --device=cpu; no output written",
      info.name, info.computeMajor, info.computeMinor, driver->deviceCount()));
}

/// Where the timed passes went, by step kind (--profile).
void printProfile(BatchingStrategy st, const RunResult &r,
                  llvm::raw_ostream &os) {
  const StepProfile &p = r.profile;
  double total = 0;
  for (double t : r.passSeconds)
    total += t;
  os << fmt::format(
      "  {:<6} time: gemm {:.1f}% ({:.1f} GFLOP/s), kernels {:.1f}%, "
      "gathers {:.1f}%, maps {:.1f}% ({:.1f} conv GFLOP/s), dispatch "
      "{:.1f}% ({:.1f} GFLOP/s), other {:.1f}%\n",
      toString(st).str(), 100 * p.gemm / total,
      p.gemm > 0 ? p.gemmFlops / p.gemm * 1e-9 : 0.0, 100 * p.kernel / total,
      100 * p.gather / total, 100 * p.map / total,
      p.map > 0 ? p.convFlops / p.map * 1e-9 : 0.0, 100 * p.dispatch / total,
      p.dispatch > 0 ? r.dispatchGemmFlops / p.dispatch * 1e-9 : 0.0,
      100 * (total - p.gemm - p.kernel - p.gather - p.map - p.dispatch) /
          total);
  if (p.dispatch > 0)
    os << fmt::format(
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

/// Parameters from the file, or seeded; then the extra tensors.
int loadParameters(Session &session, const RunCommandOptions &o) {
  if (o.paramsPath) {
    if (llvm::Error e = session.loadParams(*o.paramsPath))
      return commandError(llvm::toString(std::move(e)));
  } else if (llvm::Error e = session.seedParams(*o.seed)) {
    return commandError(llvm::toString(std::move(e)));
  }
  if (!o.featuresPath.empty())
    if (llvm::Error e = session.loadMoreParams(o.featuresPath))
      return commandError(llvm::toString(std::move(e)));
  if (o.checkFinite)
    if (llvm::Error e = checkFiniteParams(
            session.params(), o.paramsPath
                                  ? llvm::StringRef(*o.paramsPath)
                                  : llvm::StringRef("parameters seeded")))
      return commandError(llvm::toString(std::move(e)));
  return 0;
}

} // namespace

int dynb::runRunCommand(Session &session, const RunCommandOptions &o) {
  auto strats = parseStrategyList(o.strategies, /*single=*/false);
  if (!strats)
    return commandError(llvm::toString(strats.takeError()));
  if (o.device == RunDevice::Cuda)
    return refuseCuda();
  if (o.paramsPath.has_value() == o.seed.has_value())
    return commandError("run needs exactly one of --params FILE.safetensors "
                        "and --seed N");
  if (o.batchSize < 0)
    return commandError("--batch-size must be >= 0");
  if (o.profile && o.repeat == 0)
    return commandError(
        "--profile times the timed passes: give --repeat 1 or more");
  if (int status = loadParameters(session, o))
    return status;

  std::optional<StackedOutputs> reference;
  double referenceSeconds = 0;
  // A streamed run checks batch by batch (RunOptions::check).
  if (o.check && !session.streaming()) {
    auto t0 = std::chrono::steady_clock::now();
    auto ref = session.runReference();
    if (failed(ref))
      return 1;
    referenceSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    reference = std::move(*ref);
  }

  llvm::raw_ostream &os = llvm::outs();
  uint64_t instances = session.numInstances();
  os << fmt::format(
      "{}: {} instances, batch size {}, params {}{}\n", o.inputPath, instances,
      o.batchSize == 0 ? std::string("all") : std::to_string(o.batchSize),
      o.paramsPath ? *o.paramsPath : "seed " + std::to_string(*o.seed),
      o.check && !session.streaming()
          ? fmt::format(", reference {:.2f} s", referenceSeconds)
      : session.streaming() ? ", streamed"
                            : "");
  os << fmt::format(
      "{:<8} {:>7} {:>9} {:>7} {:>7} {:>8} {:>9} {:>9} {:>12} {:>12} {:>11}"
      "{}\n",
      "strategy", "nodes", "launches", "bound", "ratio", "JIT s", "sched ms",
      "run ms", "instances/s", "nodes/s", "arena MiB",
      o.check ? "  max abs err  max rel err  check" : "");
  // Diagnostics go to stderr unbuffered; keep the table above them.
  os.flush();

  bool allOk = true;
  std::optional<std::vector<float>> npyRows;
  int64_t npyWidth = 0;
  llvm::json::Array report;
  for (BatchingStrategy st : *strats) {
    RunOptions opts;
    opts.strategy = st;
    opts.batchSize = o.batchSize;
    opts.repeat = o.repeat;
    opts.threads = o.threads;
    opts.profile = o.profile;
    opts.check = o.check && session.streaming();
    opts.atol = o.atol;
    opts.rtol = o.rtol;
    auto r = session.run(opts);
    if (failed(r))
      return 1;
    if (o.checkFinite)
      if (llvm::Error e = checkFiniteOutputs(r->outputs, toString(st)))
        return commandError(llvm::toString(std::move(e)) +
                            "; no output written");
    double runSec = r->medianPassSeconds();
    CheckSummary check;
    check.checked = reference || opts.check;
    if (reference)
      check.comparison = compareOutputs(*reference, r->outputs, o.atol, o.rtol);
    else if (opts.check)
      check.comparison = r->comparison;
    check.referenceSeconds =
        opts.check ? r->referenceSeconds : referenceSeconds;
    const Comparison &cmp = check.comparison;
    allOk &= cmp.withinTolerance;
    os << fmt::format(
        "{:<8} {:>7} {:>9} {:>7} {:>7.2f} {:>8.3f} {:>9.1f} {:>9.2f} "
        "{:>12.0f} {:>12.0f} {:>11.1f}",
        toString(st).str(), r->nodes, r->launches, r->lowerBound,
        r->lowerBound ? double(r->launches) / r->lowerBound : 0.0,
        r->jitSeconds, r->scheduleSeconds * 1e3, runSec * 1e3,
        runSec > 0 ? instances / runSec : 0.0,
        runSec > 0 ? r->nodes / runSec : 0.0, r->arenaBytes / 1048576.0);
    if (check.checked)
      os << fmt::format("  {:>11.3g}  {:>11.3g}  {}", cmp.maxAbsError,
                        cmp.maxRelError,
                        cmp.withinTolerance ? "ok"
                                            : fmt::format("FAIL (instance {})",
                                                          cmp.worstInstance));
    os << "\n";
    if (r->outputs.hasLoss)
      os << fmt::format("{:<8} loss {:.9g}{}\n", "", r->outputs.loss,
                        check.checked
                            ? fmt::format(" (abs err {:.3g})", cmp.lossAbsError)
                            : "");
    os.flush();
    if (o.profile)
      printProfile(st, *r, os);
    report.push_back(
        reportEntry(st, instances, *r, check, session.streaming(), o.memory));
    if (!o.npyPath.empty() && !npyRows)
      npyRows = outputRows(r->outputs, instances, npyWidth);
  }
  os << fmt::format("peak resident memory: {:.1f} MiB\n",
                    peakResidentBytes() / 1048576.0);
  if (!o.reportPath.empty())
    if (llvm::Error e =
            writeRunReport(o.reportPath, o.inputPath, std::move(report)))
      return commandError(llvm::toString(std::move(e)));
  if (!allOk)
    return commandError(
        "outputs differ from the reference beyond the tolerance (atol " +
        fmt::format("{}", o.atol) + ", rtol " + fmt::format("{}", o.rtol) +
        "); no output written");
  // Only now, with every strategy run and checked: no output on failure.
  if (npyRows) {
    rt::Status s = rt::writeNpyAtomic(
        o.npyPath, {static_cast<int64_t>(instances), npyWidth}, *npyRows);
    if (!s.isOk())
      return commandError(s.message());
  }
  return 0;
}
