//===- CudaAbiCheck.cpp - CudaDriver.h's declarations against cuda.h ------===//
//
// Built only where a CUDA toolkit's cuda.h is found (see CMakeLists.txt):
// every handle type, constant and entry-point signature CudaDriver declares
// for itself must match the driver API's, or this file does not compile.
// The enums of cuda.h (CUresult, CUdevice_attribute) are passed as int.
//
//===----------------------------------------------------------------------===//
#include "dynb/Runtime/CudaDriver.h"

#include <cuda.h>

#include <type_traits>

using namespace dynb::rt;

namespace {

/// A cuda.h type as CudaDriver spells it.
template <typename T> struct AsDeclared { using type = T; };
template <> struct AsDeclared<CUresult> { using type = int; };
template <> struct AsDeclared<CUdevice_attribute> { using type = int; };
template <typename T> struct AsDeclared<T *> {
  using type = typename AsDeclared<T>::type *;
};
template <typename R, typename... A> struct AsDeclared<R (*)(A...)> {
  using type =
      typename AsDeclared<R>::type (*)(typename AsDeclared<A>::type...);
};

template <typename Ours, typename Theirs>
constexpr bool kSame = std::is_same_v<Ours, typename AsDeclared<Theirs>::type>;

static_assert(std::is_same_v<cuda::Context, CUcontext>);
static_assert(std::is_same_v<cuda::Module, CUmodule>);
static_assert(std::is_same_v<cuda::Function, CUfunction>);
static_assert(std::is_same_v<cuda::Stream, CUstream>);
static_assert(std::is_same_v<cuda::Device, CUdevice>);
static_assert(std::is_same_v<cuda::DevicePtr, CUdeviceptr>);
static_assert(sizeof(cuda::Result) == sizeof(CUresult));
static_assert(cuda::kSuccess == CUDA_SUCCESS);
static_assert(cuda::kErrorNoDevice == CUDA_ERROR_NO_DEVICE);
static_assert(cuda::kAttrComputeCapabilityMajor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(cuda::kAttrComputeCapabilityMinor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);

// Each entry point, against the symbol CudaDriver::load resolves.
static_assert(kSame<decltype(CudaDriverApi::init), decltype(&cuInit)>);
static_assert(kSame<decltype(CudaDriverApi::driverGetVersion),
                    decltype(&cuDriverGetVersion)>);
static_assert(kSame<decltype(CudaDriverApi::getErrorString),
                    decltype(&cuGetErrorString)>);
static_assert(kSame<decltype(CudaDriverApi::deviceGetCount),
                    decltype(&cuDeviceGetCount)>);
static_assert(
    kSame<decltype(CudaDriverApi::deviceGet), decltype(&cuDeviceGet)>);
static_assert(
    kSame<decltype(CudaDriverApi::deviceGetName), decltype(&cuDeviceGetName)>);
static_assert(kSame<decltype(CudaDriverApi::deviceGetAttribute),
                    decltype(&cuDeviceGetAttribute)>);
static_assert(kSame<decltype(CudaDriverApi::deviceTotalMem),
                    decltype(&cuDeviceTotalMem_v2)>);
static_assert(kSame<decltype(CudaDriverApi::primaryCtxRetain),
                    decltype(&cuDevicePrimaryCtxRetain)>);
static_assert(kSame<decltype(CudaDriverApi::primaryCtxRelease),
                    decltype(&cuDevicePrimaryCtxRelease_v2)>);
static_assert(
    kSame<decltype(CudaDriverApi::ctxSetCurrent), decltype(&cuCtxSetCurrent)>);
static_assert(kSame<decltype(CudaDriverApi::ctxSynchronize),
                    decltype(&cuCtxSynchronize)>);
static_assert(kSame<decltype(CudaDriverApi::moduleLoadData),
                    decltype(&cuModuleLoadData)>);
static_assert(
    kSame<decltype(CudaDriverApi::moduleUnload), decltype(&cuModuleUnload)>);
static_assert(kSame<decltype(CudaDriverApi::moduleGetFunction),
                    decltype(&cuModuleGetFunction)>);
static_assert(
    kSame<decltype(CudaDriverApi::launchKernel), decltype(&cuLaunchKernel)>);
static_assert(
    kSame<decltype(CudaDriverApi::memAlloc), decltype(&cuMemAlloc_v2)>);
static_assert(kSame<decltype(CudaDriverApi::memFree), decltype(&cuMemFree_v2)>);
static_assert(
    kSame<decltype(CudaDriverApi::memcpyHtoD), decltype(&cuMemcpyHtoD_v2)>);
static_assert(
    kSame<decltype(CudaDriverApi::memcpyDtoH), decltype(&cuMemcpyDtoH_v2)>);

} // namespace
