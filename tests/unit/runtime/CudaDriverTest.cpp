//===- CudaDriverTest.cpp - Loading the CUDA driver, with and without one -===//
#include "dynb/Runtime/CudaDriver.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace dynb::rt;

namespace {

/// Sets an environment variable for one test and restores it after.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old, hadValue = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (hadValue)
      setenv(name, saved.c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::string saved;
  bool hadValue = false;
};

TEST(CudaDriver, MissingLibrarySaysNoDriver) {
  std::unique_ptr<CudaDriver> d;
  Status s = CudaDriver::load(d, "/nonexistent/libcuda.so.1");
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(s.message(), "no CUDA driver (/nonexistent/libcuda.so.1 not "
                         "found); --device=cuda needs an NVIDIA GPU and "
                         "driver");
}

TEST(CudaDriver, LibraryThatIsNotADriverIsRefused) {
  std::unique_ptr<CudaDriver> d;
  Status s = CudaDriver::load(d, DYNB_FAKE_CUDA_NO_LAUNCH);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("is not a usable CUDA driver: it has no entry "
                             "point cuLaunchKernel"),
            std::string::npos)
      << s.message();
}

TEST(CudaDriver, DriverWithoutDeviceSaysSo) {
  ScopedEnv init("FAKE_CUDA_INIT", "100");
  std::unique_ptr<CudaDriver> d;
  Status s = CudaDriver::load(d, DYNB_FAKE_CUDA);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(d, nullptr);
  EXPECT_NE(s.message().find("found no device; --device=cuda needs an NVIDIA "
                             "GPU"),
            std::string::npos)
      << s.message();
}

TEST(CudaDriver, ZeroDevicesAfterInitSaysNoDevice) {
  ScopedEnv init("FAKE_CUDA_INIT", "0");
  ScopedEnv devices("FAKE_CUDA_DEVICES", "0");
  std::unique_ptr<CudaDriver> d;
  Status s = CudaDriver::load(d, DYNB_FAKE_CUDA);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("found no device"), std::string::npos)
      << s.message();
}

TEST(CudaDriver, FailingInitNamesTheCallAndError) {
  ScopedEnv init("FAKE_CUDA_INIT", "999");
  std::unique_ptr<CudaDriver> d;
  Status s = CudaDriver::load(d, DYNB_FAKE_CUDA);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "cuInit failed: fake driver error (CUDA error 999)");
}

TEST(CudaDriver, DeviceQueriesAndContextFailure) {
  ScopedEnv init("FAKE_CUDA_INIT", "0");
  ScopedEnv devices("FAKE_CUDA_DEVICES", "2");
  ScopedEnv noContext("FAKE_CUDA_CONTEXT", "0");
  std::unique_ptr<CudaDriver> d;
  Status s = CudaDriver::load(d, DYNB_FAKE_CUDA);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(d->deviceCount(), 2);
  EXPECT_EQ(d->version(), 13000);
  CudaDeviceInfo info;
  ASSERT_TRUE(d->deviceInfo(0, info).isOk());
  EXPECT_EQ(info.name, "Fake GPU 0");
  EXPECT_EQ(info.computeMajor, 9);
  EXPECT_EQ(info.computeMinor, 0);
  EXPECT_EQ(info.totalMemoryBytes, uint64_t(1) << 30);
  Status bad = d->deviceInfo(2, info);
  EXPECT_EQ(bad.message(), "no CUDA device 2 (the driver found 2)");

  // The fake has no real context: the failure is reported, not hidden.
  std::unique_ptr<CudaContext> ctx;
  Status c = CudaContext::create(*d, 0, ctx);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_EQ(c.message(),
            "cuDevicePrimaryCtxRetain failed: fake driver error (CUDA error "
            "801)");
  EXPECT_EQ(CudaContext::create(*d, 5, ctx).message(),
            "no CUDA device 5 (the driver found 2)");
}

// On a machine with an NVIDIA GPU and driver, the real libcuda loads and
// describes its devices; elsewhere the test says why it skipped.
TEST(CudaDriver, RealDriverDescribesItsDevices) {
  std::unique_ptr<CudaDriver> d;
  Status s = CudaDriver::load(d);
  if (!s.isOk())
    GTEST_SKIP() << s.message();
  ASSERT_GT(d->deviceCount(), 0);
  for (int i = 0; i < d->deviceCount(); ++i) {
    CudaDeviceInfo info;
    Status q = d->deviceInfo(i, info);
    ASSERT_TRUE(q.isOk()) << q.message();
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.computeMajor, 3);
    EXPECT_GT(info.totalMemoryBytes, 0u);
  }
  std::unique_ptr<CudaContext> ctx;
  Status c = CudaContext::create(*d, 0, ctx);
  ASSERT_TRUE(c.isOk()) << c.message();
  cuda::DevicePtr p = 0;
  ASSERT_TRUE(ctx->alloc(1024, p).isOk());
  std::vector<float> in(256), out(256, 0.0f);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = float(i) * 0.5f;
  ASSERT_TRUE(ctx->copyToDevice(p, in.data(), 1024).isOk());
  ASSERT_TRUE(ctx->copyToHost(out.data(), p, 1024).isOk());
  EXPECT_EQ(in, out);
  EXPECT_TRUE(ctx->free(p).isOk());
}

} // namespace
