//===- GraphImporter.cpp - JSON interchange and .mlir to the dynb dialect -===//
//
// The JSON reader builds dynb IR directly: each node becomes one op whose
// location names the file, the instance (or module) and the node, so every
// later diagnostic, the verifier's included, points at the user's input.
//
//===----------------------------------------------------------------------===//
#include "dynb/Import/GraphImporter.h"
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Dialect/ElementwiseKind.h"
#include "dynb/Dialect/Registration.h"
#include "dynb/Import/DuplicateKeys.h"
#include "dynb/Import/NestingDepth.h"
#include "dynb/Runtime/ElementCount.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cerrno>
#include <cstring>
#include <fstream>

using namespace mlir;
using namespace dynb;
namespace json = llvm::json;

namespace {

constexpr int64_t kFormatVersion = 1;

class JsonImporter {
public:
  JsonImporter(StringRef fileName, MLIRContext &ctx, const ImportLimits &limits)
      : ctx(ctx), fileName(fileName), b(&ctx), limits(limits) {}

  OwningOpRef<ModuleOp> importDocument(StringRef text);
  /// A model alone, as values (ModelBuilder): no text, so no lines.
  OwningOpRef<ModuleOp> importModelObject(const json::Object &model) {
    if (failed(beginModule(0)) || failed(importModel(model, 0)))
      return nullptr;
    return std::move(module);
  }
  OwningOpRef<ModuleOp> importLines(StringRef text);

  /// One non-blank line of a JSON Lines file: the model header when
  /// `header`, else an instance, appended to the module.
  LogicalResult importLine(StringRef line, unsigned lineNo, bool header);
  /// The module being imported into, also after releaseModule.
  ModuleOp currentModule() { return target; }
  OwningOpRef<ModuleOp> releaseModule() { return std::move(module); }
  /// Continues numbering instances and counting nodes from an earlier
  /// importer's place in the same file (after the model is imported).
  void resumeAt(size_t instanceIndex, uint64_t instanceNodes) {
    numInstances = instanceIndex;
    numNodes = numModelNodes + instanceNodes;
  }
  size_t instancesImported() const { return numInstances; }
  uint64_t instanceNodes() const { return numNodes - numModelNodes; }

private:
  /// Where something is: file:line plus a description of the place.
  Location place(unsigned line, const Twine &what) {
    return NameLoc::get(StringAttr::get(&ctx, what),
                        FileLineColLoc::get(&ctx, fileName, line, 1));
  }
  InFlightDiagnostic error(Location loc) { return emitError(loc); }

  LogicalResult beginModule(unsigned line);
  LogicalResult importModel(const json::Object &model, unsigned line);
  LogicalResult importParams(const json::Array &params, unsigned line);
  LogicalResult importModule(const json::Value &v, size_t index, unsigned line);
  LogicalResult importInstance(const json::Value &v, size_t index,
                               unsigned line);

  /// The body shared by modules and instances: creates one op per node at
  /// the builder's insertion point. `args` are the module's arguments (in
  /// instances there are none).
  LogicalResult importNodes(const json::Array &nodes, bool inModule,
                            const Twine &where, unsigned line,
                            SmallVectorImpl<SmallVector<Value, 2>> &results,
                            Block *moduleBody);
  FailureOr<Value> resolve(const json::Value &ref,
                           ArrayRef<SmallVector<Value, 2>> results, size_t self,
                           Location loc);
  FailureOr<SmallVector<int64_t>> parseShape(const json::Value *v, Location loc,
                                             StringRef field);
  FailureOr<RankedTensorType> paramType(StringRef name, Location loc,
                                        StringRef role);

  MLIRContext &ctx;
  std::string fileName;
  OpBuilder b;
  OwningOpRef<ModuleOp> module;
  ModuleOp target;
  llvm::StringMap<RankedTensorType> params;
  llvm::StringMap<func::FuncOp> modules;
  size_t numInstances = 0;
  ImportLimits limits;
  uint64_t numNodes = 0;
  /// The model's share of numNodes.
  uint64_t numModelNodes = 0;
};

} // namespace

FailureOr<SmallVector<int64_t>>
JsonImporter::parseShape(const json::Value *v, Location loc, StringRef field) {
  const json::Array *arr = v ? v->getAsArray() : nullptr;
  if (!arr || arr->empty())
    return error(loc) << "'" << field
                      << "' must be a non-empty list of positive integers";
  SmallVector<int64_t> shape;
  for (const json::Value &d : *arr) {
    std::optional<int64_t> n = d.getAsInteger();
    if (!n || *n <= 0)
      return error(loc) << "'" << field
                        << "' must be a non-empty list of positive integers";
    shape.push_back(*n);
    // Checked as it grows, so that a long list of large dimensions stops at
    // the first one past the bound.
    if (!checkedElementCount(shape))
      return error(loc) << "'" << field << "' has more than 2^34 elements";
  }
  return shape;
}

FailureOr<RankedTensorType>
JsonImporter::paramType(StringRef name, Location loc, StringRef role) {
  auto it = params.find(name);
  if (it == params.end())
    return error(loc) << "unknown parameter '" << name << "' as " << role;
  return it->second;
}

