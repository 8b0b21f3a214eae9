//===- InterchangeSource.cpp - Interchange instances into node records ----===//
//
// Parses instance objects with simdjson's On Demand API (no DOM: fields are
// read once, in file order) and adds each node through the Engine's
// Instance handles, which check widths, tables and rows and record the
// node in the batch's arena and BatchingGraph. The reader accepts a subset
// of what the importer accepts: anything it does not take fails the read,
// and the Session then reads the input through the importer, whose
// located diagnostic (or, for a valid input, whose MLIR path) is what the
// user gets. tests/fuzz/FuzzJson.cpp holds the two to that.
//
//===----------------------------------------------------------------------===//
#include "dynb/Engine/InterchangeSource.h"
#include "EngineModel.h"
#include "dynb/Engine/Engine.h"
#include "dynb/Import/DuplicateKeys.h"
#include "dynb/Import/NestingDepth.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <chrono>
#include <cmath>
#if defined(__unix__)
#include <sys/mman.h>
#include <unistd.h>
#endif
#include <fmt/format.h>
#include <limits>
#include <simdjson.h>

using namespace dynb;
using namespace dynb::detail;
namespace od = simdjson::ondemand;

namespace {

llvm::Error makeError(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// An integer as llvm::json::Value::getAsInteger takes it: a JSON integer
/// within int64, or a number with no fractional part within int64.
std::optional<int64_t> integerOf(od::value v) {
  // Node numbers and rows are plain integers: parse once. A failed get
  // leaves the value in place for the general path below.
  int64_t plain;
  if (!v.get_int64().get(plain))
    return plain;
  od::number_type type;
  if (v.get_number_type().get(type))
    return std::nullopt;
  switch (type) {
  case od::number_type::signed_integer: {
    int64_t x;
    if (v.get_int64().get(x))
      return std::nullopt;
    return x;
  }
  case od::number_type::unsigned_integer: {
    uint64_t x;
    if (v.get_uint64().get(x) ||
        x > uint64_t(std::numeric_limits<int64_t>::max()))
      return std::nullopt;
    return int64_t(x);
  }
  case od::number_type::floating_point_number: {
    double d;
    if (v.get_double().get(d))
      return std::nullopt;
    double whole;
    if (std::modf(d, &whole) != 0.0 ||
        !(d >= double(std::numeric_limits<int64_t>::min()) &&
          d <= double(std::numeric_limits<int64_t>::max())))
      return std::nullopt;
    return int64_t(d);
  }
  }
  return std::nullopt;
}

/// A member whose value the reader does not interpret: the importer still
/// scans it for duplicate keys and bracket depth, so the reader does too.
bool acceptableSkipped(od::value v, unsigned depth) {
  od::json_type type;
  if (v.type().get(type))
    return false;
  if (type != od::json_type::object && type != od::json_type::array)
    return true; // scalars are skipped by the iteration itself
  std::string_view raw;
  if (type == od::json_type::object) {
    od::object o;
    if (v.get_object().get(o) || o.raw_json().get(raw))
      return false;
  } else {
    od::array a;
    if (v.get_array().get(a) || a.raw_json().get(raw))
      return false;
  }
  llvm::StringRef text(raw.data(), raw.size());
  return depth < kMaxNestingDepth &&
         !findExcessiveNesting(text, kMaxNestingDepth - depth, false) &&
         !findDuplicateKey(text);
}

/// The text of a string token from just after its opening quote, when it
/// has no escapes and no control characters (the keys and names of
/// interchange files): no copy into simdjson's string buffer. Nullopt
/// otherwise: the caller then unescapes it as before, with its checks.
std::optional<std::string_view> plainString(const char *afterQuote) {
  const char *p = afterQuote;
  // Stage 1 found the closing quote, so the scan ends inside the text.
  while (uint8_t(*p) >= 0x20 && *p != '"' && *p != '\\')
    ++p;
  if (*p != '"')
    return std::nullopt;
  return std::string_view(afterQuote, size_t(p - afterQuote));
}

/// A member's key, unescaped; false for a bad one.
bool keyOf(simdjson::simdjson_result<od::field> &field, std::string_view &key) {
  if (field.error())
    return false;
  od::field &f = field.value_unsafe();
  if (std::optional<std::string_view> plain = plainString(f.key().raw())) {
    key = *plain;
    return true;
  }
  return !f.unescaped_key().get(key);
}

/// Keys of one object seen so far: the importer refuses a key given twice.
class KeySet {
public:
  bool insert(std::string_view key) {
    for (std::string_view k : keys_)
      if (k == key)
        return false;
    keys_.push_back(key);
    return true;
  }

private:
  llvm::SmallVector<std::string_view, 8> keys_;
};

/// What a node's `op` names: a structural op, an elementwise one (of
/// ElementwiseOps.def) or nothing this reader takes.
enum class OpCode : uint8_t {
  Embedding,
  Call,
  Linear,
  Concat,
  Slice,
  Dispatch,
  SoftmaxXent,
  Elementwise,
  Other
};

struct OpName {
  OpCode code = OpCode::Other;
  ElementwiseKind elementwise{};
};

OpName opNameOf(std::string_view op) {
  if (op == "embedding")
    return {OpCode::Embedding};
  if (op == "call")
    return {OpCode::Call};
  if (op == "linear")
    return {OpCode::Linear};
  if (std::optional<ElementwiseKind> kind = elementwiseKindNamed(op))
    return {OpCode::Elementwise, *kind};
  if (op == "concat")
    return {OpCode::Concat};
  if (op == "slice")
    return {OpCode::Slice};
  if (op == "dispatch")
    return {OpCode::Dispatch};
  if (op == "softmax_xent")
    return {OpCode::SoftmaxXent};
  return {};
}

/// A member's value as read, for the op to take or ignore: the importer
/// complains about a member of the wrong type only if the op needs it.
struct StringField {
  bool present = false;
  std::optional<std::string_view> value;
};
struct IntField {
  bool present = false;
  std::optional<int64_t> value;
};

struct Ref {
  int64_t node, result;
};

/// Whether the document was read to its end: nothing may follow the
/// top-level value (llvm::json refuses trailing text).
bool atEnd(od::document &doc) {
  const char *next;
  return doc.current_location().get(next) != simdjson::SUCCESS;
}

} // namespace

struct InterchangeSource::Impl {
  std::string path;
  bool lines = false;
  SessionLimits limits;
  KernelCacheOptions kernelCache;
  std::string modelJson;
  /// Nodes of the model's modules: the --max-nodes limit counts them too.
  uint64_t modelNodes = 0;
  std::unique_ptr<Engine> engine;
  bool jitReported = false;
  uint64_t instanceCount = 0;

