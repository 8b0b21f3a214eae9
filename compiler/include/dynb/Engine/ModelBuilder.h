//===- ModelBuilder.h - A model built in C++: parameters and modules -*- C++
//-*-===//
//
// The typed way to give an Engine a model it did not read from a file: the
// application declares parameters and writes each module's body op by op
// (arguments, linears, elementwise ops, concat, slice, outputs), then sets
// EngineOptions::model. The Engine imports it with the same importer and
// verifier as a model file, so its errors are the same located messages,
// naming the model, the module and the node ("treelstm: module 'leaf',
// node 3 (linear): ..."). Nothing is checked while building: a builder
// records, Engine::load judges.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_ENGINE_MODELBUILDER_H
#define DYNB_ENGINE_MODELBUILDER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace llvm::json {
class Object;
} // namespace llvm::json

namespace dynb {

class ModelBuilder;

/// A value inside a module body: result `result` of node `node`.
struct ModuleValue {
  uint32_t node = ~0u;
  uint32_t result = 0;
};

/// The body of one module, written in order; a handle into its
/// ModelBuilder, valid as long as the builder.
class ModuleBuilder {
public:
  /// The next argument of the module, a vector of `shape` (one dimension
  /// for the CPU lowering, C x H x W for feature maps).
  ModuleValue arg(llvm::ArrayRef<int64_t> shape);
  /// weight · x (+ bias), the parameters named as declared.
  ModuleValue linear(ModuleValue x, llvm::StringRef weight,
                     std::optional<llvm::StringRef> bias = {});
#define DYNB_UNARY_OP(Name, mnemonic) ModuleValue mnemonic(ModuleValue x);
#define DYNB_BINARY_OP(Name, mnemonic)                                         \
  ModuleValue mnemonic(ModuleValue a, ModuleValue b);
#include "dynb/Dialect/ElementwiseOps.def"
  ModuleValue concat(llvm::ArrayRef<ModuleValue> parts);
  ModuleValue slice(ModuleValue x, int64_t offset, int64_t size);
  /// The module's next result.
  void output(ModuleValue v);

private:
  friend class ModelBuilder;
  ModuleBuilder(ModelBuilder *model, size_t index)
      : model_(model), index_(index) {}
  ModuleValue append(llvm::StringRef op, llvm::ArrayRef<ModuleValue> inputs,
                     llvm::json::Object extra);
  ModelBuilder *model_;
  size_t index_;
};

class ModelBuilder {
public:
  /// `name` names the model in messages (as a file name would).
  explicit ModelBuilder(std::string name = "model");
  ~ModelBuilder();
  /// A copy is a model of its own (building on it leaves this one as it
  /// is); handles from this one do not write to it.
  ModelBuilder(const ModelBuilder &other);
  ModelBuilder &operator=(const ModelBuilder &other);
  ModelBuilder(ModelBuilder &&) noexcept;
  ModelBuilder &operator=(ModelBuilder &&) noexcept;

  /// Declares an F32 parameter; its values come from the EngineOptions'
  /// paramsPath or seed, or later from Engine::parameters().
  void param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape);
  /// Starts a module; `experts` > 0 makes it an expert module of that
  /// many experts (for Instance::dispatch), whose linears read stacked
  /// weights.
  ModuleBuilder module(llvm::StringRef name, int64_t experts = 0);

  const std::string &name() const;
  /// The model as interchange values (docs/interchange.md's "model"), for
  /// the importer.
  const llvm::json::Object &model() const;

private:
  friend class ModuleBuilder;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace dynb

#endif // DYNB_ENGINE_MODELBUILDER_H
