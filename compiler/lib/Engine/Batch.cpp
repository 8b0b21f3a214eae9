//===- Batch.cpp - Building instance graphs in a node arena ---------------===//
//
// The fast path's first half: every node is checked (values of this batch
// and instance, widths, table rows), gets its signature id once, and is
// added to the BatchingGraph right away, so a run only schedules.
//
//===----------------------------------------------------------------------===//
#include "EngineModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <atomic>
#include <fmt/format.h>

using namespace dynb;
using namespace dynb::detail;

uint64_t detail::newBatchTag() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

const char *detail::opName(OpKind kind) {
  if (unsigned(kind) < kNumElementwiseKinds)
    return elementwiseMnemonic(ElementwiseKind(kind));
  switch (kind) {
  case OpKind::Concat:
    return "concat";
  case OpKind::Slice:
    return "slice";
  case OpKind::Linear:
    return "linear";
  case OpKind::Dispatch:
    return "dispatch";
  case OpKind::SoftmaxXent:
    return "softmax_xent";
  default:
    return "?";
  }
}

const OpInfo *EngineModel::internOp(const OpInfo &key) {
  // The key is the signature's bytes: kind, widths and attributes.
  llvm::SmallVector<int64_t, 8> words = {
      int64_t(key.kind), key.resultWidth,       key.a, key.b, key.topK,
      key.noise,         int64_t(key.noiseSeed)};
  llvm::append_range(words, key.operandWidths);
  llvm::StringRef bytes(reinterpret_cast<const char *>(words.data()),
                        words.size() * sizeof(int64_t));
  std::lock_guard<std::mutex> lock(opMutex);
  auto it = opByKey.find(bytes);
  if (it != opByKey.end())
    return it->second;
  OpInfo &info = ops.emplace_back(key);
  info.signature = modules.size() + params.size() + ops.size() - 1;
  opByKey[bytes] = &info;
  return &info;
}

BatchData::BatchData(Engine &engine)
    : engine(engine), model(engine.model()), tag(newBatchTag()) {}

void BatchData::reset() {
  nodes.clear();
  graph.clear();
  instances.clear();
  arena.Reset();
  firstFailed = ~0u;
  pendingReads.clear();
  tag = newBatchTag();
}

uint32_t BatchData::numResults(const Node &n) const {
  if (n.kind == NodeKind::Call)
    return static_cast<const ModuleInfo *>(n.info)->resultWidths.size();
  return 1;
}

