//===- Safetensors.h - Parameters from safetensors files --------*- C++ -*-===//
#ifndef DYNB_IMPORT_SAFETENSORS_H
#define DYNB_IMPORT_SAFETENSORS_H

#include "dynb/Runtime/ParameterStore.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dynb {

/// Reads every tensor of a safetensors file into `store`. Only F32 tensors
/// are accepted; the header is checked against the file (offsets in bounds,
/// sizes equal to shape x 4 bytes, no overlaps) before anything is copied.
/// Errors name the file and the tensor.
/// Files whose tensors hold more than `maxBytes` (0: no limit) are refused
/// before anything is copied; the message calls that limit `limitName`.
llvm::Error loadSafetensors(llvm::StringRef path, rt::ParameterStore &store,
                            uint64_t maxBytes = 0,
                            llvm::StringRef limitName = "the memory limit");

/// Writes tensors as a safetensors file (F32), atomically: tests and
/// examples use it to produce parameter files.
struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  const std::vector<float> *data;
};
llvm::Error writeSafetensors(llvm::StringRef path,
                             llvm::ArrayRef<NamedTensor> tensors);

} // namespace dynb

#endif // DYNB_IMPORT_SAFETENSORS_H