  // The file (mapped); JSON Lines: where the instance lines start.
  std::unique_ptr<llvm::MemoryBuffer> file;
  size_t firstInstanceOffset = 0, cursor = 0;
  unsigned firstInstanceLine = 0, cursorLine = 0;
  std::string padded;
  od::parser parser;
  /// Pages of the mapped file before this offset were given back after
  /// being read: a read file-backed page stays in the process's resident
  /// set until unmapped, so a whole-file run would otherwise hold the
  /// file as well as its batches.
  size_t releasedUpTo = 0;

  // A document: each instance's text in the file, and the next one's.
  std::vector<std::pair<size_t, size_t>> instanceSpans;
  size_t nextSpan = 0;

  // Reading state.
  uint64_t nextInstance = 0;
  uint64_t nodesRead = 0;
  /// simdjson's structural indexing (its stage 1) since the last reset:
  /// the parse proper, apart from decoding values into records.
  double indexSeconds = 0;
  std::vector<std::unique_ptr<Batch>> batches;
  uint64_t held = 0;
  bool haveFirstOutputs = false;
  llvm::SmallVector<int64_t, 4> firstOutputWidths;
  std::vector<llvm::SmallVector<Value, 2>> results;
  llvm::SmallVector<Ref, 8> refs;
  llvm::SmallVector<Value, 8> operands;

  EngineModel &model() { return engine->model(); }

  llvm::Error fail(uint64_t instance, const std::string &what) {
    return makeError(fmt::format("{}: instance {}: {}", path, instance, what));
  }
  llvm::Error failNode(uint64_t instance, size_t node,
                       const std::string &what) {
    return makeError(fmt::format("{}: instance {}, node {}: {}", path, instance,
                                 node, what));
  }

