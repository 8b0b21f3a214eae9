//===- ParameterStore.cpp - Named f32 tensors shared by every instance ----===//
#include "dynb/Runtime/ParameterStore.h"

#include "dynb/Runtime/ElementCount.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

using namespace dynb::rt;

namespace {

/// FNV-1a: unlike std::hash its value is fixed by definition, so seeded
/// parameters are identical across runs, compilers and machines.
uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char byte : text) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/// splitmix64: a tiny generator whose output is fully specified, unlike the
/// distributions of <random>, whose results vary between standard libraries.
/// Its state after i steps is seed + i * gamma, so element i of a tensor is
/// computed on its own and initialisation splits across threads with the
/// same values as a sequential run.
constexpr uint64_t kSplitMixGamma = 0x9e3779b97f4a7c15ull;

uint64_t splitMix64(uint64_t state) {
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) with the 24 bits a float mantissa holds.
float unitFloat(uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

} // namespace

int64_t ParamTensor::numElements() const {
  // -1 for a shape past the bound: it matches no data and no plan buffer.
  return dynb::checkedElementCount(shape).value_or(-1);
}

Status ParameterStore::add(std::string name, std::vector<int64_t> shape,
                           std::vector<float> data) {
  if (std::any_of(shape.begin(), shape.end(),
                  [](int64_t dim) { return dim < 0; }))
    return Status::error(fmt::format("parameter '{}': negative dimension in "
                                     "shape [{}]",
                                     name, fmt::join(shape, ", ")));
  ParamTensor tensor;
  tensor.shape = std::move(shape);
  tensor.data = std::move(data);
  if (tensor.numElements() != static_cast<int64_t>(tensor.data.size()))
    return Status::error(fmt::format(
        "parameter '{}': shape [{}] has {} elements but {} values were given",
        name, fmt::join(tensor.shape, ", "), tensor.numElements(),
        tensor.data.size()));
  try {
    tensors_.insert_or_assign(std::move(name), std::move(tensor));
  } catch (const std::exception &e) {
    return Status::error(fmt::format("parameter store: {}", e.what()));
  }
  return Status::ok();
}

void ParameterStore::addSeeded(std::string name, std::vector<int64_t> shape,
                               uint64_t seed) {
  // A negative dimension cannot describe a tensor; it is stored as 0 so the
  // shape and the data always agree.
  for (int64_t &dim : shape)
    dim = std::max<int64_t>(dim, 0);
  ParamTensor tensor;
  tensor.shape = std::move(shape);
  int64_t fanIn = tensor.shape.empty() ? 1 : tensor.shape.back();
  // A convolution weight [out, in, kh, kw] sums in * kh * kw products (the
  // fan-in PyTorch's nn.Conv2d uses); a table of maps is bounded the same.
  if (tensor.shape.size() == 4)
    fanIn = tensor.shape[1] * tensor.shape[2] * tensor.shape[3];
  float bound = fanIn > 0 ? 1.0f / std::sqrt(static_cast<float>(fanIn)) : 0.0f;
  uint64_t start = seed ^ fnv1a64(name);
  tensor.data.resize(static_cast<size_t>(tensor.numElements()));
  float *data = tensor.data.data();
  int64_t count = tensor.numElements();
  // Stacked expert weights reach gigabytes: every thread fills a share.
#pragma omp parallel for schedule(static) if (count > (int64_t(1) << 20))
  for (int64_t i = 0; i < count; ++i)
    data[i] =
        (2.0f *
             unitFloat(splitMix64(start + uint64_t(i + 1) * kSplitMixGamma)) -
         1.0f) *
        bound;
  tensors_.insert_or_assign(std::move(name), std::move(tensor));
}

bool ParameterStore::remove(std::string_view name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return false;
  tensors_.erase(it);
  return true;
}

ParamTensor *ParameterStore::findMutable(std::string_view name) {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const ParamTensor *ParameterStore::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> ParameterStore::names() const {
  std::vector<std::string> result;
  result.reserve(tensors_.size());
  for (const auto &entry : tensors_)
    result.push_back(entry.first);
  return result;
}
