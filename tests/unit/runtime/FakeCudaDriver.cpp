//===- FakeCudaDriver.cpp - A stand-in libcuda for CudaDriver's tests -----===//
//
// Exports the entry points CudaDriver resolves, so the loader's paths that a
// machine without a GPU never reaches (a driver without a device, a failing
// call, device queries) run in the tests. Behaviour comes from the
// environment at each call: FAKE_CUDA_INIT is cuInit's result (default 100,
// CUDA_ERROR_NO_DEVICE), FAKE_CUDA_DEVICES the device count (default 0).
// With FAKE_CUDA_CONTEXT=1 a context "exists" and cuLaunchKernel records
// what it was given (read back through fakeCudaLastLaunch), so the launch
// ABI is testable; memory and modules still fail.
// Built twice: with FAKE_CUDA_OMIT_LAUNCH, cuLaunchKernel is missing.
//
//===----------------------------------------------------------------------===//
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace {
int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}
constexpr int kNotSupported = 801; // CUDA_ERROR_NOT_SUPPORTED
bool haveContext() { return envInt("FAKE_CUDA_CONTEXT", 0) == 1; }

// The last launch: grid, block, and the first recordCount parameters, each
// read as a 64-bit value (every parameter of dynb's kernels is one).
int launches = 0;
unsigned lastGrid[3], lastBlock[3];
int recordCount = 0;
long long recorded[64];
} // namespace

extern "C" {
int cuInit(unsigned) { return envInt("FAKE_CUDA_INIT", 100); }
int cuDriverGetVersion(int *v) {
  *v = 13000;
  return 0;
}
int cuGetErrorString(int error, const char **text) {
  *text =
      error == 100 ? "no CUDA-capable device is detected" : "fake driver error";
  return 0;
}
int cuDeviceGetCount(int *count) {
  *count = envInt("FAKE_CUDA_DEVICES", 0);
  return 0;
}
int cuDeviceGet(int *dev, int ordinal) {
  *dev = ordinal;
  return 0;
}
int cuDeviceGetName(char *name, int len, int dev) {
  std::strncpy(name, dev == 0 ? "Fake GPU 0" : "Fake GPU", len);
  return 0;
}
int cuDeviceGetAttribute(int *value, int attr, int) {
  *value = attr == 75 ? 9 : attr == 76 ? 0 : -1;
  return 0;
}
int cuDeviceTotalMem_v2(size_t *bytes, int) {
  *bytes = size_t(1) << 30;
  return 0;
}
// Everything that would need a device fails as a driver without one would.
int cuDevicePrimaryCtxRetain(void **ctx, int) {
  if (!haveContext())
    return kNotSupported;
  *ctx = reinterpret_cast<void *>(0x1);
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int) { return 0; }
int cuCtxSetCurrent(void *) { return haveContext() ? 0 : kNotSupported; }
int cuCtxSynchronize() { return haveContext() ? 0 : kNotSupported; }
int cuModuleLoadData(void **, const void *) { return kNotSupported; }
int cuModuleUnload(void *) { return 0; }
int cuModuleGetFunction(void **, void *, const char *) { return kNotSupported; }
#ifndef FAKE_CUDA_OMIT_LAUNCH
int cuLaunchKernel(void *, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned, void *, void **params,
                   void **) {
  if (!haveContext())
    return kNotSupported;
  ++launches;
  lastGrid[0] = gx, lastGrid[1] = gy, lastGrid[2] = gz;
  lastBlock[0] = bx, lastBlock[1] = by, lastBlock[2] = bz;
  for (int i = 0; i < recordCount; ++i)
    std::memcpy(&recorded[i], params[i], sizeof(long long));
  return 0;
}
#endif
int cuMemAlloc_v2(unsigned long long *, size_t) { return kNotSupported; }
int cuMemFree_v2(unsigned long long) { return kNotSupported; }
int cuMemcpyHtoD_v2(unsigned long long, const void *, size_t) {
  return kNotSupported;
}
int cuMemcpyDtoH_v2(void *, unsigned long long, size_t) {
  return kNotSupported;
}

// Test hooks (not driver entry points).
void fakeCudaRecordParams(int count) { recordCount = count < 64 ? count : 64; }
int fakeCudaLastLaunch(unsigned grid[3], unsigned block[3], long long *params) {
  std::memcpy(grid, lastGrid, sizeof(lastGrid));
  std::memcpy(block, lastBlock, sizeof(lastBlock));
  std::memcpy(params, recorded, sizeof(long long) * recordCount);
  return launches;
}
}