  llvm::Error readRefList(od::value v, uint64_t instance, size_t node,
                          unsigned depth);
  llvm::Error readNode(od::object o, Instance &inst, uint64_t instance,
                       size_t node, unsigned depth);
  llvm::Error readInstance(od::object o, Batch &batch, uint64_t instance,
                           unsigned depth);
  llvm::Error readText(llvm::StringRef text, Batch &batch, uint64_t instance,
                       unsigned depth);
  /// Reads the next instance into `batch`; false at the end.
  llvm::Expected<bool> readOne(Batch &batch);
  llvm::Error resetReading();
  /// Gives back the mapped pages wholly inside [releasedUpTo, upTo) (they
  /// are read again from the page cache if needed); no-op unless mapped.
  void releasePages(size_t upTo);
  /// The offset up to which the instances read so far lie.
  size_t readOffset() const;
  llvm::Error openDocument();
  llvm::Error openLines();
};

/// A list of references (a node's inputs, an instance's outputs) into
/// `refs`, checked for shape only.
llvm::Error InterchangeSource::Impl::readRefList(od::value v, uint64_t instance,
                                                 size_t node, unsigned depth) {
  refs.clear();
  od::array arr;
  if (v.get_array().get(arr))
    return failNode(instance, node, "a reference list is not a list");
  for (auto element : arr) {
    od::value e;
    if (element.get(e))
      return failNode(instance, node, "bad reference");
    od::json_type type;
    if (e.type().get(type))
      return failNode(instance, node, "bad reference");
    if (type == od::json_type::array) {
      od::array pair;
      if (e.get_array().get(pair))
        return failNode(instance, node, "bad reference");
      int64_t parts[2];
      size_t count = 0;
      for (auto p : pair) {
        od::value pv;
        if (p.get(pv) || count == 2)
          return failNode(instance, node, "a reference pair is [node, result]");
        std::optional<int64_t> x = integerOf(pv);
        if (!x)
          return failNode(instance, node, "a reference pair is [node, result]");
        parts[count++] = *x;
      }
      if (count != 2)
        return failNode(instance, node, "a reference pair is [node, result]");
      refs.push_back({parts[0], parts[1]});
    } else {
      std::optional<int64_t> x = integerOf(e);
      if (!x)
        return failNode(instance, node, "a reference is a node number");
      refs.push_back({*x, 0});
    }
  }
  (void)depth;
  return llvm::Error::success();
}

llvm::Error InterchangeSource::Impl::readNode(od::object o, Instance &inst,
                                              uint64_t instance, size_t node,
                                              unsigned depth) {
  EngineModel &m = model();
  KeySet keys;
  StringField op, table, module, weight, bias, gate, experts, noise;
  IntField index, offset, size, top, noiseSeed, label;
  llvm::SmallVector<Ref, 8> inputs;
  // A member of a type its op does not take is left without a value (the
  // op fails if it needs it; the importer ignores it otherwise), but a
  // container is still scanned as the importer scans everything.
  auto isScalar = [&](od::value v, bool &ok) {
    od::json_type type;
    ok = !v.type().get(type);
    if (!ok)
      return false;
    if (type == od::json_type::object || type == od::json_type::array) {
      ok = acceptableSkipped(v, depth + 1);
      return false;
    }
    return true;
  };
  bool scanned = true;
  auto readString = [&](od::value v, StringField &f) {
    f.present = true;
    std::string_view s;
    if (!isScalar(v, scanned))
      return;
    std::string_view token = v.raw_json_token();
    std::optional<std::string_view> plain;
    if (!token.empty() && token.front() == '"')
      plain = plainString(token.data() + 1);
    if (plain)
      f.value = *plain;
    else if (!v.get_string().get(s))
      f.value = s;
  };
  auto readInt = [&](od::value v, IntField &f) {
    f.present = true;
    if (isScalar(v, scanned))
      f.value = integerOf(v);
  };
  for (auto field : o) {
    std::string_view key;
    if (!keyOf(field, key))
      return failNode(instance, node, "bad key");
    if (!keys.insert(key))
      return failNode(instance, node, "a key given twice");
    od::value v = field.value();
    if (key == "op")
      readString(v, op);
    else if (key == "inputs") {
      if (llvm::Error e = readRefList(v, instance, node, depth + 1))
        return e;
      if (limits.maxOpInputs && refs.size() > limits.maxOpInputs)
        return failNode(instance, node, "over the --max-op-inputs limit");
      inputs.assign(refs.begin(), refs.end());
    } else if (key == "table")
      readString(v, table);
    else if (key == "index")
      readInt(v, index);
    else if (key == "module")
      readString(v, module);
    else if (key == "weight")
      readString(v, weight);
    else if (key == "bias")
      readString(v, bias);
    else if (key == "offset")
      readInt(v, offset);
    else if (key == "size")
      readInt(v, size);
    else if (key == "gate")
      readString(v, gate);
    else if (key == "experts")
      readString(v, experts);
    else if (key == "top")
      readInt(v, top);
    else if (key == "noise")
      readString(v, noise);
    else if (key == "noise_seed")
      readInt(v, noiseSeed);
    else if (key == "label")
      readInt(v, label);
    else if (!acceptableSkipped(v, depth + 1))
      return failNode(instance, node, "a member the reader cannot skip");
    if (!scanned)
      return failNode(instance, node, "a member the reader cannot skip");
  }
  if (!op.value)
    return failNode(instance, node, "a node needs a string 'op'");

  // Inputs resolve backwards, to a result the node has.
  operands.clear();
  for (const Ref &r : inputs) {
    if (r.node < 0 || size_t(r.node) >= node)
      return failNode(instance, node, "an input refers forwards");
    const llvm::SmallVector<Value, 2> &res = results[r.node];
    if (r.result < 0 || size_t(r.result) >= res.size())
      return failNode(instance, node, "an input names a missing result");
    operands.push_back(res[r.result]);
  }
  auto needInputs = [&](size_t n) { return operands.size() == n; };
  auto paramId = [&](std::string_view name) -> std::optional<uint32_t> {
    auto it = m.paramIds.find(llvm::StringRef(name.data(), name.size()));
    if (it == m.paramIds.end())
      return std::nullopt;
    return it->second;
  };

  llvm::SmallVector<Value, 2> out;
  OpName what = opNameOf(*op.value);
  switch (what.code) {
  case OpCode::Embedding: {
    std::optional<uint32_t> t =
        table.value ? paramId(*table.value) : std::nullopt;
    if (!t || !index.value || !needInputs(0))
      return failNode(instance, node, "a bad embedding");
    out.push_back(inst.embedding(Param{*t}, *index.value));
    break;
  }
  case OpCode::Call: {
    if (!module.value)
      return failNode(instance, node, "a call needs a module");
    auto it = m.moduleIds.find(
        llvm::StringRef(module.value->data(), module.value->size()));
    if (it == m.moduleIds.end())
      return failNode(instance, node, "unknown module");
    out = inst.call(Module{it->second}, operands);
    break;
  }
  case OpCode::Linear: {
    std::optional<uint32_t> w =
        weight.value ? paramId(*weight.value) : std::nullopt;
    std::optional<uint32_t> b;
    if (bias.present) {
      b = bias.value ? paramId(*bias.value) : std::nullopt;
      if (!b)
        return failNode(instance, node, "unknown bias");
    }
    if (!w || !needInputs(1))
      return failNode(instance, node, "a bad linear");
    std::optional<Param> biasParam;
    if (b)
      biasParam = Param{*b};
    out.push_back(inst.linear(operands[0], Param{*w}, biasParam));
    break;
  }
  case OpCode::Elementwise: {
    unsigned arity = elementwiseArity(what.elementwise);
    if (!needInputs(arity))
      return failNode(instance, node,
                      arity == 1 ? "takes 1 input"
                                 : fmt::format("takes {} inputs", arity));
    out.push_back(inst.elementwise(what.elementwise, operands));
    break;
  }
  case OpCode::Concat:
    if (operands.size() < 2)
      return failNode(instance, node, "a concat takes 2 or more inputs");
    out.push_back(inst.concat(operands));
    break;
  case OpCode::Slice:
    if (!offset.value || !size.value || !needInputs(1))
      return failNode(instance, node, "a bad slice");
    out.push_back(inst.slice(operands[0], *offset.value, *size.value));
    break;
  case OpCode::Dispatch: {
    std::optional<uint32_t> g =
        gate.value ? paramId(*gate.value) : std::nullopt;
    std::optional<uint32_t> n;
    if (noise.present) {
      n = noise.value ? paramId(*noise.value) : std::nullopt;
      if (!n)
        return failNode(instance, node, "unknown noise");
    }
    if (noiseSeed.present && !noiseSeed.value)
      return failNode(instance, node, "a noise seed is an integer");
    if (!g || !experts.value || !top.value || !needInputs(1))
      return failNode(instance, node, "a bad dispatch");
    auto it = m.expertIds.find(
        llvm::StringRef(experts.value->data(), experts.value->size()));
    if (it == m.expertIds.end())
      return failNode(instance, node, "not an expert module");
    std::optional<Param> noiseParam;
    if (n)
      noiseParam = Param{*n};
    out.push_back(inst.dispatch(operands[0], Param{*g}, Experts{it->second},
                                *top.value, noiseParam,
                                uint64_t(noiseSeed.value.value_or(0))));
    break;
  }
  case OpCode::SoftmaxXent:
    if (!label.value || !needInputs(1))
      return failNode(instance, node, "a bad softmax_xent");
    out.push_back(inst.softmaxXent(operands[0], *label.value));
    break;
  case OpCode::Other:
    // arg (modules only) and unknown ops.
    return failNode(
        instance, node,
        fmt::format("op '{}' is not read here", std::string(*op.value)));
  }
  if (inst.batch()->failed(inst.index()))
    return makeError(
        fmt::format("{}: {}", path, llvm::toString(inst.batch()->error())));
  results.push_back(std::move(out));
  return llvm::Error::success();
}

llvm::Error InterchangeSource::Impl::readInstance(od::object o, Batch &batch,
                                                  uint64_t instance,
                                                  unsigned depth) {
  KeySet keys;
  bool haveNodes = false, haveOutputs = false;
  llvm::SmallVector<Ref, 4> outputs;
  Instance inst = batch.addInstance();
  results.clear();
  for (auto field : o) {
    std::string_view key;
    if (!keyOf(field, key))
      return fail(instance, "bad key");
    if (!keys.insert(key))
      return fail(instance, "a key given twice");
    od::value v = field.value();
    if (key == "nodes") {
      haveNodes = true;
      od::array nodes;
      if (v.get_array().get(nodes))
        return fail(instance, "'nodes' is not a list");
      size_t index = 0;
      for (auto element : nodes) {
        if (limits.maxNodes && modelNodes + ++nodesRead > limits.maxNodes)
          return fail(instance, "over the --max-nodes limit");
        od::object n;
        if (element.get_object().get(n))
          return failNode(instance, index, "a node is not an object");
        if (llvm::Error e = readNode(n, inst, instance, index, depth + 2))
          return e;
        ++index;
      }
    } else if (key == "outputs") {
      haveOutputs = true;
      if (llvm::Error e = readRefList(v, instance, 0, depth + 1))
        return e;
      outputs.assign(refs.begin(), refs.end());
    } else if (!acceptableSkipped(v, depth + 1)) {
      return fail(instance, "a member the reader cannot skip");
    }
  }
  if (!haveNodes || !haveOutputs)
    return fail(instance, "an instance needs 'nodes' and 'outputs'");
  llvm::SmallVector<int64_t, 4> widths;
  for (const Ref &r : outputs) {
    if (r.node < 0 || size_t(r.node) >= results.size() || r.result < 0 ||
        size_t(r.result) >= results[r.node].size())
      return fail(instance, "an output names no result");
    Value v = results[r.node][r.result];
    inst.output(v);
    widths.push_back(inst.width(v));
  }
  // Outputs are stacked: every instance returns what the first returns.
  if (!haveFirstOutputs) {
    firstOutputWidths = widths;
    haveFirstOutputs = true;
  } else if (widths != firstOutputWidths) {
    return fail(instance, "outputs differ from the first instance's");
  }
  if (batch.failed(inst.index()))
    return makeError(path + ": " + llvm::toString(batch.error()));
  return llvm::Error::success();
}

/// One instance from its own text (a line, or a document's element): each
/// is indexed by itself, so no index of the whole file is ever held.
llvm::Error InterchangeSource::Impl::readText(llvm::StringRef text,
                                              Batch &batch, uint64_t instance,
                                              unsigned depth) {
  padded.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  padded.assign(text.data(), text.size());
  od::document doc;
  auto t0 = std::chrono::steady_clock::now();
  bool notJson = bool(
      parser.iterate(padded.data(), padded.size(), padded.capacity()).get(doc));
  indexSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (notJson)
    return fail(instance, "not JSON");
  od::object o;
  if (doc.get_object().get(o))
    return fail(instance, "an instance is not an object");
  if (llvm::Error e = readInstance(o, batch, instance, depth))
    return e;
  // Nothing may follow the object in its text.
  if (!atEnd(doc))
    return fail(instance, "text after the instance");
  return llvm::Error::success();
}

static bool isBlank(llvm::StringRef line) { return line.trim().empty(); }

llvm::Expected<bool> InterchangeSource::Impl::readOne(Batch &batch) {
  if (lines) {
    llvm::StringRef text = file->getBuffer();
    while (cursor < text.size()) {
      size_t end = text.find('\n', cursor);
      if (end == llvm::StringRef::npos)
        end = text.size();
      llvm::StringRef line = text.slice(cursor, end);
      cursor = end + 1;
      ++cursorLine;
      if (isBlank(line))
        continue;
      if (llvm::Error e = readText(line, batch, nextInstance, 1))
        return std::move(e);
      ++nextInstance;
      return true;
    }
    return false;
  }
  if (nextSpan == instanceSpans.size())
    return false;
  auto [begin, end] = instanceSpans[nextSpan];
  // Elements of `instances`, inside the top-level object: depth 3.
  if (llvm::Error e =
          readText(file->getBuffer().slice(begin, end), batch, nextInstance, 3))
    return std::move(e);
  ++nextSpan;
  ++nextInstance;
  return true;
}

/// Top-level members of a document (or a JSON Lines header): the version's
/// and the model's text, and whether `instances` is a list.
struct TopLevel {
  std::string_view version, model;
  bool haveInstances = false;
};

static bool readTopLevel(od::object top, TopLevel &out, bool wantInstances) {
  KeySet keys;
  for (auto field : top) {
    std::string_view key;
    if (!keyOf(field, key) || !keys.insert(key))
      return false;
    od::value v = field.value();
    if (key == "dynb") {
      // A number, copied as written; anything else is the importer's to
      // report.
      od::json_type type;
      if (v.type().get(type) || type != od::json_type::number)
        return false;
      out.version = v.raw_json_token();
    } else if (key == "model") {
      od::object model;
      if (v.get_object().get(model) || model.raw_json().get(out.model))
        return false;
    } else if (key == "instances" && wantInstances) {
      od::json_type type;
      if (v.type().get(type) || type != od::json_type::array)
        return false;
      out.haveInstances = true;
    } else if (!acceptableSkipped(v, 1)) {
      return false;
    }
  }
  return !out.version.empty() && !out.model.empty() &&
         (out.haveInstances || !wantInstances);
}

/// Counts the nodes of the model's modules; false for a model not shaped
/// as the importer takes it (which then reports it).
static bool readModelShape(od::parser &parser, llvm::StringRef modelText,
                           uint64_t &nodes) {
  simdjson::padded_string text(modelText.data(), modelText.size());
  od::document doc;
  od::object model;
  if (parser.iterate(text).get(doc) || doc.get_object().get(model))
    return false;
  od::array modules;
  if (model.find_field_unordered("modules").get_array().get(modules))
    return false;
  for (auto element : modules) {
    od::object module;
    if (element.get_object().get(module))
      return false;
    for (auto field : module) {
      std::string_view key;
      if (!keyOf(field, key))
        return false;
      if (key == "nodes") {
        od::array list;
        size_t count = 0;
        if (field.value().get_array().get(list) ||
            list.count_elements().get(count))
          return false;
        nodes += count;
      }
    }
  }
  return true;
}

llvm::Error InterchangeSource::Impl::openLines() {
  llvm::StringRef text = file->getBuffer();
  size_t pos = 0;
  unsigned line = 0;
  llvm::StringRef header;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == llvm::StringRef::npos)
      end = text.size();
    llvm::StringRef l = text.slice(pos, end);
    pos = end + 1;
    ++line;
    if (!isBlank(l)) {
      header = l;
      break;
    }
  }
  if (header.empty() || line != 1)
    // The importer numbers lines from the file's start; a header after
    // blank lines is left to it.
    return makeError("no model on the first line");
  padded.assign(header.data(), header.size());
  padded.reserve(header.size() + simdjson::SIMDJSON_PADDING);
  od::document doc;
  od::object top;
  TopLevel t;
  if (parser.iterate(padded.data(), padded.size(), padded.capacity())
          .get(doc) ||
      doc.get_object().get(top) || !readTopLevel(top, t, false) || !atEnd(doc))
    return makeError("the first line is not a model header");
  // The header line itself is the model text: the importer reads it as a
  // JSON Lines file of one line.
  modelJson = header.str();
  // Model text views die with the next parse: count from a copy.
  std::string modelText(t.model);
  if (!readModelShape(parser, modelText, modelNodes))
    return makeError("a model the records do not plan");
  firstInstanceOffset = std::min(pos, text.size());
  firstInstanceLine = line;
  instanceCount = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == llvm::StringRef::npos)
      end = text.size();
    if (!isBlank(text.slice(pos, end)))
      ++instanceCount;
    pos = end + 1;
  }
  return llvm::Error::success();
}