LogicalResult JsonImporter::beginModule(unsigned line) {
  module = ModuleOp::create(FileLineColLoc::get(&ctx, fileName, line, 1));
  target = *module;
  b.setInsertionPointToEnd(module->getBody());
  return success();
}

LogicalResult JsonImporter::importParams(const json::Array &list,
                                         unsigned line) {
  for (auto [i, v] : llvm::enumerate(list)) {
    Location loc = place(line, llvm::formatv("param {0}", i));
    const json::Object *o = v.getAsObject();
    std::optional<StringRef> name = o ? o->getString("name") : std::nullopt;
    if (!name || name->empty())
      return error(loc) << "a parameter needs a non-empty string 'name'";
    loc = place(line, llvm::formatv("param '{0}'", *name));
    if (std::optional<StringRef> dtype = o->getString("dtype"))
      if (*dtype != "f32" && *dtype != "F32")
        return error(loc) << "dtype '" << *dtype
                          << "' is not supported (only f32)";
    FailureOr<SmallVector<int64_t>> shape =
        parseShape(o->get("shape"), loc, "shape");
    if (failed(shape))
      return failure();
    if (shape->size() > 3)
      return error(loc) << "parameters are vectors, matrices or stacks of "
                           "expert matrices (rank 3), got rank "
                        << shape->size();
    if (params.count(*name))
      return error(loc) << "parameter '" << *name << "' is declared twice";
    auto type = RankedTensorType::get(*shape, b.getF32Type());
    params[*name] = type;
    b.create<ParamOp>(loc, b.getStringAttr(*name), TypeAttr::get(type));
  }
  return success();
}

FailureOr<Value> JsonImporter::resolve(const json::Value &ref,
                                       ArrayRef<SmallVector<Value, 2>> results,
                                       size_t self, Location loc) {
  std::optional<int64_t> node, result = 0;
  if (const json::Array *pair = ref.getAsArray()) {
    if (pair->size() == 2) {
      node = (*pair)[0].getAsInteger();
      result = (*pair)[1].getAsInteger();
    }
  } else {
    node = ref.getAsInteger();
  }
  if (!node || !result)
    return error(loc) << "an input is a node number or a [node, result] pair";
  if (*node < 0 || static_cast<size_t>(*node) >= self)
    return error(loc) << "input refers to node " << *node
                      << ", which is not an earlier node (inputs must refer "
                         "backwards; a cycle or a forward reference?)";
  const SmallVector<Value, 2> &res = results[*node];
  if (*result < 0 || static_cast<size_t>(*result) >= res.size())
    return error(loc) << "input refers to result " << *result << " of node "
                      << *node << ", which has " << res.size() << " result"
                      << (res.size() == 1 ? "" : "s");
  return res[*result];
}

