//===- dynb-gpu-check.cpp - The device half of `tools/dev gpu-check` ------===//
//
// On a machine with an NVIDIA GPU: describes the device, compiles a fused
// elementwise kernel (tanh(a) * sigmoid(b) + relu(a), the shape of an LSTM
// cell's gate nonlinearities) to PTX for it, runs it over batches of
// several sizes, checks every element against the host, and times the
// launches. Figures go to one JSON file. Without a driver or device it says
// so and exits 77 (the "skipped" status of automake and ctest).
//
//===----------------------------------------------------------------------===//
#include "dynb/JIT/GpuKernelCompiler.h"
#include "dynb/Lowering/ModuleLowering.h"
#include "dynb/Runtime/CudaDriver.h"
#include "dynb/Runtime/CudaKernel.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <random>

using namespace dynb;
namespace cl = llvm::cl;

static cl::opt<std::string> outputPath("output",
                                       cl::desc("Write the figures here"),
                                       cl::value_desc("file.json"),
                                       cl::init("gpu-check.json"));
static cl::opt<unsigned>
    timedLaunches("launches", cl::desc("Timed launches a size"), cl::init(200));

namespace {

constexpr int kSkipped = 77;

int fail(const llvm::Twine &msg) {
  // The table rows printed so far come before the error that ends them.
  llvm::outs().flush();
  llvm::WithColor::error(llvm::errs(), "dynb-gpu-check") << msg << "\n";
  return 1;
}

/// The kernel as ModuleLowering would make it for width `w`.
std::string kernelSource(int64_t w) {
  return fmt::format(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
!win = memref<?x{0}xf32, strided<[?, 1], offset: ?>>
module {{
  func.func @gates(%a: !win, %b: !win, %o: !win) {{
    linalg.generic {{indexing_maps = [#map, #map, #map],
                    iterator_types = ["parallel", "parallel"]}}
        ins(%a, %b : !win, !win) outs(%o : !win) {{
    ^bb0(%x: f32, %y: f32, %out: f32):
      %one = arith.constant 1.0 : f32
      %zero = arith.constant 0.0 : f32
      %t = math.tanh %x : f32
      %ny = arith.negf %y : f32
      %e = math.exp %ny : f32
      %d = arith.addf %one, %e : f32
      %s = arith.divf %one, %d : f32
      %m = arith.mulf %t, %s : f32
      %r = arith.maximumf %x, %zero : f32
      %sum = arith.addf %m, %r : f32
      linalg.yield %sum : f32
    }}
    return
  }}
}}
)mlir",
                     w);
}

struct Compiled {
  std::string ptx, kernel;
  std::vector<unsigned> args;
  double seconds = 0;
};

mlir::FailureOr<Compiled> compileGates(int64_t w, const GpuTarget &target) {
  mlir::MLIRContext ctx;
  loadLoweringDialects(ctx);
  auto t0 = std::chrono::steady_clock::now();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kernelSource(w), &ctx);
  if (!module)
    return mlir::failure();
  auto ptx = compileKernelsToPtx(*module, target);
  if (failed(ptx) || ptx->size() != 1)
    return mlir::failure();
  Compiled c;
  c.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  c.ptx = ptx->front().ptx;
  auto launches = describeGpuLaunches(*module);
  if (failed(launches) || launches->size() != 1)
    return mlir::failure();
  c.kernel = launches->front().kernel;
  c.args.assign(launches->front().args.begin(), launches->front().args.end());
  return c;
}