/// Skips the string whose opening quote is at `pos`; the position after
/// its closing quote, or npos if it does not end.
static size_t skipString(llvm::StringRef text, size_t pos) {
  for (size_t i = pos + 1;;) {
    size_t q = text.find('"', i);
    if (q == llvm::StringRef::npos)
      return q;
    // A quote after an odd number of backslashes is escaped.
    size_t backslashes = 0;
    while (q - backslashes > pos + 1 && text[q - backslashes - 1] == '\\')
      ++backslashes;
    if (backslashes % 2 == 0)
      return q + 1;
    i = q + 1;
  }
}

static bool isJsonSpace(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static size_t skipSpace(llvm::StringRef text, size_t pos) {
  while (pos < text.size() && isJsonSpace(text[pos]))
    ++pos;
  return pos;
}

/// Skips one value from `pos` (not parsed: only strings and bracket depth
/// are followed) to the ',' or closing bracket that ends it; npos if the
/// text ends first or a bracket closes more than it opened.
static size_t skipValue(llvm::StringRef text, size_t pos) {
  size_t depth = 0;
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '"') {
      pos = skipString(text, pos);
      if (pos == llvm::StringRef::npos)
        return pos;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0)
        return pos;
      --depth;
    } else if (c == ',' && depth == 0) {
      return pos;
    }
    ++pos;
  }
  return llvm::StringRef::npos;
}