LogicalResult JsonImporter::importNodes(
    const json::Array &nodes, bool inModule, const Twine &where, unsigned line,
    SmallVectorImpl<SmallVector<Value, 2>> &results, Block *moduleBody) {
  Type f32 = b.getF32Type();
  unsigned argIndex = 0;
  for (auto [i, nv] : llvm::enumerate(nodes)) {
    // Locations are uniqued in the context for its lifetime, so a node gets
    // one (named with its op) and the op-less name is made only for errors:
    // a streamed run would otherwise keep two per node it ever read.
    auto bareLoc = [&] {
      return place(line, where + llvm::formatv(", node {0}", i));
    };
    if (limits.maxNodes && ++numNodes > limits.maxNodes)
      return error(bareLoc())
             << "the input has more than " << limits.maxNodes
             << " nodes, the --max-nodes limit; raise it to read this file";
    const json::Object *o = nv.getAsObject();
    std::optional<StringRef> opName = o ? o->getString("op") : std::nullopt;
    if (!opName)
      return error(bareLoc()) << "a node must be an object with a string 'op'";
    Location loc =
        place(line, where + llvm::formatv(", node {0} ({1})", i, *opName));

    if (inModule && limits.maxModuleOps && i >= limits.maxModuleOps)
      return error(loc) << "the module has more than " << limits.maxModuleOps
                        << " nodes, the --max-module-ops limit; a module is "
                           "compiled as one kernel, so split it or raise "
                           "the limit";
    SmallVector<Value, 4> inputs;
    if (const json::Value *in = o->get("inputs")) {
      const json::Array *arr = in->getAsArray();
      if (!arr)
        return error(loc) << "'inputs' must be a list";
      if (limits.maxOpInputs && arr->size() > limits.maxOpInputs)
        return error(loc) << "the node has " << arr->size()
                          << " inputs, more than the --max-op-inputs limit "
                             "of "
                          << limits.maxOpInputs << "; raise it to compile it";
      for (const json::Value &ref : *arr) {
        FailureOr<Value> v = resolve(ref, results, i, loc);
        if (failed(v))
          return failure();
        inputs.push_back(*v);
      }
    }
    auto needInputs = [&](size_t n) -> LogicalResult {
      if (inputs.size() != n)
        return error(loc) << "'" << *opName << "' takes " << n << " input"
                          << (n == 1 ? "" : "s") << ", got " << inputs.size();
      return success();
    };
    auto tensorOf = [&](Value v) {
      return cast<RankedTensorType>(v.getType());
    };
    auto getInt = [&](StringRef key) -> FailureOr<int64_t> {
      std::optional<int64_t> x = o->getInteger(key);
      if (!x)
        return error(loc) << "'" << *opName << "' needs an integer '" << key
                          << "'";
      return *x;
    };
    auto getName = [&](StringRef key) -> FailureOr<StringRef> {
      std::optional<StringRef> x = o->getString(key);
      if (!x)
        return error(loc) << "'" << *opName << "' needs a string '" << key
                          << "'";
      return *x;
    };
    // A member naming a parameter that may be left out: null when absent.
    auto optionalParam = [&](StringRef key) -> FailureOr<FlatSymbolRefAttr> {
      if (!o->get(key))
        return FlatSymbolRefAttr();
      FailureOr<StringRef> name = getName(key);
      if (failed(name) || failed(paramType(*name, loc, key)))
        return failure();
      return FlatSymbolRefAttr::get(&ctx, *name);
    };

    SmallVector<Value, 2> out;
    StringRef op = *opName;
    if (op == "arg") {
      if (!inModule)
        return error(loc) << "'arg' nodes belong in modules, not instances";
      if (failed(needInputs(0)))
        return failure();
      out.push_back(moduleBody->getArgument(argIndex++));
    } else if (op == "embedding") {
      if (inModule)
        return error(loc) << "'embedding' reads per-instance data and "
                             "belongs in instances; pass the row to the "
                             "module as an argument";
      FailureOr<StringRef> table = getName("table");
      FailureOr<int64_t> index = getInt("index");
      if (failed(table) || failed(index) || failed(needInputs(0)))
        return failure();
      FailureOr<RankedTensorType> t = paramType(*table, loc, "table");
      if (failed(t))
        return failure();
      if (t->getRank() != 2)
        return error(loc) << "table '" << *table << "' is not a matrix";
      if (*index < 0 || *index >= t->getDimSize(0))
        return error(loc) << "index " << *index << " is outside table '"
                          << *table << "' of " << t->getDimSize(0) << " rows";
      out.push_back(b.create<EmbeddingOp>(
          loc, RankedTensorType::get({t->getDimSize(1)}, f32),
          FlatSymbolRefAttr::get(&ctx, *table), b.getI64IntegerAttr(*index)));
    } else if (op == "linear") {
      FailureOr<StringRef> weight = getName("weight");
      if (failed(weight) || failed(needInputs(1)))
        return failure();
      FailureOr<RankedTensorType> w = paramType(*weight, loc, "weight");
      if (failed(w))
        return failure();
      // An expert module's weights are stacked, [experts, N, K]; the
      // verifier holds each against the module's expert count.
      bool stacked = inModule && moduleBody &&
                     isa<func::FuncOp>(moduleBody->getParentOp()) &&
                     moduleBody->getParentOp()->hasAttr(kExpertsAttrName);
      if (w->getRank() != (stacked ? 3 : 2))
        return error(loc) << "weight '" << *weight << "' is not a "
                          << (stacked ? "stack of expert matrices [experts, "
                                        "N, K] (the module has 'experts')"
                                      : "matrix");
      FailureOr<FlatSymbolRefAttr> bias = optionalParam("bias");
      if (failed(bias))
        return failure();
      SmallVector<int64_t> shape(tensorOf(inputs[0]).getShape());
      shape.back() = w->getDimSize(w->getRank() - 2);
      out.push_back(
          b.create<LinearOp>(loc, RankedTensorType::get(shape, f32), inputs[0],
                             FlatSymbolRefAttr::get(&ctx, *weight), *bias));
    } else if (std::optional<ElementwiseKind> kind = elementwiseKindNamed(
                   std::string_view(op.data(), op.size()))) {
      // Every elementwise op reads the same way: its arity's inputs, all of
      // one type, which is also the result's (ElementwiseOps.def).
      unsigned arity = elementwiseArity(*kind);
      if (failed(needInputs(arity)))
        return failure();
      for (unsigned i = 1; i < arity; ++i)
        if (inputs[i].getType() != inputs[0].getType())
          return error(loc)
                 << "'" << op << "' needs inputs of one shape, got "
                 << inputs[0].getType() << " and " << inputs[i].getType();
      OperationState state(loc,
                           (Twine("dynb.") + elementwiseMnemonic(*kind)).str());
      state.addOperands(inputs);
      state.addTypes(inputs[0].getType());
      out.push_back(b.create(state)->getResult(0));
    } else if (op == "concat") {
      if (inputs.size() < 2)
        return error(loc) << "'concat' takes at least 2 inputs, got "
                          << inputs.size();
      SmallVector<int64_t> shape(tensorOf(inputs[0]).getShape());
      shape.back() = 0;
      for (Value v : inputs)
        shape.back() += tensorOf(v).getShape().back();
      out.push_back(
          b.create<ConcatOp>(loc, RankedTensorType::get(shape, f32), inputs));
    } else if (op == "slice") {
      FailureOr<int64_t> offset = getInt("offset");
      FailureOr<int64_t> size = getInt("size");
      if (failed(offset) || failed(size) || failed(needInputs(1)))
        return failure();
      int64_t width = tensorOf(inputs[0]).getShape().back();
      if (*offset < 0 || *size <= 0 || *offset > width ||
          *size > width - *offset)
        return error(loc) << "slice (offset " << *offset << ", size " << *size
                          << ") does not fit in an input of width " << width;
      SmallVector<int64_t> shape(tensorOf(inputs[0]).getShape());
      shape.back() = *size;
      out.push_back(b.create<SliceOp>(loc, RankedTensorType::get(shape, f32),
                                      inputs[0], b.getI64IntegerAttr(*offset),
                                      b.getI64IntegerAttr(*size)));
    } else if (op == "call") {
      FailureOr<StringRef> callee = getName("module");
      if (failed(callee))
        return failure();
      if (inModule)
        return error(loc) << "modules cannot call modules yet (inline '"
                          << *callee << "' into the caller)";
      auto it = modules.find(*callee);
      if (it == modules.end())
        return error(loc) << "unknown module '" << *callee << "'";
      FunctionType fnType = it->second.getFunctionType();
      if (fnType.getNumInputs() != inputs.size())
        return error(loc) << "module '" << *callee << "' takes "
                          << fnType.getNumInputs() << " inputs, got "
                          << inputs.size();
      for (unsigned a = 0; a < inputs.size(); ++a)
        if (fnType.getInput(a) != inputs[a].getType())
          return error(loc) << "input " << a << " is " << inputs[a].getType()
                            << " but module '" << *callee << "' expects "
                            << fnType.getInput(a);
      auto call =
          b.create<CallOp>(loc, fnType.getResults(),
                           FlatSymbolRefAttr::get(&ctx, *callee), inputs);
      llvm::append_range(out, call.getResults());
    } else if (op == "dispatch") {
      FailureOr<StringRef> gate = getName("gate");
      FailureOr<StringRef> experts = getName("experts");
      FailureOr<int64_t> top = getInt("top");
      if (failed(gate) || failed(experts) || failed(top) ||
          failed(needInputs(1)))
        return failure();
      if (inModule)
        return error(loc) << "'dispatch' belongs in instances (modules "
                             "cannot dispatch yet)";
      if (failed(paramType(*gate, loc, "gate")))
        return failure();
      FailureOr<FlatSymbolRefAttr> noise = optionalParam("noise");
      if (failed(noise))
        return failure();
      int64_t noiseSeed = 0;
      if (o->get("noise_seed")) {
        FailureOr<int64_t> seed = getInt("noise_seed");
        if (failed(seed))
          return failure();
        noiseSeed = *seed;
      }
      auto it = modules.find(*experts);
      if (it == modules.end())
        return error(loc) << "unknown module '" << *experts << "'";
      FunctionType fnType = it->second.getFunctionType();
      if (fnType.getNumResults() != 1)
        return error(loc) << "expert module '" << *experts
                          << "' must have one output, has "
                          << fnType.getNumResults();
      // Gate, expert count, k and the module's shape are the verifier's.
      SmallVector<int64_t> shape(tensorOf(inputs[0]).getShape());
      shape.back() =
          cast<RankedTensorType>(fnType.getResult(0)).getShape().back();
      out.push_back(b.create<DispatchOp>(
          loc, RankedTensorType::get(shape, f32), inputs[0],
          FlatSymbolRefAttr::get(&ctx, *gate), *noise,
          FlatSymbolRefAttr::get(&ctx, *experts), b.getI64IntegerAttr(*top),
          b.getI64IntegerAttr(noiseSeed)));
    } else if (op == "softmax_xent") {
      if (inModule)
        return error(loc) << "'softmax_xent' reads per-instance data (its "
                             "label) and belongs in instances";
      FailureOr<int64_t> label = getInt("label");
      if (failed(label) || failed(needInputs(1)))
        return failure();
      RankedTensorType logits = tensorOf(inputs[0]);
      if (logits.getRank() != 1)
        return error(loc) << "'softmax_xent' needs a vector of logits, got "
                          << logits;
      if (*label < 0 || *label >= logits.getDimSize(0))
        return error(loc) << "label " << *label << " is not a class of "
                          << logits.getDimSize(0) << " logits";
      out.push_back(
          b.create<SoftmaxXentOp>(loc, RankedTensorType::get({1}, f32),
                                  inputs[0], b.getI64IntegerAttr(*label)));
    } else {
      InFlightDiagnostic diag = error(loc);
      diag << "unknown op '" << op << "' (expected arg, embedding, linear, ";
      for (unsigned k = 0; k < kNumElementwiseKinds; ++k)
        diag << elementwiseMnemonic(ElementwiseKind(k)) << ", ";
      diag << "concat, slice, call, dispatch or softmax_xent)";
      return diag;
    }
    results.push_back(std::move(out));
  }
  return success();
}

