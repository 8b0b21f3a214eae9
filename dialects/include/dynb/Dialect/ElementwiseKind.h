//===- ElementwiseKind.h - The elementwise ops as an enum, without MLIR ---===//
//
// For the stages that name elementwise ops without building IR (the
// interchange reader, the Engine's builder): the kinds, their names and
// arities, all from ElementwiseOps.def.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DIALECT_ELEMENTWISEKIND_H
#define DYNB_DIALECT_ELEMENTWISEKIND_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace dynb {

enum class ElementwiseKind : uint8_t {
#define DYNB_ELEMENTWISE_OP(Name, mnemonic, arity) Name,
#include "dynb/Dialect/ElementwiseOps.def"
};

inline constexpr unsigned kNumElementwiseKinds = 0
#define DYNB_ELEMENTWISE_OP(Name, mnemonic, arity) +1
#include "dynb/Dialect/ElementwiseOps.def"
    ;

/// The op's mnemonic: `tanh` for ElementwiseKind::Tanh.
constexpr const char *elementwiseMnemonic(ElementwiseKind kind) {
  switch (kind) {
#define DYNB_ELEMENTWISE_OP(Name, mnemonic, arity)                             \
  case ElementwiseKind::Name:                                                  \
    return #mnemonic;
#include "dynb/Dialect/ElementwiseOps.def"
  }
  return "";
}

/// How many operands the op takes.
constexpr unsigned elementwiseArity(ElementwiseKind kind) {
  switch (kind) {
#define DYNB_ELEMENTWISE_OP(Name, mnemonic, arity)                             \
  case ElementwiseKind::Name:                                                  \
    return arity;
#include "dynb/Dialect/ElementwiseOps.def"
  }
  return 0;
}

/// The kind whose mnemonic is `name`, if any.
constexpr std::optional<ElementwiseKind>
elementwiseKindNamed(std::string_view name) {
#define DYNB_ELEMENTWISE_OP(Name, mnemonic, arity)                             \
  if (name == #mnemonic)                                                       \
    return ElementwiseKind::Name;
#include "dynb/Dialect/ElementwiseOps.def"
  return std::nullopt;
}

} // namespace dynb

#endif // DYNB_DIALECT_ELEMENTWISEKIND_H