/// Splits a document into each instance's text and the rest (the top
/// level, its `instances` list emptied), by following strings and brackets
/// alone. Each piece is then parsed, and validated, by itself: this only
/// decides where they are. False for text not shaped so (no top-level
/// object, no `instances` list or two, anything but commas between
/// elements): the importer then reports it.
static bool splitDocument(llvm::StringRef text, std::string &topLevel,
                          std::vector<std::pair<size_t, size_t>> &spans) {
  size_t pos = skipSpace(text, 0);
  if (pos == text.size() || text[pos] != '{')
    return false;
  size_t listBegin = llvm::StringRef::npos, listEnd = 0;
  ++pos;
  for (;;) {
    pos = skipSpace(text, pos);
    if (pos == text.size())
      return false;
    if (text[pos] == '}')
      break;
    if (text[pos] != '"')
      return false;
    size_t keyEnd = skipString(text, pos);
    if (keyEnd == llvm::StringRef::npos)
      return false;
    bool isInstances = text.slice(pos, keyEnd) == "\"instances\"";
    pos = skipSpace(text, keyEnd);
    if (pos == text.size() || text[pos] != ':')
      return false;
    pos = skipSpace(text, pos + 1);
    if (isInstances) {
      if (listBegin != llvm::StringRef::npos || pos == text.size() ||
          text[pos] != '[')
        return false;
      listBegin = pos;
      pos = skipSpace(text, pos + 1);
      if (pos < text.size() && text[pos] == ']') {
        listEnd = pos++;
      } else {
        for (;;) {
          size_t end = skipValue(text, pos);
          if (end == llvm::StringRef::npos || end == pos)
            return false;
          size_t trimmed = end;
          while (trimmed > pos && isJsonSpace(text[trimmed - 1]))
            --trimmed;
          spans.emplace_back(pos, trimmed);
          if (text[end] == ']') {
            listEnd = end;
            pos = end + 1;
            break;
          }
          if (text[end] != ',')
            return false;
          pos = skipSpace(text, end + 1);
        }
      }
    } else {
      pos = skipValue(text, pos);
      if (pos == llvm::StringRef::npos)
        return false;
    }
    pos = skipSpace(text, pos);
    if (pos == text.size())
      return false;
    if (text[pos] == ',') {
      ++pos;
      continue;
    }
    if (text[pos] != '}')
      return false;
    break;
  }
  if (listBegin == llvm::StringRef::npos)
    return false;
  topLevel =
      (text.take_front(listBegin) + "[]" + text.drop_front(listEnd + 1)).str();
  return true;
}