int64_t BatchData::resultWidth(const Node &n, uint32_t result) const {
  switch (n.kind) {
  case NodeKind::Call:
    return static_cast<const ModuleInfo *>(n.info)->resultWidths[result];
  case NodeKind::Embedding:
    return static_cast<const ParamInfo *>(n.info)->cols;
  case NodeKind::Op:
    return static_cast<const OpInfo *>(n.info)->resultWidth;
  case NodeKind::Carried:
    return static_cast<const CarriedTable *>(n.info)->cols;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Node construction
//===----------------------------------------------------------------------===//

namespace {

/// Checks and adds one node of one instance; records the first misuse.
class NodeAdder {
public:
  NodeAdder(BatchData &d, uint32_t instance, const char *what,
            llvm::StringRef detail = {})
      : d(d), instance(instance), what(what), detail(detail) {}

  /// Fails (and records why) unless `v` is a valid value of this batch and
  /// instance; else returns its width.
  std::optional<int64_t> operand(Value v, unsigned index) {
    if (!ok())
      return std::nullopt;
    if (v.batch != d.tag) {
      fail(fmt::format("operand {} is a value of another batch (or of this "
                       "batch before it was run or cleared)",
                       index));
      return std::nullopt;
    }
    if (!v.valid()) {
      // An earlier node failed and said why; say nothing more.
      failQuietly();
      return std::nullopt;
    }
    if (v.node >= d.nodes.size()) {
      fail(fmt::format("operand {} is not a node of this batch", index));
      return std::nullopt;
    }
    const Node &n = *d.nodes[v.node];
    if (n.instance != instance) {
      fail(fmt::format("operand {} belongs to instance {}: instances do not "
                       "share values",
                       index, n.instance));
      return std::nullopt;
    }
    if (v.result >= d.numResults(n)) {
      fail(fmt::format("operand {} names result {} of a node with {}", index,
                       v.result, d.numResults(n)));
      return std::nullopt;
    }
    return d.resultWidth(n, v.result);
  }

  bool ok() const { return !failed && d.instances[instance].error.empty(); }

  void fail(const std::string &why) {
    failed = true;
    InstanceData &inst = d.instances[instance];
    if (!inst.error.empty())
      return;
    std::string label = what;
    if (!detail.empty())
      label += (detailIsModule ? " @" : " ") + detail.str();
    inst.error = fmt::format("instance {}, node {} ({}): {}", instance,
                             inst.numNodes, label, why);
    if (d.firstFailed == ~0u || instance < d.firstFailed)
      d.firstFailed = instance;
  }
  void failQuietly() { failed = true; }

  /// Adds the node; `operands` are checked values.
  Value add(NodeKind kind, uint32_t signature, const void *info, int64_t row,
            llvm::ArrayRef<Value> operands) {
    InstanceData &inst = d.instances[instance];
    ++inst.numNodes;
    if (failed)
      return Value{d.tag, ~0u, 0};
    auto *refs = d.arena.Allocate<OperandRef>(operands.size());
    NodeId deps[8];
    llvm::SmallVector<NodeId, 8> bigDeps;
    NodeId *depPtr = deps;
    if (operands.size() > 8) {
      bigDeps.resize(operands.size());
      depPtr = bigDeps.data();
    }
    for (auto [i, v] : llvm::enumerate(operands)) {
      refs[i] = {v.node, v.result};
      depPtr[i] = v.node;
    }
    // The graph wants each dependency once, in increasing order.
    std::sort(depPtr, depPtr + operands.size());
    size_t numDeps = std::unique(depPtr, depPtr + operands.size()) - depPtr;
    auto *node = new (d.arena.Allocate<Node>()) Node{
        kind, uint16_t(operands.size()), signature, instance, info, row, refs};
    NodeId id =
        d.graph.addNode(signature, llvm::ArrayRef<NodeId>(depPtr, numDeps));
    d.nodes.push_back(node);
    return Value{d.tag, id, 0};
  }

  BatchData &d;
  uint32_t instance;
  const char *what;
  /// A table's or module's name, for messages.
  llvm::StringRef detail;
  bool detailIsModule = false;
  bool failed = false;
};

} // namespace

static BatchData &dataOf(Batch *b) { return b->data(); }

Value Instance::embedding(Param table, int64_t row) {
  BatchData &d = dataOf(batch_);
  EngineModel &m = d.model;
  NodeAdder adder(d, index_, "embedding");
  if (!adder.ok()) {
    adder.failQuietly();
  } else if (table.id >= m.params.size()) {
    adder.fail("not a parameter of this engine's model");
  } else {
    const ParamInfo &p = m.params[table.id];
    adder.detail = p.name;
    if (p.shape.size() != 2)
      adder.fail(fmt::format("parameter '{}' is not a 2-D table", p.name));
    else if (row < 0 || row >= p.rows)
      adder.fail(fmt::format("index {} is outside table '{}' of {} rows", row,
                             p.name, p.rows));
    else
      return adder.add(NodeKind::Embedding, m.embeddingSignature(table.id), &p,
                       row, {});
  }
  return adder.add(NodeKind::Embedding, 0, nullptr, 0, {});
}

llvm::SmallVector<Value, 2> Instance::call(Module module,
                                           llvm::ArrayRef<Value> args) {
  BatchData &d = dataOf(batch_);
  EngineModel &m = d.model;
  NodeAdder adder(d, index_, "call");
  const ModuleInfo *info = nullptr;
  if (module.id >= m.modules.size()) {
    adder.fail("not a module of this engine's model");
  } else {
    info = &m.modules[module.id];
    adder.detail = info->name;
    adder.detailIsModule = true;
    if (args.size() != info->argWidths.size())
      adder.fail(fmt::format("@{} takes {} arguments, got {}", info->name,
                             info->argWidths.size(), args.size()));
    for (auto [i, v] : llvm::enumerate(args)) {
      std::optional<int64_t> w = adder.operand(v, i);
      if (w && *w != info->argWidths[i])
        adder.fail(fmt::format("argument {} has width {}, but @{} expects {}",
                               i, *w, info->name, info->argWidths[i]));
    }
    if (adder.ok() && !adder.failed) {
      Value v =
          adder.add(NodeKind::Call, m.callSignature(module.id), info, 0, args);
      llvm::SmallVector<Value, 2> results;
      for (uint32_t r = 0; r < info->resultWidths.size(); ++r)
        results.push_back(Value{v.batch, v.node, r});
      return results;
    }
  }
  adder.failQuietly();
  adder.add(NodeKind::Call, 0, nullptr, 0, {});
  size_t n = info ? info->resultWidths.size() : 1;
  return llvm::SmallVector<Value, 2>(n, Value{d.tag, ~0u, 0});
}

/// Adds a per-instance op after checking its operands; `check` refines the
/// signature (result width, attributes) or fails.
template <typename CheckFn>
static Value addOp(Batch *batch, uint32_t instance, OpKind kind,
                   llvm::ArrayRef<Value> operands, CheckFn check,
                   int64_t row = 0) {
  BatchData &d = batch->data();
  NodeAdder adder(d, instance, opName(kind));
  OpInfo key;
  key.kind = kind;
  for (auto [i, v] : llvm::enumerate(operands)) {
    std::optional<int64_t> w = adder.operand(v, i);
    key.operandWidths.push_back(w.value_or(0));
  }
  if (adder.ok() && !adder.failed) {
    std::string why = check(key);
    if (!why.empty())
      adder.fail(why);
  }
  if (!adder.ok() || adder.failed) {
    adder.failQuietly();
    return adder.add(NodeKind::Op, 0, nullptr, 0, {});
  }
  const OpInfo *info = d.model.internOp(key);
  return adder.add(NodeKind::Op, info->signature, info, row, operands);
}

static std::string sameWidths(OpInfo &key) {
  for (int64_t w : key.operandWidths)
    if (w != key.operandWidths.front())
      return fmt::format("operands have widths {} and {}; they must match",
                         key.operandWidths.front(), w);
  key.resultWidth = key.operandWidths.front();
  return "";
}

Value Instance::elementwise(ElementwiseKind kind,
                            llvm::ArrayRef<Value> operands) {
  return addOp(batch_, index_, opKindOf(kind), operands, [&](OpInfo &key) {
    unsigned arity = elementwiseArity(kind);
    if (operands.size() != arity)
      return fmt::format("{} takes {} operand{}, got {}",
                         elementwiseMnemonic(kind), arity,
                         arity == 1 ? "" : "s", operands.size());
    return sameWidths(key);
  });
}

#define DYNB_UNARY_OP(Name, mnemonic)                                          \
  Value Instance::mnemonic(Value x) {                                          \
    return elementwise(ElementwiseKind::Name, {x});                            \
  }
#define DYNB_BINARY_OP(Name, mnemonic)                                         \
  Value Instance::mnemonic(Value a, Value b) {                                 \
    return elementwise(ElementwiseKind::Name, {a, b});                         \
  }
#include "dynb/Dialect/ElementwiseOps.def"

Value Instance::concat(llvm::ArrayRef<Value> parts) {
  return addOp(batch_, index_, OpKind::Concat, parts, [&](OpInfo &key) {
    if (parts.size() < 2)
      return std::string("a concat needs at least two operands");
    for (int64_t w : key.operandWidths)
      key.resultWidth += w;
    return std::string();
  });
}

Value Instance::slice(Value x, int64_t offset, int64_t size) {
  return addOp(batch_, index_, OpKind::Slice, {x}, [&](OpInfo &key) {
    int64_t w = key.operandWidths.front();
    if (offset < 0 || size <= 0 || offset > w - size)
      return fmt::format("slice [{}, {}) is outside a value of width {}",
                         offset, offset + size, w);
    key.a = offset;
    key.b = size;
    key.resultWidth = size;
    return std::string();
  });
}

Value Instance::softmaxXent(Value logits, int64_t label) {
  return addOp(
      batch_, index_, OpKind::SoftmaxXent, {logits},
      [&](OpInfo &key) {
        int64_t classes = key.operandWidths.front();
        if (label < 0 || label >= classes)
          return fmt::format("label {} is not a class of {} logits", label,
                             classes);
        key.resultWidth = 1;
        return std::string();
      },
      label);
}

Value Instance::linear(Value x, Param weight, std::optional<Param> bias) {
  EngineModel &m = batch_->data().model;
  return addOp(batch_, index_, OpKind::Linear, {x}, [&](OpInfo &key) {
    if (weight.id >= m.params.size() || (bias && bias->id >= m.params.size()))
      return std::string("weight or bias is not a parameter of this model");
    const ParamInfo &w = m.params[weight.id];
    if (w.shape.size() != 2 || w.shape[1] != key.operandWidths.front())
      return fmt::format("weight '{}' is not [N x {}]", w.name,
                         key.operandWidths.front());
    if (bias) {
      const ParamInfo &b = m.params[bias->id];
      if (b.shape.size() != 1 || b.shape[0] != w.shape[0])
        return fmt::format("bias '{}' is not [{}]", b.name, w.shape[0]);
    }
    key.a = weight.id;
    key.b = bias ? int64_t(bias->id) : -1;
    key.resultWidth = w.shape[0];
    return std::string();
  });
}

Value Instance::dispatch(Value x, Param gate, Experts experts, int64_t k,
                         std::optional<Param> noise, uint64_t noiseSeed) {
  EngineModel &m = batch_->data().model;
  return addOp(batch_, index_, OpKind::Dispatch, {x}, [&](OpInfo &key) {
    if (gate.id >= m.params.size() || (noise && noise->id >= m.params.size()))
      return std::string("gate or noise is not a parameter of this model");
    if (experts.id >= m.experts.size())
      return std::string("not an expert module of this model");
    const ParamInfo &g = m.params[gate.id];
    const ModuleInfo &e = m.experts[experts.id];
    int64_t d = key.operandWidths.front();
    if (g.shape.size() != 2 || g.shape[1] != d)
      return fmt::format("gate '{}' is not [E x {}]", g.name, d);
    if (g.shape[0] != e.experts)
      return fmt::format("gate '{}' scores {} experts but module @{} has {}",
                         g.name, g.shape[0], e.name, e.experts);
    if (e.argWidths.size() != 1 || e.argWidths[0] != d ||
        e.resultWidths.size() != 1)
      return fmt::format("expert module @{} does not take one [{}] vector "
                         "and return one vector",
                         e.name, d);
    if (k < 1 || k > e.experts)
      return fmt::format("keeps the top {} of {} experts", k, e.experts);
    if (noise && m.params[noise->id].shape != g.shape)
      return fmt::format("noise '{}' is not shaped as gate '{}'",
                         m.params[noise->id].name, g.name);
    key.a = gate.id;
    key.b = experts.id;
    key.topK = k;
    key.noise = noise ? int64_t(noise->id) : -1;
    key.noiseSeed = noise ? noiseSeed : 0;
    key.resultWidth = e.resultWidths[0];
    key.lowered = e.lowered;
    return std::string();
  });
}

void Instance::output(Value v) {
  BatchData &d = dataOf(batch_);
  NodeAdder adder(d, index_, "output");
  std::optional<int64_t> w = adder.operand(v, 0);
  if (w)
    d.instances[index_].outputs.push_back({v.node, v.result});
}

int64_t Instance::width(Value v) const {
  BatchData &d = dataOf(batch_);
  if (v.batch != d.tag || !v.valid() || v.node >= d.nodes.size())
    return 0;
  const Node &n = *d.nodes[v.node];
  return v.result < d.numResults(n) ? d.resultWidth(n, v.result) : 0;
}

//===----------------------------------------------------------------------===//
// Batch
//===----------------------------------------------------------------------===//

Batch::Batch(Engine &engine) : data_(std::make_unique<BatchData>(engine)) {}
Batch::~Batch() = default;
Batch::Batch(Batch &&) noexcept = default;
Batch &Batch::operator=(Batch &&) noexcept = default;

Instance Batch::addInstance() {
  data_->instances.emplace_back();
  return Instance(this, data_->instances.size() - 1);
}

size_t Batch::numInstances() const { return data_->instances.size(); }
size_t Batch::numNodes() const { return data_->nodes.size(); }

bool Batch::failed(uint32_t index) const {
  return index < data_->instances.size() &&
         !data_->instances[index].error.empty();
}

llvm::StringRef Batch::errorOf(uint32_t index) const {
  if (index >= data_->instances.size())
    return {};
  return data_->instances[index].error;
}

llvm::Error Batch::error() const {
  if (data_->firstFailed == ~0u)
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 data_->instances[data_->firstFailed].error);
}

void Batch::discard(uint32_t index) {
  if (index >= data_->instances.size())
    return;
  InstanceData &inst = data_->instances[index];
  inst.discarded = true;
  inst.outputs.clear();
  inst.error.clear();
  // The first failure may have moved on.
  data_->firstFailed = ~0u;
  for (auto [i, other] : llvm::enumerate(data_->instances))
    if (!other.error.empty()) {
      data_->firstFailed = i;
      break;
    }
}

void Batch::clear() { data_->reset(); }