/// Runs the kernel at `rows` x `w`: checks it, then times it.
llvm::Expected<llvm::json::Object> runSize(rt::CudaContext &ctx,
                                           rt::cuda::Function fn,
                                           const Compiled &c, int64_t rows,
                                           int64_t w, unsigned block) {
  auto err = [](const rt::Status &s) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), s.message());
  };
  size_t n = size_t(rows * w);
  std::mt19937 rng(unsigned(rows * 31 + w));
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  std::vector<float> a(n), b(n), out(n, -1.0f);
  for (size_t i = 0; i < n; ++i)
    a[i] = dist(rng), b[i] = dist(rng);
  rt::cuda::DevicePtr buf[3];
  for (auto &p : buf)
    if (rt::Status s = ctx.alloc(n * 4, p))
      return err(s);
  if (rt::Status s = ctx.copyToDevice(buf[0], a.data(), n * 4))
    return err(s);
  if (rt::Status s = ctx.copyToDevice(buf[1], b.data(), n * 4))
    return err(s);
  std::vector<rt::DeviceWindow> windows;
  for (unsigned arg : c.args)
    windows.push_back({buf[arg], 0, rows, w, w});

  if (rt::Status s = rt::launchElementwise(ctx, fn, windows, block))
    return err(s);
  if (rt::Status s = ctx.synchronize())
    return err(s);
  if (rt::Status s = ctx.copyToHost(out.data(), buf[2], n * 4))
    return err(s);
  double maxErr = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = a[i], y = b[i];
    double want = std::tanh(x) / (1.0 + std::exp(-y)) + std::max(x, 0.0);
    maxErr = std::max(maxErr, std::fabs(want - out[i]));
  }

  for (int i = 0; i < 10; ++i)
    if (rt::Status s = rt::launchElementwise(ctx, fn, windows, block))
      return err(s);
  if (rt::Status s = ctx.synchronize())
    return err(s);
  auto t0 = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < timedLaunches; ++i)
    if (rt::Status s = rt::launchElementwise(ctx, fn, windows, block))
      return err(s);
  if (rt::Status s = ctx.synchronize())
    return err(s);
  double perLaunch =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count() /
      timedLaunches;
  for (auto &p : buf)
    if (rt::Status s = ctx.free(p))
      return err(s);
  return llvm::json::Object{
      {"rows", rows},
      {"width", w},
      {"max_abs_error", maxErr},
      {"check", maxErr < 1e-5 ? "ok" : "fail"},
      {"seconds_per_launch", perLaunch},
      // Three arrays of n floats move (two read, one written).
      {"gbytes_per_second", 3.0 * double(n) * 4 / perLaunch * 1e-9},
  };
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "dynb's GPU checks and figures on this "
                              "machine's first CUDA device\n");
  const char *library = std::getenv("DYNB_CUDA_LIBRARY");
  std::unique_ptr<rt::CudaDriver> driver;
  if (rt::Status s = rt::CudaDriver::load(
          driver, library ? library : rt::kCudaDriverLibrary)) {
    llvm::errs() << "dynb-gpu-check: skipped: " << s.message() << "\n";
    return kSkipped;
  }
  rt::CudaDeviceInfo info;
  if (rt::Status s = driver->deviceInfo(0, info))
    return fail(s.message());
  int cc = info.computeMajor * 10 + info.computeMinor;
  GpuTarget target;
  target.chip = cc >= 90 ? "sm_90" : cc >= 80 ? "sm_80" : "sm_75";
  target.features = cc >= 90 ? "+ptx80" : cc >= 80 ? "+ptx70" : "+ptx63";
  llvm::outs() << fmt::format(
      "device 0: {} (compute {}.{}, {:.1f} GiB), driver {}; PTX for {}\n",
      info.name, info.computeMajor, info.computeMinor,
      info.totalMemoryBytes / double(1ull << 30), driver->version(),
      target.chip);

  std::unique_ptr<rt::CudaContext> ctx;
  if (rt::Status s = rt::CudaContext::create(*driver, 0, ctx))
    return fail(s.message());
  llvm::json::Array results;
  bool allOk = true;
  llvm::outs() << fmt::format("{:>6} {:>7} {:>12} {:>12} {:>10} {}\n", "width",
                              "rows", "us/launch", "GB/s", "max err", "check");
  for (int64_t w : {16, 256}) {
    auto c = compileGates(w, target);
    if (failed(c))
      return fail(fmt::format("compiling the width-{} kernel failed", w));
    rt::cuda::Module mod;
    rt::cuda::Function fn;
    if (rt::Status s = ctx->loadPtx(c->ptx, mod))
      return fail(s.message());
    if (rt::Status s = ctx->function(mod, c->kernel, fn))
      return fail(s.message());
    for (int64_t rows : {1, 64, 1024, 16384, 262144}) {
      auto r = runSize(*ctx, fn, *c, rows, w, target.blockSize);
      if (!r)
        return fail(llvm::toString(r.takeError()));
      double us = *r->getNumber("seconds_per_launch") * 1e6;
      bool ok = *r->getString("check") == "ok";
      allOk &= ok;
      llvm::outs() << fmt::format(
          "{:>6} {:>7} {:>12.2f} {:>12.1f} {:>10.2g} "
          "{}\n",
          w, rows, us, *r->getNumber("gbytes_per_second"),
          *r->getNumber("max_abs_error"), ok ? "ok" : "FAIL");
      r->insert({"compile_seconds", c->seconds});
      results.push_back(std::move(*r));
    }
  }
  llvm::json::Object report{
      {"device", info.name},
      {"compute_capability",
       fmt::format("{}.{}", info.computeMajor, info.computeMinor)},
      {"memory_bytes", int64_t(info.totalMemoryBytes)},
      {"driver_version", driver->version()},
      {"ptx_target", target.chip},
      {"block_size", int64_t(target.blockSize)},
      {"kernel", "tanh(a) * sigmoid(b) + relu(a), [rows x width] f32"},
      {"results", std::move(results)},
  };
  if (llvm::Error e = llvm::writeToOutput(
          outputPath, [&](llvm::raw_ostream &os) -> llvm::Error {
            os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report)))
               << "\n";
            return llvm::Error::success();
          }))
    return fail(llvm::toString(std::move(e)));
  llvm::outs() << "figures: " << outputPath << "\n";
  return allOk ? 0 : fail("a kernel's results differ from the host's");
}