LogicalResult JsonImporter::importModule(const json::Value &v, size_t index,
                                         unsigned line) {
  Location loc = place(line, llvm::formatv("module {0}", index));
  const json::Object *o = v.getAsObject();
  std::optional<StringRef> name = o ? o->getString("name") : std::nullopt;
  if (!name || name->empty())
    return error(loc) << "a module needs a non-empty string 'name'";
  std::string where = llvm::formatv("module '{0}'", *name);
  loc = place(line, where);
  if (modules.count(*name) || params.count(*name))
    return error(loc) << "the name '" << *name << "' is defined twice";
  const json::Array *nodes = o->getArray("nodes");
  const json::Array *outputs = o->getArray("outputs");
  if (!nodes || !outputs)
    return error(loc) << "a module needs lists 'nodes' and 'outputs'";

  // Arguments first: their types make the function type.
  SmallVector<Type> argTypes;
  for (auto [i, nv] : llvm::enumerate(*nodes)) {
    const json::Object *no = nv.getAsObject();
    if (!no || no->getString("op") != std::optional<StringRef>("arg"))
      continue;
    FailureOr<SmallVector<int64_t>> shape = parseShape(
        no->get("shape"),
        place(line, where + llvm::formatv(", node {0} (arg)", i)), "shape");
    if (failed(shape))
      return failure();
    argTypes.push_back(RankedTensorType::get(*shape, b.getF32Type()));
  }
  auto fn = b.create<func::FuncOp>(loc, *name, b.getFunctionType(argTypes, {}));
  modules[*name] = fn;
  // Expert modules (for 'dispatch'): marked with their expert count before
  // the body, whose linears then read stacked weights.
  if (const json::Value *experts = o->get("experts")) {
    std::optional<int64_t> count = experts->getAsInteger();
    if (!count || *count < 1)
      return error(loc) << "'experts' must be a positive integer";
    fn->setAttr(kExpertsAttrName, b.getI64IntegerAttr(*count));
  }
  Block *body = fn.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(body);
  SmallVector<SmallVector<Value, 2>> results;
  if (failed(
          importNodes(*nodes, /*inModule=*/true, where, line, results, body)))
    return failure();
  SmallVector<Value> outs;
  for (const json::Value &ref : *outputs) {
    FailureOr<Value> v =
        resolve(ref, results, results.size(), place(line, where + ", outputs"));
    if (failed(v))
      return failure();
    outs.push_back(*v);
  }
  if (outs.empty())
    return error(loc) << "a module must have at least one output";
  b.create<func::ReturnOp>(loc, outs);
  fn.setFunctionType(b.getFunctionType(argTypes, ValueRange(outs).getTypes()));
  return success();
}

