//===- CudaKernelTest.cpp - The GPU kernel ABI, on a stand-in driver ------===//
#include "dynb/Runtime/CudaKernel.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>

using namespace dynb::rt;

namespace {

/// The stand-in driver with a context, and its recording hooks.
class FakeLaunch : public ::testing::Test {
protected:
  void SetUp() override {
    setenv("FAKE_CUDA_INIT", "0", 1);
    setenv("FAKE_CUDA_DEVICES", "1", 1);
    setenv("FAKE_CUDA_CONTEXT", "1", 1);
    Status s = CudaDriver::load(driver, DYNB_FAKE_CUDA);
    ASSERT_TRUE(s.isOk()) << s.message();
    Status c = CudaContext::create(*driver, 0, ctx);
    ASSERT_TRUE(c.isOk()) << c.message();
    // The same library CudaDriver opened (dlopen counts references).
    hooks = dlopen(DYNB_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(hooks, nullptr);
    record =
        reinterpret_cast<void (*)(int)>(dlsym(hooks, "fakeCudaRecordParams"));
    last = reinterpret_cast<int (*)(unsigned *, unsigned *, long long *)>(
        dlsym(hooks, "fakeCudaLastLaunch"));
    ASSERT_TRUE(record && last);
  }
  void TearDown() override {
    ctx.reset();
    driver.reset();
    if (hooks)
      dlclose(hooks);
    unsetenv("FAKE_CUDA_INIT");
    unsetenv("FAKE_CUDA_DEVICES");
    unsetenv("FAKE_CUDA_CONTEXT");
  }
  int launches() {
    unsigned g[3], b[3];
    long long p[64];
    return last(g, b, p);
  }

  std::unique_ptr<CudaDriver> driver;
  std::unique_ptr<CudaContext> ctx;
  void *hooks = nullptr;
  void (*record)(int) = nullptr;
  int (*last)(unsigned *, unsigned *, long long *) = nullptr;
};

TEST_F(FakeLaunch, PassesMemrefDescriptorsAndA1DGrid) {
  record(14);
  std::vector<DeviceWindow> windows = {{0x1000, 2, 1000, 5, 8},
                                       {0x2000, 0, 1000, 5, 5}};
  Status s = launchElementwise(*ctx, nullptr, windows, 256);
  ASSERT_TRUE(s.isOk()) << s.message();
  unsigned grid[3], block[3];
  long long params[64];
  ASSERT_GE(last(grid, block, params), 1);
  // 5000 elements in blocks of 256.
  EXPECT_EQ(grid[0], 20u);
  EXPECT_EQ(grid[1], 1u);
  EXPECT_EQ(grid[2], 1u);
  EXPECT_EQ(block[0], 256u);
  EXPECT_EQ(block[1], 1u);
  // allocated, aligned, offset, sizes[2], strides[2] of each window.
  std::vector<long long> want = {0x1000, 0x1000, 2, 1000, 5, 8, 1,
                                 0x2000, 0x2000, 0, 1000, 5, 5, 1};
  EXPECT_EQ(std::vector<long long>(params, params + 14), want);
}

TEST_F(FakeLaunch, EmptyWindowLaunchesNothing) {
  int before = launches();
  std::vector<DeviceWindow> windows = {{0x1000, 0, 0, 5, 5},
                                       {0x2000, 0, 0, 5, 5}};
  EXPECT_TRUE(launchElementwise(*ctx, nullptr, windows, 256).isOk());
  EXPECT_EQ(launches(), before);
}

TEST_F(FakeLaunch, WindowsOfDifferentShapesAreRefused) {
  int before = launches();
  std::vector<DeviceWindow> windows = {{0x1000, 0, 10, 5, 5},
                                       {0x2000, 0, 10, 4, 4}};
  Status s = launchElementwise(*ctx, nullptr, windows, 256);
  EXPECT_EQ(s.message(), "GPU kernel argument 1 is [10 x 4], argument 0 is "
                         "[10 x 5]: an elementwise kernel's windows have one "
                         "shape");
  EXPECT_EQ(launches(), before);
  windows = {{0x1000, 0, 10, 5, 4}};
  EXPECT_NE(launchElementwise(*ctx, nullptr, windows, 256)
                .message()
                .find("is not a window"),
            std::string::npos);
  EXPECT_FALSE(launchElementwise(*ctx, nullptr, {}, 256).isOk());
}

TEST_F(FakeLaunch, GridTooLargeIsRefused) {
  std::vector<DeviceWindow> windows = {
      {0x1000, 0, int64_t(1) << 40, 1024, 1024}};
  Status s = launchElementwise(*ctx, nullptr, windows, 32);
  EXPECT_NE(s.message().find("more than a grid holds"), std::string::npos)
      << s.message();
}

} // namespace
