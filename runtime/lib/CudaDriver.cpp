//===- CudaDriver.cpp - dlopen()ed CUDA driver and a primary context ------===//
#include "dynb/Runtime/CudaDriver.h"

#include <fmt/format.h>

#include <dlfcn.h>

using namespace dynb::rt;

namespace {

/// The message of a library dlopen() refused: missing, or there but not
/// loadable (another architecture, a missing dependency).
std::string noDriver(const std::string &library, const std::string &why) {
  if (why.empty() || why.find("No such file") != std::string::npos)
    return fmt::format("no CUDA driver ({} not found); --device=cuda needs an "
                       "NVIDIA GPU and driver",
                       library);
  return fmt::format("no usable CUDA driver ({} could not be loaded: {}); "
                     "--device=cuda needs an NVIDIA GPU and driver",
                     library, why);
}

/// Resolves one entry point into `slot`; the name is the driver's symbol.
template <typename Fn>
bool resolve(void *handle, const char *symbol, Fn &slot, std::string &missing) {
  slot = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (!slot && missing.empty())
    missing = symbol;
  return slot != nullptr;
}

} // namespace

Status CudaDriver::load(std::unique_ptr<CudaDriver> &out,
                        const std::string &library) {
  out.reset();
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace, where
  // they could clash with a CUDA runtime another library brings.
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    // dlerror() repeats the name; keep only the reason after it.
    std::string reason = why ? why : "";
    if (size_t colon = reason.rfind(": "); colon != std::string::npos)
      reason = reason.substr(colon + 2);
    return Status::error(noDriver(library, reason));
  }
  std::unique_ptr<CudaDriver> d(new CudaDriver());
  d->handle = handle;
  CudaDriverApi &f = d->fns;
  std::string missing;
  resolve(handle, "cuInit", f.init, missing);
  resolve(handle, "cuDriverGetVersion", f.driverGetVersion, missing);
  resolve(handle, "cuGetErrorString", f.getErrorString, missing);
  resolve(handle, "cuDeviceGetCount", f.deviceGetCount, missing);
  resolve(handle, "cuDeviceGet", f.deviceGet, missing);
  resolve(handle, "cuDeviceGetName", f.deviceGetName, missing);
  resolve(handle, "cuDeviceGetAttribute", f.deviceGetAttribute, missing);
  resolve(handle, "cuDeviceTotalMem_v2", f.deviceTotalMem, missing);
  resolve(handle, "cuDevicePrimaryCtxRetain", f.primaryCtxRetain, missing);
  resolve(handle, "cuDevicePrimaryCtxRelease_v2", f.primaryCtxRelease, missing);
  resolve(handle, "cuCtxSetCurrent", f.ctxSetCurrent, missing);
  resolve(handle, "cuCtxSynchronize", f.ctxSynchronize, missing);
  resolve(handle, "cuModuleLoadData", f.moduleLoadData, missing);
  resolve(handle, "cuModuleUnload", f.moduleUnload, missing);
  resolve(handle, "cuModuleGetFunction", f.moduleGetFunction, missing);
  resolve(handle, "cuLaunchKernel", f.launchKernel, missing);
  resolve(handle, "cuMemAlloc_v2", f.memAlloc, missing);
  resolve(handle, "cuMemFree_v2", f.memFree, missing);
  resolve(handle, "cuMemcpyHtoD_v2", f.memcpyHtoD, missing);
  resolve(handle, "cuMemcpyDtoH_v2", f.memcpyDtoH, missing);
  if (!missing.empty())
    return Status::error(
        fmt::format("{} is not a usable CUDA driver: it has no entry point {}",
                    library, missing));

  cuda::Result r = f.init(0);
  if (r == cuda::kErrorNoDevice)
    return Status::error(fmt::format(
        "the CUDA driver ({}) found no device; --device=cuda needs an NVIDIA "
        "GPU",
        library));
  if (Status s = d->check(r, "cuInit"))
    return s;
  if (Status s =
          d->check(f.driverGetVersion(&d->driverVersion), "cuDriverGetVersion"))
    return s;
  if (Status s = d->check(f.deviceGetCount(&d->devices), "cuDeviceGetCount"))
    return s;
  if (d->devices <= 0)
    return Status::error(fmt::format(
        "the CUDA driver ({}) found no device; --device=cuda needs an NVIDIA "
        "GPU",
        library));
  out = std::move(d);
  return Status::ok();
}

CudaDriver::~CudaDriver() {
  if (handle)
    dlclose(handle);
}

