//===- CudaKernel.h - Launching a compiled elementwise kernel ---*- C++ -*-===//
//
// The runtime's side of the GPU kernel ABI (dynb/JIT/GpuKernelCompiler.h):
// each kernel argument is a 2-D f32 window passed as MLIR's memref
// descriptor (allocated and aligned pointer, offset, sizes, strides, all 64
// bits), and the launch is 1-D with one thread an element.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_RUNTIME_CUDAKERNEL_H
#define DYNB_RUNTIME_CUDAKERNEL_H

#include "dynb/Runtime/CudaDriver.h"

#include <cstdint>
#include <vector>

namespace dynb::rt {

/// A [rows x cols] window of a device buffer of floats: element (i, j) is at
/// base + (offset + i * rowStride + j) floats.
struct DeviceWindow {
  cuda::DevicePtr base = 0;
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t rowStride = 0;
};

/// Launches `fn` over `windows` (in the order of the kernel's arguments, as
/// its gpu.launch_func lists them) with `blockSize` threads a block, the
/// block size the kernel was compiled for. Every window must have the same
/// rows and cols; an empty one launches nothing. Does not synchronise.
Status launchElementwise(CudaContext &ctx, cuda::Function fn,
                         const std::vector<DeviceWindow> &windows,
                         unsigned blockSize);

} // namespace dynb::rt

#endif // DYNB_RUNTIME_CUDAKERNEL_H
