//===- GpuKernelTest.cpp - Fused kernels as PTX, and on a GPU if present --===//
#include "dynb/JIT/GpuKernelCompiler.h"
#include "dynb/JIT/KernelCompiler.h"
#include "dynb/Lowering/ModuleLowering.h"
#include "dynb/Runtime/CudaDriver.h"
#include "dynb/Runtime/CudaKernel.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

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
  func.func @t_k0(%a: !win5, %b: !win5, %o: !win5)
      attributes {llvm.emit_c_interface} {
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
  func.func @t_k1(%a: !win5, %b: !win3, %oa: !win5, %ob: !win3)
      attributes {llvm.emit_c_interface} {
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

/// Runs each gpu.launch on the host instead: a loop over blocks around a
/// loop over threads, with the launch body inside. The mapped kernels can
/// then be JIT-compiled for the CPU, so the mapping's arithmetic (grid,
/// guard, delinearisation, strided addressing) is checked where there is
/// no GPU.
void emulateLaunchesOnHost(ModuleOp module) {
  SmallVector<gpu::LaunchOp> launches;
  module.walk([&](gpu::LaunchOp l) { launches.push_back(l); });
  for (gpu::LaunchOp launch : launches) {
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
    Value one = b.create<arith::ConstantIndexOp>(loc, 1);
    auto blocks = b.create<scf::ForOp>(loc, zero, launch.getGridSizeX(), one);
    b.setInsertionPointToStart(blocks.getBody());
    auto threads = b.create<scf::ForOp>(loc, zero, launch.getBlockSizeX(), one);
    Block &body = launch.getBody().front();
    gpu::KernelDim3 bid = launch.getBlockIds(), tid = launch.getThreadIds();
    gpu::KernelDim3 grid = launch.getGridSize(), blk = launch.getBlockSize();
    bid.x.replaceAllUsesWith(blocks.getInductionVar());
    tid.x.replaceAllUsesWith(threads.getInductionVar());
    for (Value v : {bid.y, bid.z, tid.y, tid.z})
      v.replaceAllUsesWith(zero);
    grid.x.replaceAllUsesWith(launch.getGridSizeX());
    blk.x.replaceAllUsesWith(launch.getBlockSizeX());
    for (Value v : {grid.y, grid.z, blk.y, blk.z})
      v.replaceAllUsesWith(one);
    body.getTerminator()->erase();
    Block *inner = threads.getBody();
    inner->getOperations().splice(inner->getTerminator()->getIterator(),
                                  body.getOperations());
    launch.erase();
  }
}

/// A [rows x cols] window of `buf` starting at column `col` of rows `stride`
/// wide, as the CPU kernels take it.
rt::MemRefDesc2D window(std::vector<float> &buf, int64_t rows, int64_t cols,
                        int64_t stride, int64_t col) {
  return rt::MemRefDesc2D{
      buf.data(), buf.data(), col, {rows, cols}, {stride, 1}};
}

void call(rt::KernelFn fn, std::vector<rt::MemRefDesc2D> descs) {
  std::vector<rt::MemRefDesc2D *> ptrs;
  std::vector<void *> args;
  for (rt::MemRefDesc2D &d : descs)
    ptrs.push_back(&d);
  for (rt::MemRefDesc2D *&p : ptrs)
    args.push_back(&p);
  fn(args.data());
}

// The kernels as mapped for the GPU, run on the host launch by launch,
// compute what the CPU kernels compute: over strided windows, at row counts
// that fill no block, one block exactly, and several with a partial last.
TEST(GpuKernels, MappedKernelsMatchTheCpuKernels) {
  MLIRContext ctx;
  loadLoweringDialects(ctx);
  ctx.loadDialect<gpu::GPUDialect>();
  std::string diags;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    diags += d.str() + "\n";
    return success();
  });
  LoweredModule cpu, mapped;
  cpu.kernels = parseSourceString<ModuleOp>(kKernels, &ctx);
  mapped.kernels = parseSourceString<ModuleOp>(kKernels, &ctx);
  ASSERT_TRUE(cpu.kernels && mapped.kernels) << diags;
  cpu.kernelNames = mapped.kernelNames = {"t_k0", "t_k1"};

  PassManager pm(&ctx);
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createExpandMathPass());
  pm.addPass(createCanonicalizerPass());
  const unsigned block = 64;
  pm.addNestedPass<func::FuncOp>(
      createMapParallelLoopsToGpu(MapParallelLoopsToGpuOptions{block}));
  ASSERT_TRUE(succeeded(pm.run(*mapped.kernels))) << diags;
  int launches = 0;
  mapped.kernels->walk([&](gpu::LaunchOp) { ++launches; });
  ASSERT_EQ(launches, 3);
  emulateLaunchesOnHost(*mapped.kernels);
  ASSERT_TRUE(succeeded(jitCompile(cpu))) << diags;
  ASSERT_TRUE(succeeded(jitCompile(mapped))) << diags;

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  // 5 columns: 12 rows fill no block of 64, 64 rows fill 5 blocks, 103
  // rows 9 blocks with the last one partial.
  for (int64_t rows : {1, 12, 64, 103}) {
    std::vector<float> a(rows * 8), b(rows * 8);
    for (float &x : a)
      x = dist(rng);
    for (float &x : b)
      x = dist(rng);
    // The fused kernel: inputs at column 2 of 8-wide rows.
    std::vector<float> outCpu(rows * 5, -7.0f), outGpu(rows * 5, -7.0f);
    call(cpu.kernelFns[0], {window(a, rows, 5, 8, 2), window(b, rows, 5, 8, 2),
                            window(outCpu, rows, 5, 5, 0)});
    call(mapped.kernelFns[0],
         {window(a, rows, 5, 8, 2), window(b, rows, 5, 8, 2),
          window(outGpu, rows, 5, 5, 0)});
    for (size_t i = 0; i < outCpu.size(); ++i) {
      ASSERT_NE(outCpu[i], -7.0f) << "rows " << rows << " element " << i;
      ASSERT_NEAR(outGpu[i], outCpu[i], 1e-6)
          << "rows " << rows << " element " << i;
    }
    // The concat: two copies of different widths into one 8-wide buffer.
    std::vector<float> catCpu(rows * 8, -7.0f), catGpu(rows * 8, -7.0f);
    call(cpu.kernelFns[1],
         {window(a, rows, 5, 8, 0), window(b, rows, 3, 8, 5),
          window(catCpu, rows, 5, 8, 0), window(catCpu, rows, 3, 8, 5)});
    call(mapped.kernelFns[1],
         {window(a, rows, 5, 8, 0), window(b, rows, 3, 8, 5),
          window(catGpu, rows, 5, 8, 0), window(catGpu, rows, 3, 8, 5)});
    EXPECT_EQ(catGpu, catCpu) << "rows " << rows;
    for (int64_t r = 0; r < rows; ++r)
      EXPECT_EQ(catGpu[r * 8 + 6], b[r * 8 + 6]) << "row " << r;
  }
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
