//===- GpuKernelTest.cpp - Fused kernels as PTX, and on a GPU if present --===//
#include "dynb/JIT/GpuKernelCompiler.h"
#include "dynb/Lowering/ModuleLowering.h"
#include "dynb/Runtime/CudaDriver.h"
#include "dynb/Runtime/CudaKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

using namespace dynb;
using namespace mlir;

namespace {

// Kernels as ModuleLowering makes them: a fused tanh * sigmoid + relu over
// [N x 5] windows, and a concat's two copies (two loop nests, so two
// launches from one kernel function).
constexpr const char *kKernels = R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
!win5 = memref<?x5xf32, strided<[?, 1], offset: ?>>
!win3 = memref<?x3xf32, strided<[?, 1], offset: ?>>
module {
  func.func @t_k0(%a: !win5, %b: !win5, %o: !win5) {
    linalg.generic {indexing_maps = [#map, #map, #map],
                    iterator_types = ["parallel", "parallel"]}
        ins(%a, %b : !win5, !win5) outs(%o : !win5) {
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
    }
    return
  }
  func.func @t_k1(%a: !win5, %b: !win3, %oa: !win5, %ob: !win3) {
    linalg.generic {indexing_maps = [#map, #map],
                    iterator_types = ["parallel", "parallel"]}
        ins(%a : !win5) outs(%oa : !win5) {
    ^bb0(%x: f32, %out: f32):
      linalg.yield %x : f32
    }
    linalg.generic {indexing_maps = [#map, #map],
                    iterator_types = ["parallel", "parallel"]}
        ins(%b : !win3) outs(%ob : !win3) {
    ^bb0(%x: f32, %out: f32):
      linalg.yield %x : f32
    }
    return
  }
}
)mlir";

struct CompiledKernels {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  SmallVector<GpuLaunch> launches;
  std::map<std::string, std::string> ptx; // by gpu.module name
};

/// Parses kKernels and compiles them to PTX for `target`; records the
/// launches the host functions make.
std::unique_ptr<CompiledKernels> compile(const GpuTarget &target,
                                         std::string &diagnostics) {
  auto c = std::make_unique<CompiledKernels>();
  loadLoweringDialects(c->ctx);
  ScopedDiagnosticHandler handler(&c->ctx, [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  c->module = parseSourceString<ModuleOp>(kKernels, &c->ctx);
  if (!c->module)
    return nullptr;
  auto ptx = compileKernelsToPtx(*c->module, target);
  if (failed(ptx))
    return nullptr;
  for (const PtxModule &m : *ptx)
    c->ptx[m.name] = m.ptx;
  auto launches = describeGpuLaunches(*c->module);
  if (failed(launches))
    return nullptr;
  c->launches = std::move(*launches);
  return c;
}

TEST(GpuKernels, OneEntryPerLaunchAndNoCalls) {
  std::string diags;
  auto c = compile(GpuTarget(), diags);
  ASSERT_NE(c, nullptr) << diags;
  ASSERT_EQ(c->launches.size(), 3u);
  EXPECT_EQ(c->launches[0].hostFunction, "t_k0");
  EXPECT_EQ(c->launches[0].args, (SmallVector<unsigned, 4>{0, 1, 2}));
  EXPECT_EQ(c->launches[1].hostFunction, "t_k1");
  EXPECT_EQ(c->launches[1].args, (SmallVector<unsigned, 4>{0, 2}));
  EXPECT_EQ(c->launches[2].hostFunction, "t_k1");
  EXPECT_EQ(c->launches[2].args, (SmallVector<unsigned, 4>{1, 3}));
  ASSERT_EQ(c->ptx.size(), 3u);
  for (const GpuLaunch &l : c->launches) {
    ASSERT_TRUE(c->ptx.count(l.module)) << l.module;
    const std::string &ptx = c->ptx[l.module];
    EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
    EXPECT_NE(ptx.find(".visible .entry " + l.kernel + "("), std::string::npos)
        << ptx;
    // Self-contained: no libdevice or other external function.
    EXPECT_EQ(ptx.find(".extern"), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("call."), std::string::npos) << ptx;
  }
}

TEST(GpuKernels, UnknownChipIsRefused) {
  GpuTarget target;
  target.chip = "sm_1";
  std::string diags;
  EXPECT_EQ(compile(target, diags), nullptr);
  EXPECT_NE(diags.find("unknown NVPTX chip 'sm_1'"), std::string::npos)
      << diags;
}

// The fused kernel on the GPU over strided windows, against the formula on
// the host. Needs an NVIDIA GPU and driver; skips (with the reason) without.
TEST(GpuKernels, FusedKernelMatchesTheHostOnTheDevice) {
  std::unique_ptr<rt::CudaDriver> driver;
  if (rt::Status s = rt::CudaDriver::load(driver))
    GTEST_SKIP() << s.message();
  rt::CudaDeviceInfo info;
  ASSERT_TRUE(driver->deviceInfo(0, info).isOk());
  // PTX for the device's own chip (sm_75 at least: the oldest target the
  // toolkits of today still assemble); the driver JIT-compiles it.
  GpuTarget target;
  int cc = info.computeMajor * 10 + info.computeMinor;
  target.chip = cc >= 90 ? "sm_90" : cc >= 80 ? "sm_80" : "sm_75";
  target.features = cc >= 90 ? "+ptx80" : cc >= 80 ? "+ptx70" : "+ptx63";
  std::string diags;
  auto c = compile(target, diags);
  ASSERT_NE(c, nullptr) << diags;

  std::unique_ptr<rt::CudaContext> ctx;
  rt::Status made = rt::CudaContext::create(*driver, 0, ctx);
  ASSERT_TRUE(made.isOk()) << made.message();
  const GpuLaunch &l = c->launches[0];
  rt::cuda::Module mod;
  ASSERT_TRUE(ctx->loadPtx(c->ptx[l.module], mod).isOk());
  rt::cuda::Function fn;
  ASSERT_TRUE(ctx->function(mod, l.kernel, fn).isOk());

  // Inputs a and b are column windows 2..7 of [rows x 8] buffers; the
  // output is a dense [rows x 5] buffer.
  const int64_t rows = 1000, cols = 5, wide = 8, col = 2;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  std::vector<float> a(rows * wide), b(rows * wide), out(rows * cols, -1.0f);
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  rt::cuda::DevicePtr da, db, dout;
  ASSERT_TRUE(ctx->alloc(a.size() * 4, da).isOk());
  ASSERT_TRUE(ctx->alloc(b.size() * 4, db).isOk());
  ASSERT_TRUE(ctx->alloc(out.size() * 4, dout).isOk());
  ASSERT_TRUE(ctx->copyToDevice(da, a.data(), a.size() * 4).isOk());
  ASSERT_TRUE(ctx->copyToDevice(db, b.data(), b.size() * 4).isOk());
  ASSERT_TRUE(ctx->copyToDevice(dout, out.data(), out.size() * 4).isOk());

  rt::DeviceWindow wa{da, col, rows, cols, wide}, wb{db, col, rows, cols, wide},
      wo{dout, 0, rows, cols, cols};
  const rt::DeviceWindow byArg[3] = {wa, wb, wo};
  std::vector<rt::DeviceWindow> windows;
  for (unsigned arg : l.args)
    windows.push_back(byArg[arg]);
  rt::Status launched =
      rt::launchElementwise(*ctx, fn, windows, target.blockSize);
  ASSERT_TRUE(launched.isOk()) << launched.message();
  ASSERT_TRUE(ctx->synchronize().isOk());
  ASSERT_TRUE(ctx->copyToHost(out.data(), dout, out.size() * 4).isOk());

  double maxErr = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double x = a[i * wide + col + j], y = b[i * wide + col + j];
      double want = std::tanh(x) / (1.0 + std::exp(-y)) + std::max(x, 0.0);
      maxErr = std::max(maxErr, std::fabs(want - out[i * cols + j]));
    }
  EXPECT_LT(maxErr, 1e-5);
  EXPECT_TRUE(ctx->free(da).isOk());
  EXPECT_TRUE(ctx->free(db).isOk());
  EXPECT_TRUE(ctx->free(dout).isOk());
}

} // namespace
