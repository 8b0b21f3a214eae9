//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// dynb never links libcuda: the build needs no CUDA, and a binary built here
// runs on machines without a GPU. CudaDriver dlopen()s the driver library
// and resolves the few entry points the runtime uses; without the library,
// or without a device, load() fails with a message that says which.
//
// The types below are the driver API's own (cuda.h), declared with the same
// ABI so that cuda.h is never included; tests/unit/runtime/CudaAbiCheck.cpp
// checks them against cuda.h where a CUDA toolkit is installed.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_RUNTIME_CUDADRIVER_H
#define DYNB_RUNTIME_CUDADRIVER_H

#include "dynb/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// The driver's opaque handle types, declared at global scope as cuda.h
// declares them, so that code including both sees one type each.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;

namespace dynb::rt {

namespace cuda {
using Result = int; // CUresult; 0 is CUDA_SUCCESS
using Device = int; // CUdevice
using Context = ::CUctx_st *;
using Module = ::CUmod_st *;
using Function = ::CUfunc_st *;
using Stream = ::CUstream_st *;
using DevicePtr = unsigned long long; // CUdeviceptr on 64-bit hosts

inline constexpr Result kSuccess = 0;
inline constexpr Result kErrorNoDevice = 100;
// CUdevice_attribute values.
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;
} // namespace cuda

/// The library load() opens when given none: the driver's soname.
inline constexpr const char *kCudaDriverLibrary = "libcuda.so.1";

/// What the driver says about one device.
struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  uint64_t totalMemoryBytes = 0;
};

/// The resolved entry points (the _v2 names are the current ABI of the
/// functions that have them).
struct CudaDriverApi {
  cuda::Result (*init)(unsigned flags) = nullptr;
  cuda::Result (*driverGetVersion)(int *version) = nullptr;
  cuda::Result (*getErrorString)(cuda::Result, const char **) = nullptr;
  cuda::Result (*deviceGetCount)(int *count) = nullptr;
  cuda::Result (*deviceGet)(cuda::Device *, int ordinal) = nullptr;
  cuda::Result (*deviceGetName)(char *, int len, cuda::Device) = nullptr;
  cuda::Result (*deviceGetAttribute)(int *, int attr, cuda::Device) = nullptr;
  cuda::Result (*deviceTotalMem)(size_t *, cuda::Device) = nullptr;
  cuda::Result (*primaryCtxRetain)(cuda::Context *, cuda::Device) = nullptr;
  cuda::Result (*primaryCtxRelease)(cuda::Device) = nullptr;
  cuda::Result (*ctxSetCurrent)(cuda::Context) = nullptr;
  cuda::Result (*ctxSynchronize)() = nullptr;
  cuda::Result (*moduleLoadData)(cuda::Module *, const void *image) = nullptr;
  cuda::Result (*moduleUnload)(cuda::Module) = nullptr;
  cuda::Result (*moduleGetFunction)(cuda::Function *, cuda::Module,
                                    const char *name) = nullptr;
  cuda::Result (*launchKernel)(cuda::Function, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned sharedBytes, cuda::Stream,
                               void **params, void **extra) = nullptr;
  cuda::Result (*memAlloc)(cuda::DevicePtr *, size_t) = nullptr;
  cuda::Result (*memFree)(cuda::DevicePtr) = nullptr;
  cuda::Result (*memcpyHtoD)(cuda::DevicePtr, const void *, size_t) = nullptr;
  cuda::Result (*memcpyDtoH)(void *, cuda::DevicePtr, size_t) = nullptr;
};

/// The loaded driver library. Not copyable; unloads the library when
/// destroyed, so everything made through it must be gone by then.
class CudaDriver {
public:
  /// Opens `library`, resolves every entry point of CudaDriverApi, calls
  /// cuInit(0) and counts the devices. Fails when the library is missing,
  /// lacks an entry point, or finds no device; the message says which, and
  /// that --device=cuda needs an NVIDIA GPU and driver.
  static Status load(std::unique_ptr<CudaDriver> &out,
                     const std::string &library = kCudaDriverLibrary);
  ~CudaDriver();
  CudaDriver(const CudaDriver &) = delete;
  CudaDriver &operator=(const CudaDriver &) = delete;

  int deviceCount() const { return devices; }
  /// The driver's version as it reports it (e.g. 13000 for 13.0).
  int version() const { return driverVersion; }
  Status deviceInfo(int ordinal, CudaDeviceInfo &info) const;
  /// "cuFoo failed: CUDA_ERROR_..." for a failed call; ok for success.
  Status check(cuda::Result r, const char *what) const;
  const CudaDriverApi &api() const { return fns; }

private:
  CudaDriver() = default;
  void *handle = nullptr;
  CudaDriverApi fns;
  int devices = 0;
  int driverVersion = 0;
};

/// One device's primary context made current on the calling thread, with
/// the module loading, memory and launches the GPU tests need. Releases the
/// context when destroyed.
class CudaContext {
public:
  static Status create(const CudaDriver &driver, int ordinal,
                       std::unique_ptr<CudaContext> &out);
  ~CudaContext();
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  /// Loads a PTX module (the driver JIT-compiles it for the device).
  Status loadPtx(const std::string &ptx, cuda::Module &module);
  Status function(cuda::Module module, const std::string &name,
                  cuda::Function &fn);
  Status alloc(size_t bytes, cuda::DevicePtr &ptr);
  Status free(cuda::DevicePtr ptr);
  Status copyToDevice(cuda::DevicePtr dst, const void *src, size_t bytes);
  Status copyToHost(void *dst, cuda::DevicePtr src, size_t bytes);
  /// A 1-D launch on the default stream; `params` as cuLaunchKernel takes
  /// them (a pointer to each argument's value).
  Status launch(cuda::Function fn, unsigned blocks, unsigned threads,
                void **params);
  Status synchronize();

private:
  CudaContext(const CudaDriver &driver) : driver(driver) {}
  const CudaDriver &driver;
  cuda::Device device = 0;
  cuda::Context context = nullptr;
  bool retained = false;
  std::vector<cuda::Module> modules;
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_CUDADRIVER_H