LogicalResult JsonImporter::importInstance(const json::Value &v, size_t index,
                                           unsigned line) {
  std::string where = llvm::formatv("instance {0}", index);
  Location loc = place(line, where);
  const json::Object *o = v.getAsObject();
  const json::Array *nodes = o ? o->getArray("nodes") : nullptr;
  const json::Array *outputs = o ? o->getArray("outputs") : nullptr;
  if (!nodes || !outputs)
    return error(loc) << "an instance needs lists 'nodes' and 'outputs'";
  auto inst = b.create<InstanceOp>(loc);
  OpBuilder::InsertionGuard guard(b);
  b.createBlock(&inst.getBody());
  SmallVector<SmallVector<Value, 2>> results;
  if (failed(importNodes(*nodes, /*inModule=*/false, where, line, results,
                         nullptr)))
    return failure();
  SmallVector<Value> outs;
  for (const json::Value &ref : *outputs) {
    FailureOr<Value> v =
        resolve(ref, results, results.size(), place(line, where + ", outputs"));
    if (failed(v))
      return failure();
    outs.push_back(*v);
  }
  b.create<OutputOp>(loc, outs);
  ++numInstances;
  return success();
}

LogicalResult JsonImporter::importModel(const json::Object &model,
                                        unsigned line) {
  const json::Array *ps = model.getArray("params");
  const json::Array *ms = model.getArray("modules");
  if (!ps || !ms)
    return error(place(line, "model"))
           << "the model needs lists 'params' and 'modules'";
  if (failed(importParams(*ps, line)))
    return failure();
  for (auto [i, m] : llvm::enumerate(*ms))
    if (failed(importModule(m, i, line)))
      return failure();
  numModelNodes = numNodes;
  return success();
}

static LogicalResult checkVersion(const json::Object &o, Location loc) {
  std::optional<int64_t> version = o.getInteger("dynb");
  if (!version)
    return emitError(loc) << "not a dynb interchange file: the top-level "
                             "object needs \"dynb\": "
                          << kFormatVersion;
  if (*version != kFormatVersion)
    return emitError(loc) << "interchange version " << *version
                          << " is not supported (this dynb reads version "
                          << kFormatVersion << ")";
  return success();
}

OwningOpRef<ModuleOp> JsonImporter::importDocument(StringRef text) {
  Location fileLoc = FileLineColLoc::get(&ctx, fileName, 1, 1);
  llvm::Expected<json::Value> doc = json::parse(text);
  if (!doc) {
    emitError(fileLoc) << "invalid JSON: " << llvm::toString(doc.takeError());
    return nullptr;
  }
  const json::Object *top = doc->getAsObject();
  if (!top) {
    emitError(fileLoc) << "the document must be a JSON object";
    return nullptr;
  }
  if (failed(checkVersion(*top, fileLoc)) || failed(beginModule(1)))
    return nullptr;
  const json::Object *model = top->getObject("model");
  const json::Array *instances = top->getArray("instances");
  if (!model || !instances) {
    emitError(fileLoc) << "the document needs an object 'model' and a list "
                          "'instances'";
    return nullptr;
  }
  if (failed(importModel(*model, 1)))
    return nullptr;
  for (auto [i, inst] : llvm::enumerate(*instances))
    if (failed(importInstance(inst, i, 1)))
      return nullptr;
  return std::move(module);
}