llvm::Error InterchangeSource::Impl::openDocument() {
  std::string topText;
  instanceSpans.clear();
  if (!splitDocument(file->getBuffer(), topText, instanceSpans))
    return makeError("not a dynb interchange document");
  simdjson::padded_string top(topText.data(), topText.size());
  od::document doc;
  od::object object;
  TopLevel t;
  if (parser.iterate(top).get(doc) || doc.get_object().get(object) ||
      !readTopLevel(object, t, true) || !atEnd(doc))
    return makeError("not a dynb interchange document");
  std::string version(t.version), modelText(t.model);
  // The model with the file's own version member, for the importer.
  modelJson =
      "{\"dynb\":" + version + ",\"model\":" + modelText + ",\"instances\":[]}";
  if (!readModelShape(parser, modelText, modelNodes))
    return makeError("a model the records do not plan");
  instanceCount = instanceSpans.size();
  return llvm::Error::success();
}

void InterchangeSource::Impl::releasePages(size_t upTo) {
#if defined(__unix__)
  if (file->getBufferKind() != llvm::MemoryBuffer::MemoryBuffer_MMap)
    return;
  // Per call a few microseconds: only once a megabyte is to be given back.
  if (upTo < releasedUpTo + (size_t(1) << 20) && upTo != file->getBufferSize())
    return;
  uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  uintptr_t base = uintptr_t(file->getBufferStart());
  uintptr_t from = (base + releasedUpTo + page - 1) & ~(page - 1);
  uintptr_t to = (base + upTo) & ~(page - 1);
  if (to > from)
    (void)::madvise(reinterpret_cast<void *>(from), to - from, MADV_DONTNEED);
  releasedUpTo = upTo;
#else
  (void)upTo;
#endif
}