Status CudaDriver::check(cuda::Result r, const char *what) const {
  if (r == cuda::kSuccess)
    return Status::ok();
  const char *text = nullptr;
  if (!fns.getErrorString || fns.getErrorString(r, &text) != cuda::kSuccess ||
      !text)
    text = "unknown error";
  return Status::error(
      fmt::format("{} failed: {} (CUDA error {})", what, text, r));
}

Status CudaDriver::deviceInfo(int ordinal, CudaDeviceInfo &info) const {
  if (ordinal < 0 || ordinal >= devices)
    return Status::error(fmt::format("no CUDA device {} (the driver found {})",
                                     ordinal, devices));
  cuda::Device dev;
  if (Status s = check(fns.deviceGet(&dev, ordinal), "cuDeviceGet"))
    return s;
  char name[256] = {};
  if (Status s = check(fns.deviceGetName(name, sizeof(name) - 1, dev),
                       "cuDeviceGetName"))
    return s;
  info.ordinal = ordinal;
  info.name = name;
  if (Status s =
          check(fns.deviceGetAttribute(&info.computeMajor,
                                       cuda::kAttrComputeCapabilityMajor, dev),
                "cuDeviceGetAttribute"))
    return s;
  if (Status s =
          check(fns.deviceGetAttribute(&info.computeMinor,
                                       cuda::kAttrComputeCapabilityMinor, dev),
                "cuDeviceGetAttribute"))
    return s;
  size_t bytes = 0;
  if (Status s = check(fns.deviceTotalMem(&bytes, dev), "cuDeviceTotalMem"))
    return s;
  info.totalMemoryBytes = bytes;
  return Status::ok();
}

Status CudaContext::create(const CudaDriver &driver, int ordinal,
                           std::unique_ptr<CudaContext> &out) {
  out.reset();
  if (ordinal < 0 || ordinal >= driver.deviceCount())
    return Status::error(fmt::format("no CUDA device {} (the driver found {})",
                                     ordinal, driver.deviceCount()));
  std::unique_ptr<CudaContext> c(new CudaContext(driver));
  const CudaDriverApi &f = driver.api();
  if (Status s = driver.check(f.deviceGet(&c->device, ordinal), "cuDeviceGet"))
    return s;
  // The primary context is the one the CUDA runtime (and so cuBLAS) uses;
  // sharing it lets a later cuBLAS step see the same allocations.
  if (Status s = driver.check(f.primaryCtxRetain(&c->context, c->device),
                              "cuDevicePrimaryCtxRetain"))
    return s;
  c->retained = true;
  if (Status s = driver.check(f.ctxSetCurrent(c->context), "cuCtxSetCurrent"))
    return s;
  out = std::move(c);
  return Status::ok();
}

CudaContext::~CudaContext() {
  const CudaDriverApi &f = driver.api();
  for (cuda::Module m : modules)
    (void)f.moduleUnload(m);
  if (retained)
    (void)f.primaryCtxRelease(device);
}

Status CudaContext::loadPtx(const std::string &ptx, cuda::Module &module) {
  if (Status s = driver.check(driver.api().moduleLoadData(&module, ptx.c_str()),
                              "cuModuleLoadData"))
    return s;
  modules.push_back(module);
  return Status::ok();
}

Status CudaContext::function(cuda::Module module, const std::string &name,
                             cuda::Function &fn) {
  return driver.check(driver.api().moduleGetFunction(&fn, module, name.c_str()),
                      "cuModuleGetFunction");
}

Status CudaContext::alloc(size_t bytes, cuda::DevicePtr &ptr) {
  return driver.check(driver.api().memAlloc(&ptr, bytes), "cuMemAlloc");
}

Status CudaContext::free(cuda::DevicePtr ptr) {
  return driver.check(driver.api().memFree(ptr), "cuMemFree");
}

Status CudaContext::copyToDevice(cuda::DevicePtr dst, const void *src,
                                 size_t bytes) {
  return driver.check(driver.api().memcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

Status CudaContext::copyToHost(void *dst, cuda::DevicePtr src, size_t bytes) {
  return driver.check(driver.api().memcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

Status CudaContext::launch(cuda::Function fn, unsigned blocks, unsigned threads,
                           void **params) {
  return driver.check(driver.api().launchKernel(fn, blocks, 1, 1, threads, 1, 1,
                                                0, nullptr, params, nullptr),
                      "cuLaunchKernel");
}

Status CudaContext::synchronize() {
  return driver.check(driver.api().ctxSynchronize(), "cuCtxSynchronize");
}