LogicalResult JsonImporter::importLine(StringRef line, unsigned lineNo,
                                       bool header) {
  Location loc = FileLineColLoc::get(&ctx, fileName, lineNo, 1);
  llvm::Expected<json::Value> v = json::parse(line);
  if (!v)
    return emitError(loc) << "invalid JSON on line " << lineNo << ": "
                          << llvm::toString(v.takeError());
  const json::Object *o = v->getAsObject();
  if (!o)
    return emitError(loc) << "each line must be a JSON object";
  if (!header)
    return importInstance(*v, numInstances, lineNo);
  if (failed(checkVersion(*o, loc)) || failed(beginModule(lineNo)))
    return failure();
  const json::Object *model = o->getObject("model");
  if (!model)
    return emitError(loc) << "the first line needs an object 'model'";
  return importModel(*model, lineNo);
}

OwningOpRef<ModuleOp> JsonImporter::importLines(StringRef text) {
  unsigned lineNo = 0;
  bool haveHeader = false;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNo;
    if (line.trim().empty())
      continue;
    if (failed(importLine(line, lineNo, /*header=*/!haveHeader)))
      return nullptr;
    haveHeader = true;
  }
  if (!haveHeader) {
    emitError(FileLineColLoc::get(&ctx, fileName, 1, 1)) << "the file is empty";
    return nullptr;
  }
  return std::move(module);
}

/// Fails, with an error at the line, when `text` nests too deep to parse.
static LogicalResult checkNesting(MLIRContext &ctx, StringRef name,
                                  StringRef text, bool lineComments) {
  std::optional<unsigned> line =
      findExcessiveNesting(text, kMaxNestingDepth, lineComments);
  if (!line)
    return success();
  emitError(FileLineColLoc::get(&ctx, name, *line, 1))
      << "brackets nest deeper than " << kMaxNestingDepth
      << " levels; no dynb input needs that, and parsers would overflow "
         "the stack";
  return failure();
}

/// The first shaped type whose element count passes the bound among `op`'s
/// result types, its regions' argument types and the types its attributes
/// hold (a parameter's type, a function's signature), nested types
/// included. Nothing is assumed of the op's form: this runs before the
/// verifier, so a required attribute may be missing.
static std::optional<ShapedType> oversizedType(Operation *op) {
  std::optional<ShapedType> found;
  auto check = [&](Type t) {
    auto shaped = dyn_cast<ShapedType>(t);
    if (found || !shaped || !shaped.hasRank())
      return;
    // Dynamic dimensions are the verifier's to refuse where they are wrong;
    // the static ones must not overflow.
    SmallVector<int64_t> dims;
    for (int64_t d : shaped.getShape())
      if (!ShapedType::isDynamic(d))
        dims.push_back(d);
    if (!checkedElementCount(dims))
      found = shaped;
  };
  auto walkType = [&](Type t) { t.walk([&](Type sub) { check(sub); }); };
  for (Type t : op->getResultTypes())
    walkType(t);
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Type t : block.getArgumentTypes())
        walkType(t);
  op->getAttrDictionary().walk([&](Type t) { check(t); });
  return found;
}

/// The JSON importer's compile budgets, for a parsed .mlir module.
static LogicalResult checkCompileBudgets(ModuleOp module,
                                         const ImportLimits &limits) {
  for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
    uint64_t ops = 0;
    WalkResult tooMany = fn.walk([&](Operation *op) {
      if (op == fn.getOperation() || op->hasTrait<OpTrait::IsTerminator>())
        return WalkResult::advance();
      if (limits.maxModuleOps && ++ops > limits.maxModuleOps) {
        op->emitError() << "module @" << fn.getName() << " has more than "
                        << limits.maxModuleOps
                        << " ops, the --max-module-ops limit; a module is "
                           "compiled as one kernel, so split it or raise "
                           "the limit";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (tooMany.wasInterrupted())
      return failure();
  }
  WalkResult wide = module.walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::IsTerminator>() || !limits.maxOpInputs ||
        op->getNumOperands() <= limits.maxOpInputs)
      return WalkResult::advance();
    op->emitError() << "'" << op->getName() << "' has " << op->getNumOperands()
                    << " inputs, more than the --max-op-inputs limit of "
                    << limits.maxOpInputs << "; raise it to compile it";
    return WalkResult::interrupt();
  });
  return failure(wide.wasInterrupted());
}