size_t InterchangeSource::Impl::readOffset() const {
  if (lines)
    return std::min(cursor, file->getBufferSize());
  return nextSpan < instanceSpans.size() ? instanceSpans[nextSpan].first
                                         : file->getBufferSize();
}

llvm::Error InterchangeSource::Impl::resetReading() {
  releasedUpTo = 0;
  nextInstance = 0;
  nodesRead = 0;
  indexSeconds = 0;
  haveFirstOutputs = false;
  cursor = firstInstanceOffset;
  cursorLine = firstInstanceLine;
  nextSpan = 0;
  return llvm::Error::success();
}

InterchangeSource::InterchangeSource(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
InterchangeSource::~InterchangeSource() = default;

/// Opens the text in `impl` (its file already there) and loads
/// its model into a planning Engine.
static std::unique_ptr<InterchangeSource::Impl>
openLoaded(std::unique_ptr<InterchangeSource::Impl> impl, std::string &whyNot) {
  llvm::Error opened = impl->lines ? impl->openLines() : impl->openDocument();
  if (opened) {
    whyNot = llvm::toString(std::move(opened));
    return nullptr;
  }
  // Opening scanned the whole file.
  impl->releasePages(impl->file->getBufferSize());
  EngineOptions options;
  options.modelPath = impl->path;
  options.modelJson = impl->modelJson;
  options.planOnly = true;
  options.kernelCache = impl->kernelCache;
  llvm::Expected<std::unique_ptr<Engine>> engine = Engine::load(options);
  if (!engine) {
    // A bad model, or one of feature maps: the importer's path reports or
    // runs it.
    whyNot = llvm::toString(engine.takeError());
    return nullptr;
  }
  impl->engine = std::move(*engine);
  return impl;
}

/// The form a name asks for: JSON Lines, a document, or neither.
static std::optional<bool> linesByName(llvm::StringRef name) {
  if (name.ends_with(".jsonl"))
    return true;
  if (name.ends_with(".json"))
    return false;
  return std::nullopt;
}

std::unique_ptr<InterchangeSource>
InterchangeSource::open(llvm::StringRef path, const SessionLimits &limits,
                        std::string &whyNot,
                        const KernelCacheOptions &kernelCache) {
  std::optional<bool> lines = linesByName(path);
  if (!lines) {
    whyNot = "not a .json or .jsonl file";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path.str();
  impl->limits = limits;
  impl->kernelCache = kernelCache;
  impl->lines = *lines;
  // Mapped, not read: runs then hold no copy of the file.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buf =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buf) {
    whyNot = "cannot read the file";
    return nullptr;
  }
  impl->file = std::move(*buf);
  impl = openLoaded(std::move(impl), whyNot);
  if (!impl)
    return nullptr;
  return std::unique_ptr<InterchangeSource>(
      new InterchangeSource(std::move(impl)));
}

std::unique_ptr<InterchangeSource>
InterchangeSource::openText(llvm::StringRef name, llvm::StringRef text,
                            const SessionLimits &limits, std::string &whyNot,
                            const KernelCacheOptions &kernelCache) {
  std::optional<bool> lines = linesByName(name);
  if (!lines) {
    whyNot = "not a .json or .jsonl name";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->path = name.str();
  impl->limits = limits;
  impl->kernelCache = kernelCache;
  impl->lines = *lines;
  impl->file = llvm::MemoryBuffer::getMemBufferCopy(text, name);
  impl = openLoaded(std::move(impl), whyNot);
  if (!impl)
    return nullptr;
  return std::unique_ptr<InterchangeSource>(
      new InterchangeSource(std::move(impl)));
}

llvm::StringRef InterchangeSource::modelJson() const {
  return impl_->modelJson;
}

uint64_t InterchangeSource::numInstances() const {
  return impl_->instanceCount;
}

uint64_t InterchangeSource::instancesHeld() const { return impl_->held; }

llvm::Error InterchangeSource::readAll(int64_t batchSize) {
  Impl &d = *impl_;
  d.batches.clear();
  d.held = 0;
  if (llvm::Error e = d.resetReading())
    return e;
  size_t perBatch = batchSize > 0 ? size_t(batchSize) : SIZE_MAX;
  for (;;) {
    if (d.batches.empty() || d.batches.back()->numInstances() == perBatch)
      d.batches.push_back(std::make_unique<Batch>(*d.engine));
    llvm::Expected<bool> more = d.readOne(*d.batches.back());
    if (!more)
      return more.takeError();
    if (!*more)
      break;
    ++d.held;
  }
  if (d.batches.back()->numInstances() == 0)
    d.batches.pop_back();
  return llvm::Error::success();
}

double InterchangeSource::indexSeconds() const { return impl_->indexSeconds; }

llvm::Error InterchangeSource::rewind() {
  impl_->batches.clear();
  impl_->held = 0;
  return impl_->resetReading();
}

llvm::Expected<bool> InterchangeSource::readNext(size_t n) {
  Impl &d = *impl_;
  if (d.batches.empty())
    d.batches.push_back(std::make_unique<Batch>(*d.engine));
  d.batches.resize(1);
  Batch &batch = *d.batches.front();
  batch.clear();
  d.held = 0;
  size_t perBatch = n > 0 ? n : SIZE_MAX;
  while (d.held < perBatch) {
    llvm::Expected<bool> more = d.readOne(batch);
    if (!more)
      return more.takeError();
    if (!*more)
      break;
    ++d.held;
  }
  d.releasePages(d.readOffset());
  return d.held > 0;
}

llvm::Expected<std::vector<rt::Plan>>
InterchangeSource::plan(BatchingStrategy strategy, RunResult &result) {
  Impl &d = *impl_;
  EngineModel &m = d.model();
  if (!d.jitReported) {
    // The modules compiled when the model was loaded.
    result.jitSeconds += m.stats.jitSeconds;
    result.modulesCompiled += m.stats.modulesCompiled;
    result.modulesLoaded += m.stats.modulesLoaded;
    d.jitReported = true;
  }
  std::vector<rt::Plan> plans;
  llvm::SmallVector<OperandRef, 0> wanted;
  llvm::SmallVector<uint32_t, 0> ends;
  AssembleOptions options;
  options.lowerBound = true;
  options.stackOutputs = true;
  for (const std::unique_ptr<Batch> &batch : d.batches) {
    BatchData &data = batch->data();
    if (data.instances.empty())
      continue;
    wanted.clear();
    ends.clear();
    for (const InstanceData &inst : data.instances) {
      wanted.append(inst.outputs.begin(), inst.outputs.end());
      ends.push_back(wanted.size());
    }
    AssembledGraph assembled;
    if (llvm::Error e =
            assembleGraph(m, data, strategy, wanted, ends, options, assembled))
      return std::move(e);
    result.nodes += data.nodes.size();
    result.launches += assembled.launches;
    result.lowerBound += assembled.lowerBound;
    result.plan.launches += assembled.planStats.launches;
    result.plan.gathersCopied += assembled.planStats.gathersCopied;
    result.plan.gathersAsViews += assembled.planStats.gathersAsViews;
    result.plan.concatsPlaced += assembled.planStats.concatsPlaced;
    result.scheduleSeconds += assembled.scheduleSeconds;
    result.jitSeconds += assembled.compileSeconds;
    result.planSeconds += assembled.assembleSeconds;
    plans.push_back(std::move(assembled.plan));
  }
  result.batches += plans.size();
  return std::move(plans);
}
