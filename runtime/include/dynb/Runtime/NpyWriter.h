//===- NpyWriter.h - Writes .npy files atomically -------------------------===//
#ifndef DYNB_RUNTIME_NPYWRITER_H
#define DYNB_RUNTIME_NPYWRITER_H

#include "dynb/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dynb::rt {

/// Writes a little-endian f32 .npy (format 1.0) of the given shape. The file
/// is written to a temporary beside `path` and renamed over it, so a failure
/// never leaves a partial file and keeps any previous one intact.
Status writeNpyAtomic(const std::string &path,
                      const std::vector<int64_t> &shape,
                      const std::vector<float> &data);

} // namespace dynb::rt

#endif // DYNB_RUNTIME_NPYWRITER_H