OwningOpRef<ModuleOp>
dynb::parseMlirGraphs(std::unique_ptr<llvm::MemoryBuffer> buffer,
                      llvm::SourceMgr &sourceMgr, MLIRContext &ctx) {
  loadDynbDialects(ctx);
  // Scanned before the buffer joins sourceMgr: the diagnostic would echo
  // the offending line, which in such a file is often the whole file.
  if (std::optional<MlirNestingFinding> deep =
          findExcessiveMlirNesting(buffer->getBuffer(), kMaxNestingDepth)) {
    emitError(
        FileLineColLoc::get(&ctx, buffer->getBufferIdentifier(), deep->line, 1))
        << deep->message;
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(
      sourceMgr, ParserConfig(&ctx, /*verifyAfterParse=*/false));
  if (!module)
    return nullptr;
  WalkResult sizes = module->walk([&](Operation *op) {
    std::optional<ShapedType> type = oversizedType(op);
    if (!type)
      return WalkResult::advance();
    op->emitError() << "type " << *type
                    << " has more than 2^34 elements; dynb refuses tensors "
                       "that large before computing any size from them";
    return WalkResult::interrupt();
  });
  if (sizes.wasInterrupted() || failed(verify(*module)))
    return nullptr;
  // The parser gives the module it wraps around top-level ops the location
  // file:0:0; errors about the whole input (memory, plans) are located there
  // and would print a line that does not exist.
  if (auto fileLoc = dyn_cast<FileLineColLoc>(module->getLoc());
      fileLoc && fileLoc.getLine() == 0)
    module->getOperation()->setLoc(
        FileLineColLoc::get(fileLoc.getFilename(), 1, 1));
  return module;
}

OwningOpRef<ModuleOp> dynb::importJsonGraphs(StringRef name, StringRef text,
                                             MLIRContext &ctx,
                                             const ImportLimits &limits) {
  loadDynbDialects(ctx);
  if (failed(checkNesting(ctx, name, text, /*lineComments=*/false)))
    return nullptr;
  if (std::optional<DuplicateKey> dup = findDuplicateKey(text)) {
    emitError(FileLineColLoc::get(&ctx, name, dup->line, 1))
        << "an object names the key '" << dup->key
        << "' twice; JSON leaves the meaning of that open, so dynb refuses it";
    return nullptr;
  }
  // A JSON Lines file's first line is a complete object; a document's first
  // line (unless the whole document is one line) is not.
  StringRef first = text.ltrim().split('\n').first;
  bool lines = name.ends_with(".jsonl");
  if (!lines && !name.ends_with(".json") && first.size() < text.trim().size()) {
    llvm::Expected<json::Value> probe = json::parse(first);
    if (probe)
      lines = true;
    else
      llvm::consumeError(probe.takeError());
  }
  JsonImporter importer(name, ctx, limits);
  OwningOpRef<ModuleOp> module =
      lines ? importer.importLines(text) : importer.importDocument(text);
  if (module && failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> dynb::importJsonModel(StringRef name,
                                            const json::Object &model,
                                            MLIRContext &ctx,
                                            const ImportLimits &limits) {
  loadDynbDialects(ctx);
  JsonImporter importer(name, ctx, limits);
  OwningOpRef<ModuleOp> module = importer.importModelObject(model);
  if (module && failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> dynb::importGraphFile(StringRef path, MLIRContext &ctx,
                                            llvm::SourceMgr &sourceMgr,
                                            const ImportLimits &limits) {
  loadDynbDialects(ctx);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buf =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buf) {
    emitError(UnknownLoc::get(&ctx))
        << "cannot read '" << path << "': " << buf.getError().message();
    return nullptr;
  }
  if (path.ends_with(".mlir")) {
    OwningOpRef<ModuleOp> module =
        parseMlirGraphs(std::move(*buf), sourceMgr, ctx);
    if (module && failed(checkCompileBudgets(*module, limits)))
      return nullptr;
    if (module && limits.maxNodes) {
      uint64_t ops = 0;
      module->walk([&](Operation *) { ++ops; });
      if (ops > limits.maxNodes) {
        emitError(module->getLoc())
            << "the input has " << ops << " operations, more than the "
            << "--max-nodes limit of " << limits.maxNodes
            << "; raise it to read this file";
        return nullptr;
      }
    }
    return module;
  }
  return importJsonGraphs(path, (*buf)->getBuffer(), ctx, limits);
}

struct JsonLinesStream::Impl {
  Impl(StringRef path, const ImportLimits &limits)
      : path(path.str()), limits(limits) {}

  /// The next non-blank line, or false at the end of the file.
  bool readLine(std::string &line) {
    while (std::getline(file, line)) {
      ++lineNo;
      if (!StringRef(line).trim().empty())
        return true;
    }
    return false;
  }
  /// The whole-file reader's checks, made on one line.
  LogicalResult checkLine(MLIRContext &ctx, StringRef line) {
    Location loc = FileLineColLoc::get(&ctx, path, lineNo, 1);
    if (findExcessiveNesting(line, kMaxNestingDepth, /*lineComments=*/false))
      return emitError(loc)
             << "brackets nest deeper than " << kMaxNestingDepth
             << " levels; no dynb input needs that, and parsers would "
                "overflow the stack";
    if (std::optional<DuplicateKey> dup = findDuplicateKey(line))
      return emitError(loc) << "an object names the key '" << dup->key
                            << "' twice; JSON leaves the meaning of that "
                               "open, so dynb refuses it";
    return success();
  }
  /// Outputs are stacked over the whole file, so every instance must return
  /// what the file's first one does; batches are checked separately by the
  /// batching pass, and are in contexts of their own, so the first
  /// instance's types are kept as text.
  LogicalResult checkOutputTypes(InstanceOp inst) {
    std::vector<std::string> types;
    for (Type t :
         cast<OutputOp>(inst.getBody().front().back()).getValues().getTypes()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      t.print(os);
      types.push_back(std::move(text));
    }
    if (!firstOutputTypes) {
      firstOutputTypes = std::move(types);
      return success();
    }
    if (types == *firstOutputTypes)
      return success();
    return inst.emitOpError()
           << "has outputs of other types than instance 0 ("
           << llvm::join(types, ", ") << " against "
           << llvm::join(*firstOutputTypes, ", ")
           << "); outputs are stacked, so every instance must return the "
              "same number and types";
  }
  /// Opens the file and reads up to the first instance line.
  LogicalResult openAtFirstInstance(MLIRContext &ctx) {
    file.close();
    file.clear();
    file.open(path, std::ios::binary);
    lineNo = 0;
    instancesRead = 0;
    instanceNodes = 0;
    firstOutputTypes.reset();
    if (!file) {
      emitError(UnknownLoc::get(&ctx))
          << "cannot read '" << path << "': " << std::strerror(errno);
      return failure();
    }
    if (!readLine(header)) {
      emitError(FileLineColLoc::get(&ctx, path, 1, 1)) << "the file is empty";
      return failure();
    }
    headerLine = lineNo;
    return success();
  }
  /// A module in `ctx` holding the model, and the importer that made it.
  std::unique_ptr<JsonImporter> importModel(MLIRContext &ctx) {
    loadDynbDialects(ctx);
    auto importer = std::make_unique<JsonImporter>(path, ctx, limits);
    if (failed(importer->importLine(header, headerLine, /*header=*/true)) ||
        failed(verify(importer->currentModule())))
      return nullptr;
    return importer;
  }

  std::string path;
  ImportLimits limits;
  std::ifstream file;
  std::string header;
  unsigned lineNo = 0, headerLine = 0;
  uint64_t instanceLines = 0;
  size_t instancesRead = 0;
  uint64_t instanceNodes = 0;
  OwningOpRef<ModuleOp> model;
  std::optional<std::vector<std::string>> firstOutputTypes;
};

JsonLinesStream::JsonLinesStream(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
JsonLinesStream::~JsonLinesStream() = default;

std::unique_ptr<JsonLinesStream>
JsonLinesStream::open(StringRef path, MLIRContext &ctx,
                      const ImportLimits &limits) {
  loadDynbDialects(ctx);
  auto impl = std::make_unique<Impl>(path, limits);
  if (failed(impl->openAtFirstInstance(ctx)) ||
      failed(impl->checkLine(ctx, impl->header)))
    return nullptr;
  std::unique_ptr<JsonImporter> importer = impl->importModel(ctx);
  if (!importer)
    return nullptr;
  impl->model = importer->releaseModule();
  // Counted up front so that a run can size its outputs and say how many
  // instances it reads; only line breaks are looked at.
  std::string line;
  while (impl->readLine(line))
    ++impl->instanceLines;
  if (failed(impl->openAtFirstInstance(ctx)))
    return nullptr;
  return std::unique_ptr<JsonLinesStream>(new JsonLinesStream(std::move(impl)));
}

OwningOpRef<ModuleOp> JsonLinesStream::takeModel() {
  return std::move(impl_->model);
}

uint64_t JsonLinesStream::numInstances() const { return impl_->instanceLines; }

FailureOr<OwningOpRef<ModuleOp>> JsonLinesStream::next(MLIRContext &ctx,
                                                       size_t maxInstances) {
  std::string line;
  if (!impl_->readLine(line))
    return OwningOpRef<ModuleOp>();
  std::unique_ptr<JsonImporter> importer = impl_->importModel(ctx);
  if (!importer)
    return failure();
  importer->resumeAt(impl_->instancesRead, impl_->instanceNodes);
  size_t count = 0;
  do {
    if (failed(impl_->checkLine(ctx, line)) ||
        failed(importer->importLine(line, impl_->lineNo, /*header=*/false)))
      return failure();
    ++count;
  } while ((maxInstances == 0 || count < maxInstances) &&
           impl_->readLine(line));
  impl_->instancesRead = importer->instancesImported();
  impl_->instanceNodes = importer->instanceNodes();
  OwningOpRef<ModuleOp> module = importer->releaseModule();
  // Verifying each instance, not the whole module, leaves out the checks a
  // module's symbol table makes of its users (a dispatch's experts, top-k
  // and gate shapes; a call's signature): those are made here, so that a
  // streamed batch is refused exactly where the whole-file run refuses it.
  SymbolTableCollection tables;
  for (InstanceOp inst : module->getOps<InstanceOp>()) {
    if (failed(verify(inst)) || failed(impl_->checkOutputTypes(inst)))
      return failure();
    WalkResult uses = inst.walk([&](SymbolUserOpInterface user) {
      return failed(user.verifySymbolUses(tables)) ? WalkResult::interrupt()
                                                   : WalkResult::advance();
    });
    if (uses.wasInterrupted())
      return failure();
  }
  return module;
}

LogicalResult JsonLinesStream::rewind(MLIRContext &ctx) {
  return impl_->openAtFirstInstance(ctx);
}
