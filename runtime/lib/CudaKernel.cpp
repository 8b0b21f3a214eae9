//===- CudaKernel.cpp - Memref descriptors and the grid of a launch -------===//
#include "dynb/Runtime/CudaKernel.h"

#include <fmt/format.h>

#include <array>
#include <limits>

using namespace dynb::rt;

Status dynb::rt::launchElementwise(CudaContext &ctx, cuda::Function fn,
                                   const std::vector<DeviceWindow> &windows,
                                   unsigned blockSize) {
  if (windows.empty())
    return Status::error("a GPU kernel launch needs at least one window");
  if (blockSize == 0)
    return Status::error("a GPU kernel launch needs a block size");
  const DeviceWindow &shape = windows.front();
  for (size_t i = 0; i < windows.size(); ++i) {
    const DeviceWindow &w = windows[i];
    if (w.rows != shape.rows || w.cols != shape.cols)
      return Status::error(fmt::format(
          "GPU kernel argument {} is [{} x {}], argument 0 is [{} x {}]: an "
          "elementwise kernel's windows have one shape",
          i, w.rows, w.cols, shape.rows, shape.cols));
    if (w.rows < 0 || w.cols < 0 || w.offset < 0 || w.rowStride < w.cols)
      return Status::error(fmt::format(
          "GPU kernel argument {} is not a window: offset {}, [{} x {}], row "
          "stride {}",
          i, w.offset, w.rows, w.cols, w.rowStride));
  }
  // The kernel computes its linear index in 64 bits; the grid's x dimension
  // holds up to 2^31 - 1 blocks.
  if (shape.cols != 0 &&
      shape.rows > std::numeric_limits<int64_t>::max() / shape.cols)
    return Status::error("GPU kernel launch: the window has too many elements");
  uint64_t elements = uint64_t(shape.rows) * uint64_t(shape.cols);
  if (elements == 0)
    return Status::ok();
  uint64_t blocks = (elements + blockSize - 1) / blockSize;
  if (blocks > uint64_t(std::numeric_limits<int32_t>::max()))
    return Status::error(fmt::format(
        "GPU kernel launch: {} elements need {} blocks of {}, more than a "
        "grid holds",
        elements, blocks, blockSize));

  // The memref descriptor of each window, field by field, and a pointer to
  // each field: what cuLaunchKernel reads the kernel's parameters from.
  std::vector<std::array<int64_t, 7>> fields(windows.size());
  std::vector<void *> params;
  params.reserve(windows.size() * 7);
  for (size_t i = 0; i < windows.size(); ++i) {
    const DeviceWindow &w = windows[i];
    fields[i] = {int64_t(w.base), int64_t(w.base), w.offset, w.rows,
                 w.cols,          w.rowStride,     1};
    for (int64_t &f : fields[i])
      params.push_back(&f);
  }
  return ctx.launch(fn, unsigned(blocks), blockSize, params.data());
}
