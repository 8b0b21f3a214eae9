//===- ParameterStore.h - Named f32 tensors shared by every instance ------===//
#ifndef DYNB_RUNTIME_PARAMETERSTORE_H
#define DYNB_RUNTIME_PARAMETERSTORE_H

#include "dynb/Runtime/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dynb::rt {

struct ParamTensor {
  std::vector<int64_t> shape;
  std::vector<float> data; // row-major, 64-byte aligned storage not required
  int64_t numElements() const;
};

class ParameterStore {
public:
  /// Adds or replaces a tensor; fails if data.size() != product(shape).
  Status add(std::string name, std::vector<int64_t> shape,
             std::vector<float> data);
  /// Deterministic initialisation for benchmarks: uniform in
  /// [-1/sqrt(fanIn), 1/sqrt(fanIn)] where fanIn is the last dimension
  /// (for rank 4, [out, in, kh, kw], the product of the last three),
  /// from a generator seeded by (seed, name).
  void addSeeded(std::string name, std::vector<int64_t> shape, uint64_t seed);
  const ParamTensor *find(std::string_view name) const;
  /// For updates in place (an optimizer step); the shape must not change.
  ParamTensor *findMutable(std::string_view name);
  /// Takes a tensor out; false if there was none of that name.
  bool remove(std::string_view name);
  size_t size() const { return tensors_.size(); }
  std::vector<std::string> names() const;

private:
  std::map<std::string, ParamTensor, std::less<>> tensors_;
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_PARAMETERSTORE_H
