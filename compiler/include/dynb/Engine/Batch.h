//===- Batch.h - Per-request graphs built with typed handles ----*- C++ -*-===//
//
// A Batch collects instances; each instance's graph is built node by node
// through an Instance handle (embedding lookups, module calls, per-instance
// ops) and ends with its outputs. Nodes live in an arena and get their
// signature once, when they are added: building costs a few tens of
// nanoseconds a node. Misuse (a value of another batch or instance, wrong
// widths, an index outside a table) is recorded as a located error naming
// the instance and node; the node's Value is then invalid, and
// Engine::run() reports the first error instead of running.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_ENGINE_BATCH_H
#define DYNB_ENGINE_BATCH_H

#include "dynb/Dialect/ElementwiseKind.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>

namespace dynb {

class Engine;
class Batch;
namespace detail {
struct BatchData;
}

/// A module of the loaded model (Engine::module()).
struct Module {
  uint32_t id = ~0u;
};

/// A parameter of the loaded model (Engine::param()): an embedding table
/// or a linear op's weight or bias.
struct Param {
  uint32_t id = ~0u;
};

/// An expert module of the loaded model (Engine::experts()): run only by
/// Instance::dispatch, never called.
struct Experts {
  uint32_t id = ~0u;
};

/// One per-instance value: a result of a node of one batch. Cheap to copy.
struct Value {
  uint64_t batch = 0;
  uint32_t node = ~0u;
  uint32_t result = 0;
  bool valid() const { return node != ~0u; }
};

/// Builds one instance's graph. A handle into its Batch: valid while the
/// batch is not run or cleared.
class Instance {
public:
  /// Row `row` of the 2-D parameter `table`.
  Value embedding(Param table, int64_t row);
  /// A call of `module`; one Value per module result.
  llvm::SmallVector<Value, 2> call(Module module, llvm::ArrayRef<Value> args);
  /// weight x + bias (weight [N x K], bias [N]) on a K-vector.
  Value linear(Value x, Param weight, std::optional<Param> bias = {});
  /// One method per elementwise op of the dialect (ElementwiseOps.def),
  /// named as the op: add(a, b), mul(a, b), sigmoid(x), tanh(x), relu(x),
  /// ... Operands have one width, which the result has.
#define DYNB_UNARY_OP(Name, mnemonic) Value mnemonic(Value x);
#define DYNB_BINARY_OP(Name, mnemonic) Value mnemonic(Value a, Value b);
#include "dynb/Dialect/ElementwiseOps.def"
  /// The elementwise op `kind` on its elementwiseArity(kind) operands.
  Value elementwise(ElementwiseKind kind, llvm::ArrayRef<Value> operands);
  Value concat(llvm::ArrayRef<Value> parts);
  /// A loss node: the softmax cross-entropy of `logits` against class
  /// `label`, one element. A batch's loss sums every loss node of its
  /// instances (the CLI's runs report it).
  Value softmaxXent(Value logits, int64_t label);
  /// `size` elements of x from `offset`.
  Value slice(Value x, int64_t offset, int64_t size);
  /// A sparsely gated mixture of experts on a d-vector, as the interchange
  /// format's `dispatch` node (docs/moe.md): gate [E x d] scores x (plus
  /// seeded noise through `noise` [E x d] when given), and the result is
  /// the gate-weighted sum of `experts` run as each of the `k` best
  /// scored experts. All of a batch's dispatches of one signature run as
  /// one launch.
  Value dispatch(Value x, Param gate, Experts experts, int64_t k,
                 std::optional<Param> noise = {}, uint64_t noiseSeed = 0);
  /// Appends an output of this instance.
  void output(Value v);

  /// The width of a valid value of this batch (0 for an invalid one).
  int64_t width(Value v) const;
  uint32_t index() const { return index_; }
  Batch *batch() const { return batch_; }

private:
  friend class Batch;
  Instance(Batch *batch, uint32_t index) : batch_(batch), index_(index) {}
  Batch *batch_;
  uint32_t index_;
};

class Batch {
public:
  explicit Batch(Engine &engine);
  ~Batch();
  Batch(Batch &&) noexcept;
  Batch &operator=(Batch &&) noexcept;

  /// Starts a new instance.
  Instance addInstance();
  /// An earlier instance's handle.
  Instance instance(uint32_t index) { return Instance(this, index); }

  size_t numInstances() const;
  size_t numNodes() const;
  /// The first recorded misuse, as a located message ("instance 2, node 5
  /// (call @leaf): ..."); success when there is none.
  llvm::Error error() const;
  /// Whether instance `index` recorded a misuse.
  bool failed(uint32_t index) const;
  /// The located message of instance `index`'s misuse (empty: none), for
  /// a caller that reports each misuse where it happens (the Python
  /// module raises it at the call that made it).
  llvm::StringRef errorOf(uint32_t index) const;
  /// Drops instance `index` from the results (and forgets its error): its
  /// valid nodes still run, its outputs are not returned. Results keep
  /// their instance numbering; a dropped instance has no outputs.
  void discard(uint32_t index);
  /// Forgets every instance; earlier Values become stale.
  void clear();

  detail::BatchData &data() { return *data_; }

private:
  std::unique_ptr<detail::BatchData> data_;
};

} // namespace dynb

#endif // DYNB_ENGINE_BATCH_H
