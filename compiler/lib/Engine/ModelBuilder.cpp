//===- ModelBuilder.cpp - A model built in C++ as interchange values ------===//
//
// The builder writes the interchange form's model as llvm::json values (no
// text), node references as [node, result], so that the importer reads it
// exactly as it reads a file's model.
//
//===----------------------------------------------------------------------===//
#include "dynb/Engine/ModelBuilder.h"

#include "dynb/Dialect/ElementwiseKind.h"

#include "llvm/Support/JSON.h"

#include <vector>

using namespace dynb;
namespace json = llvm::json;

struct ModelBuilder::Impl {
  std::string name;
  json::Object model{{"params", json::Array()}, {"modules", json::Array()}};
  json::Array &params() { return *model.getArray("params"); }
  json::Object &module(size_t index) {
    return *(*model.getArray("modules"))[index].getAsObject();
  }
};

ModelBuilder::ModelBuilder(std::string name) : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
}
ModelBuilder::~ModelBuilder() = default;
ModelBuilder::ModelBuilder(const ModelBuilder &other)
    : impl_(std::make_unique<Impl>(*other.impl_)) {}
ModelBuilder &ModelBuilder::operator=(const ModelBuilder &other) {
  if (this != &other)
    impl_ = std::make_unique<Impl>(*other.impl_);
  return *this;
}
ModelBuilder::ModelBuilder(ModelBuilder &&) noexcept = default;
ModelBuilder &ModelBuilder::operator=(ModelBuilder &&) noexcept = default;

static json::Array shapeOf(llvm::ArrayRef<int64_t> shape) {
  json::Array a;
  for (int64_t d : shape)
    a.push_back(d);
  return a;
}

void ModelBuilder::param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape) {
  impl_->params().push_back(
      json::Object{{"name", name.str()}, {"shape", shapeOf(shape)}});
}

ModuleBuilder ModelBuilder::module(llvm::StringRef name, int64_t experts) {
  json::Object m{{"name", name.str()},
                 {"nodes", json::Array()},
                 {"outputs", json::Array()}};
  if (experts > 0)
    m["experts"] = experts;
  json::Array &modules = *impl_->model.getArray("modules");
  modules.push_back(std::move(m));
  return ModuleBuilder(this, modules.size() - 1);
}

const std::string &ModelBuilder::name() const { return impl_->name; }
const json::Object &ModelBuilder::model() const { return impl_->model; }

static json::Value refOf(ModuleValue v) {
  return json::Array{static_cast<int64_t>(v.node),
                     static_cast<int64_t>(v.result)};
}

ModuleValue ModuleBuilder::append(llvm::StringRef op,
                                  llvm::ArrayRef<ModuleValue> inputs,
                                  json::Object extra) {
  json::Object &m = model_->impl_->module(index_);
  json::Array &nodes = *m.getArray("nodes");
  extra["op"] = op.str();
  if (!inputs.empty()) {
    json::Array refs;
    for (ModuleValue v : inputs)
      refs.push_back(refOf(v));
    extra["inputs"] = std::move(refs);
  }
  nodes.push_back(std::move(extra));
  return ModuleValue{static_cast<uint32_t>(nodes.size() - 1), 0};
}

ModuleValue ModuleBuilder::arg(llvm::ArrayRef<int64_t> shape) {
  return append("arg", {}, json::Object{{"shape", shapeOf(shape)}});
}

ModuleValue ModuleBuilder::linear(ModuleValue x, llvm::StringRef weight,
                                  std::optional<llvm::StringRef> bias) {
  json::Object extra{{"weight", weight.str()}};
  if (bias)
    extra["bias"] = bias->str();
  return append("linear", {x}, std::move(extra));
}

#define DYNB_UNARY_OP(Name, mnemonic)                                          \
  ModuleValue ModuleBuilder::mnemonic(ModuleValue x) {                         \
    return append(elementwiseMnemonic(ElementwiseKind::Name), {x}, {});        \
  }
#define DYNB_BINARY_OP(Name, mnemonic)                                         \
  ModuleValue ModuleBuilder::mnemonic(ModuleValue a, ModuleValue b) {          \
    return append(elementwiseMnemonic(ElementwiseKind::Name), {a, b}, {});     \
  }
#include "dynb/Dialect/ElementwiseOps.def"

ModuleValue ModuleBuilder::concat(llvm::ArrayRef<ModuleValue> parts) {
  return append("concat", parts, {});
}

ModuleValue ModuleBuilder::slice(ModuleValue x, int64_t offset, int64_t size) {
  return append("slice", {x}, json::Object{{"offset", offset}, {"size", size}});
}

void ModuleBuilder::output(ModuleValue v) {
  json::Object &m = model_->impl_->module(index_);
  m.getArray("outputs")->push_back(refOf(v));
}
