//===- ClevrImporter.cpp - CLEVR question programs as IEP instances -------===//
//
// The model is the execution engine of Johnson et al., "Inferring and
// Executing Programs for Visual Reasoning" (2017), with its defaults
// (docs/workloads.md section 2, docs/clevr.md): a stem, one residual module per
// program token (each with its own weights) and a classifier. Programs come
// in CLEVR's own JSON; every problem is reported at the file, the question
// and the node.
//
//===----------------------------------------------------------------------===//
#include "dynb/Import/ClevrImporter.h"
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Dialect/Registration.h"
#include "dynb/Import/DuplicateKeys.h"
#include "dynb/Import/NestingDepth.h"
#include "dynb/Runtime/ElementCount.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace dynb;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// The tokens
//===----------------------------------------------------------------------===//

const std::vector<std::string> &dynb::clevrModuleTokens() {
  static const std::vector<std::string> tokens = [] {
    std::vector<std::string> t = {"scene"};
    auto withValues = [&](StringRef fn, std::initializer_list<StringRef> vs) {
      for (StringRef v : vs)
        t.push_back((fn + "[" + v + "]").str());
    };
    withValues("filter_color", {"gray", "red", "blue", "green", "brown",
                                "purple", "cyan", "yellow"});
    withValues("filter_shape", {"cube", "sphere", "cylinder"});
    withValues("filter_size", {"small", "large"});
    withValues("filter_material", {"rubber", "metal"});
    withValues("relate", {"left", "right", "behind", "front"});
    for (StringRef u :
         {"same_size",      "same_color",    "same_material",  "same_shape",
          "unique",         "count",         "exist",          "query_shape",
          "query_color",    "query_size",    "query_material", "union",
          "intersect",      "equal_color",   "equal_shape",    "equal_size",
          "equal_material", "equal_integer", "less_than",      "greater_than"})
      t.push_back(u.str());
    return t;
  }();
  return tokens;
}

int dynb::clevrTokenArity(StringRef token) {
  static const llvm::StringMap<int> arity = [] {
    llvm::StringMap<int> m;
    const std::vector<std::string> &t = clevrModuleTokens();
    for (size_t i = 0; i < t.size(); ++i)
      m[t[i]] = i == 0 ? 0 : i < 31 ? 1 : 2;
    return m;
  }();
  auto it = arity.find(token);
  return it == arity.end() ? -1 : it->second;
}

bool dynb::looksLikeClevrQuestions(StringRef text) {
  StringRef head = text.ltrim();
  if (!head.starts_with("{"))
    return false;
  // CLEVR's files put "info" (a small object) before "questions"; dynb's
  // own interchange documents start with their "dynb" version key.
  StringRef start = head.take_front(4096);
  return start.contains("\"questions\"") && !start.contains("\"dynb\"");
}

//===----------------------------------------------------------------------===//
// Where each question and node starts
//===----------------------------------------------------------------------===//

namespace {

struct Position {
  unsigned line = 1, col = 1;
};

struct QuestionPositions {
  Position start;
  std::vector<Position> nodes;
};

/// Finds the line and column of every question object and of every program
/// node in the text (llvm::json keeps no positions). A scan of the brackets
/// outside strings, remembering which key opened each container.
std::vector<QuestionPositions> scanPositions(StringRef text) {
  enum class Role : uint8_t { Other, Questions, Question, Program };
  struct Frame {
    char kind;
    Role role;
    std::string key; // objects: the last key read
  };
  std::vector<Frame> stack;
  std::vector<QuestionPositions> out;
  std::string str, lastString;
  bool inString = false, escape = false;
  Position pos;
  for (char c : text) {
    Position here = pos;
    if (c == '\n') {
      ++pos.line;
      pos.col = 1;
    } else {
      ++pos.col;
    }
    if (inString) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"') {
        inString = false;
        lastString = str;
      } else
        str += c;
      continue;
    }
    switch (c) {
    case '"':
      inString = true;
      str.clear();
      break;
    case ':':
      if (!stack.empty() && stack.back().kind == '{')
        stack.back().key = lastString;
      break;
    case '[': {
      Role role = Role::Other;
      if (stack.size() == 1 && stack.back().key == "questions")
        role = Role::Questions;
      else if (!stack.empty() && stack.back().role == Role::Question &&
               stack.back().key == "program")
        role = Role::Program;
      stack.push_back({'[', role, {}});
      break;
    }
    case '{': {
      Role role = Role::Other;
      if (!stack.empty() && stack.back().role == Role::Questions) {
        role = Role::Question;
        out.push_back({here, {}});
      } else if (!stack.empty() && stack.back().role == Role::Program &&
                 !out.empty()) {
        out.back().nodes.push_back(here);
      }
      stack.push_back({'{', role, {}});
      break;
    }
    case ']':
    case '}':
      if (!stack.empty())
        stack.pop_back();
      break;
    default:
      break;
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

class ClevrImporter {
public:
  ClevrImporter(StringRef fileName, MLIRContext &ctx,
                const ClevrModelConfig &config, const ImportLimits &limits)
      : fileName(fileName.str()), ctx(ctx), config(config), limits(limits),
        b(&ctx), f32(b.getF32Type()) {}

  OwningOpRef<ModuleOp> run(StringRef text);

private:
  Location at(Position p, const std::string &what = "") {
    Location file = FileLineColLoc::get(&ctx, fileName, p.line, p.col);
    if (what.empty())
      return file;
    return NameLoc::get(StringAttr::get(&ctx, what), file);
  }
  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32);
  }
  RankedTensorType map(int64_t channels) {
    return tensor({channels, config.mapSize, config.mapSize});
  }
  FlatSymbolRefAttr param(const std::string &name, ArrayRef<int64_t> shape) {
    b.create<ParamOp>(loc, b.getStringAttr(name), TypeAttr::get(tensor(shape)));
    return FlatSymbolRefAttr::get(&ctx, name);
  }
  /// conv (+ bias), its parameters `prefix.weight` and `prefix.bias`.
  Value conv(Value x, const std::string &prefix, int64_t out, int64_t k,
             OpBuilder &fb);
  func::FuncOp beginModule(const std::string &name, TypeRange args, Type result,
                           OpBuilder &fb);
  void buildStem();
  void buildModule(const std::string &token, int arity);
  void buildClassifier();
  /// y = ReLU(x + conv2(ReLU(conv1(x)))).
  Value residual(Value x, const std::string &token, OpBuilder &fb);

  LogicalResult importQuestion(const json::Value &q, size_t index,
                               const QuestionPositions *pos, int64_t image);

  std::string fileName;
  MLIRContext &ctx;
  ClevrModelConfig config;
  ImportLimits limits;
  OpBuilder b;
  Type f32;
  Location loc = UnknownLoc::get(&ctx);
  OwningOpRef<ModuleOp> module;
  /// Params go first, in the module's block; functions after them.
  Block::iterator paramsEnd;
  uint64_t nodes = 0;
};

} // namespace

Value ClevrImporter::conv(Value x, const std::string &prefix, int64_t out,
                          int64_t k, OpBuilder &fb) {
  auto in = cast<RankedTensorType>(x.getType());
  FlatSymbolRefAttr w =
      param(prefix + ".weight", {out, in.getDimSize(0), k, k});
  FlatSymbolRefAttr bias = param(prefix + ".bias", {out});
  return fb.create<Conv2DOp>(loc, map(out), x, w, bias,
                             fb.getI64IntegerAttr(k / 2));
}

func::FuncOp ClevrImporter::beginModule(const std::string &name, TypeRange args,
                                        Type result, OpBuilder &fb) {
  auto fn =
      fb.create<func::FuncOp>(loc, name, fb.getFunctionType(args, {result}));
  fb.setInsertionPointToEnd(fn.addEntryBlock());
  return fn;
}

Value ClevrImporter::residual(Value x, const std::string &token,
                              OpBuilder &fb) {
  int64_t d = config.moduleDim;
  Value h = fb.create<ReluOp>(loc, conv(x, token + ".conv1", d, 3, fb));
  Value y = conv(h, token + ".conv2", d, 3, fb);
  return fb.create<ReluOp>(loc, fb.create<AddOp>(loc, x, y));
}

void ClevrImporter::buildStem() {
  OpBuilder fb = OpBuilder::atBlockEnd(module->getBody());
  auto fn = beginModule("stem", {map(config.featureChannels)},
                        map(config.moduleDim), fb);
  Value x = fn.getArgument(0);
  x = fb.create<ReluOp>(loc, conv(x, "stem.conv1", config.moduleDim, 3, fb));
  x = fb.create<ReluOp>(loc, conv(x, "stem.conv2", config.moduleDim, 3, fb));
  fb.create<func::ReturnOp>(loc, x);
}

void ClevrImporter::buildModule(const std::string &token, int arity) {
  OpBuilder fb = OpBuilder::atBlockEnd(module->getBody());
  Type m = map(config.moduleDim);
  SmallVector<Type, 2> args(std::max(arity, 1), m);
  auto fn = beginModule(token, args, m, fb);
  Value x = fn.getArgument(0);
  if (arity == 2) {
    // IEP's ConcatModule: a 1x1 projection of both inputs' channels, then
    // a residual block on the projection.
    Value cat = fb.create<ChannelConcatOp>(loc, map(2 * config.moduleDim),
                                           fn.getArguments());
    x = fb.create<ReluOp>(loc,
                          conv(cat, token + ".proj", config.moduleDim, 1, fb));
  }
  fb.create<func::ReturnOp>(loc, residual(x, token, fb));
}

void ClevrImporter::buildClassifier() {
  OpBuilder fb = OpBuilder::atBlockEnd(module->getBody());
  auto fn = beginModule("classifier", {map(config.moduleDim)},
                        tensor({config.answers}), fb);
  Value x = fb.create<ReluOp>(
      loc, conv(fn.getArgument(0), "classifier.proj", config.projDim, 1, fb));
  int64_t half = config.mapSize / 2;
  x = fb.create<MaxPool2DOp>(loc, tensor({config.projDim, half, half}), x);
  int64_t flat = config.projDim * half * half;
  x = fb.create<FlattenOp>(loc, tensor({flat}), x);
  auto dense = [&](Value v, const std::string &prefix, int64_t out) {
    FlatSymbolRefAttr w =
        param(prefix + ".weight",
              {out, cast<RankedTensorType>(v.getType()).getDimSize(0)});
    FlatSymbolRefAttr bias = param(prefix + ".bias", {out});
    return fb.create<LinearOp>(loc, tensor({out}), v, w, bias).getResult();
  };
  x = fb.create<ReluOp>(loc, dense(x, "classifier.fc1", config.fcDim));
  fb.create<func::ReturnOp>(loc, dense(x, "classifier.fc2", config.answers));
}

LogicalResult ClevrImporter::importQuestion(const json::Value &qv, size_t index,
                                            const QuestionPositions *pos,
                                            int64_t image) {
  Position qpos = pos ? pos->start : Position{};
  std::string qwhere = "question " + std::to_string(index);
  const json::Object *q = qv.getAsObject();
  const json::Array *program = q ? q->getArray("program") : nullptr;
  if (!program)
    return emitError(at(qpos, qwhere)) << "a question needs a list 'program'";
  if (program->empty())
    return emitError(at(qpos, qwhere))
           << "the program is empty: it needs at least one node, the root "
              "last";
  nodes += program->size();
  if (limits.maxNodes && nodes > limits.maxNodes)
    return emitError(at(qpos, qwhere))
           << "the questions hold more than the --max-nodes limit of "
           << limits.maxNodes << " program nodes; raise it to read this file";

  OpBuilder ib = OpBuilder::atBlockEnd(module->getBody());
  auto inst = ib.create<InstanceOp>(at(qpos, qwhere));
  ib.createBlock(&inst.getBody());
  Type m = map(config.moduleDim);
  Value stem;
  if (config.modulesOnly) {
    stem =
        ib.create<EmbeddingOp>(loc, m, FlatSymbolRefAttr::get(&ctx, "stem_out"),
                               ib.getI64IntegerAttr(image));
  } else {
    Value features = ib.create<EmbeddingOp>(
        loc, map(config.featureChannels),
        FlatSymbolRefAttr::get(&ctx, "features"), ib.getI64IntegerAttr(image));
    stem = ib.create<CallOp>(loc, TypeRange{m},
                             FlatSymbolRefAttr::get(&ctx, "stem"),
                             ValueRange{features})
               .getResult(0);
  }
  SmallVector<Value> values;
  for (auto [j, nv] : llvm::enumerate(*program)) {
    Position npos = pos && j < pos->nodes.size() ? pos->nodes[j] : qpos;
    std::string where = qwhere + ", node " + std::to_string(j);
    const json::Object *node = nv.getAsObject();
    std::optional<StringRef> fn =
        node ? node->getString("function") : std::nullopt;
    if (!fn)
      return emitError(at(npos, where))
             << "a program node needs a string 'function'";
    // CLEVR's token: function[value] when the node has a value input.
    std::string token = fn->str();
    if (const json::Value *vi = node->get("value_inputs")) {
      const json::Array *vs = vi->getAsArray();
      if (!vs || vs->size() > 1 || (vs->size() == 1 && !(*vs)[0].getAsString()))
        return emitError(at(npos, where + " (" + token + ")"))
               << "'value_inputs' must be a list of at most one string";
      if (vs->size() == 1)
        token += "[" + (*vs)[0].getAsString()->str() + "]";
    }
    where += " (" + token + ")";
    int arity = clevrTokenArity(token);
    if (arity < 0)
      return emitError(at(npos, where))
             << "unknown function '" << token
             << "': the IEP model has modules for scene, filter_*[value], "
                "relate[value], same_*, unique, count, exist, query_*, "
                "union, intersect, equal_*, less_than and greater_than";
    const json::Array *inputs = node->getArray("inputs");
    if (!inputs)
      return emitError(at(npos, where)) << "a program node needs a list "
                                           "'inputs'";
    if (static_cast<int>(inputs->size()) != arity)
      return emitError(at(npos, where))
             << "'" << token << "' takes " << arity << " input"
             << (arity == 1 ? "" : "s") << ", got " << inputs->size();
    SmallVector<Value, 2> args;
    for (const json::Value &iv : *inputs) {
      std::optional<int64_t> i = iv.getAsInteger();
      if (!i)
        return emitError(at(npos, where))
               << "inputs must be node indices (integers)";
      if (*i < 0 || *i >= static_cast<int64_t>(j))
        return emitError(at(npos, where))
               << "input " << *i << " is not an earlier node (0.."
               << static_cast<int64_t>(j) - 1
               << "): programs list nodes in topological order, so forward "
                  "references and cycles are refused";
      args.push_back(values[*i]);
    }
    if (arity == 0)
      args.push_back(stem);
    values.push_back(ib.create<CallOp>(at(npos, where), TypeRange{m},
                                       FlatSymbolRefAttr::get(&ctx, token),
                                       args)
                         .getResult(0));
  }
  if (config.modulesOnly) {
    ib.create<OutputOp>(loc, ValueRange{values.back()});
    return success();
  }
  Value answer = ib.create<CallOp>(loc, TypeRange{tensor({config.answers})},
                                   FlatSymbolRefAttr::get(&ctx, "classifier"),
                                   ValueRange{values.back()})
                     .getResult(0);
  ib.create<OutputOp>(loc, ValueRange{answer});
  return success();
}

OwningOpRef<ModuleOp> ClevrImporter::run(StringRef text) {
  Location fileLoc = at({});
  llvm::Expected<json::Value> doc = json::parse(text);
  if (!doc) {
    emitError(fileLoc) << "invalid JSON: " << llvm::toString(doc.takeError());
    return nullptr;
  }
  const json::Object *top = doc->getAsObject();
  const json::Array *questions = top ? top->getArray("questions") : nullptr;
  if (!questions) {
    emitError(fileLoc) << "a CLEVR question file is an object with a list "
                          "'questions'";
    return nullptr;
  }
  if (questions->empty()) {
    emitError(fileLoc) << "the file holds no questions";
    return nullptr;
  }
  std::vector<QuestionPositions> positions = scanPositions(text);
  // Feature rows: CLEVR's image_index when given, else the question's index.
  std::vector<int64_t> images;
  int64_t rows = 0;
  for (auto [i, qv] : llvm::enumerate(*questions)) {
    int64_t image = static_cast<int64_t>(i);
    if (const json::Object *q = qv.getAsObject())
      if (const json::Value *iv = q->get("image_index")) {
        std::optional<int64_t> v = iv->getAsInteger();
        // A row index of the feature table, which the runtime keeps as
        // a 32-bit integer.
        if (!v || *v < 0 || *v >= (int64_t(1) << 31)) {
          Position p = i < positions.size() ? positions[i].start : Position{};
          emitError(at(p, "question " + std::to_string(i)))
              << "'image_index' must be an integer from 0 to 2^31 - 1";
          return nullptr;
        }
        image = *v;
      }
    images.push_back(image);
    rows = std::max(rows, image + 1);
  }
  int64_t tableShape[] = {
      rows, config.modulesOnly ? config.moduleDim : config.featureChannels,
      config.mapSize, config.mapSize};
  if (!checkedElementCount(tableShape)) {
    size_t largest =
        std::max_element(images.begin(), images.end()) - images.begin();
    Position p =
        largest < positions.size() ? positions[largest].start : Position{};
    emitError(at(p, "question " + std::to_string(largest)))
        << "'image_index' " << images[largest] << " needs a feature table of "
        << rows << " rows of " << tableShape[1] << "x" << tableShape[2] << "x"
        << tableShape[3] << ", more than 2^34 elements";
    return nullptr;
  }

  module = ModuleOp::create(fileLoc);
  b.setInsertionPointToEnd(module->getBody());
  if (config.modulesOnly) {
    param("stem_out", {rows, config.moduleDim, config.mapSize, config.mapSize});
  } else {
    param("features",
          {rows, config.featureChannels, config.mapSize, config.mapSize});
    buildStem();
  }
  for (const std::string &token : clevrModuleTokens())
    buildModule(token, clevrTokenArity(token));
  if (!config.modulesOnly)
    buildClassifier();
  for (auto [i, qv] : llvm::enumerate(*questions))
    if (failed(importQuestion(
            qv, i, i < positions.size() ? &positions[i] : nullptr, images[i])))
      return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  return std::move(module);
}

OwningOpRef<ModuleOp> dynb::importClevrQuestions(StringRef name, StringRef text,
                                                 MLIRContext &ctx,
                                                 const ClevrModelConfig &config,
                                                 const ImportLimits &limits) {
  loadDynbDialects(ctx);
  Location fileLoc = FileLineColLoc::get(&ctx, name, 1, 1);
  if (std::optional<unsigned> line =
          findExcessiveNesting(text, kMaxNestingDepth, false)) {
    emitError(FileLineColLoc::get(&ctx, name, *line, 1))
        << "brackets nest deeper than " << kMaxNestingDepth << " levels";
    return nullptr;
  }
  if (std::optional<DuplicateKey> dup = findDuplicateKey(text)) {
    emitError(FileLineColLoc::get(&ctx, name, dup->line, 1))
        << "an object names the key '" << dup->key
        << "' twice; JSON leaves the meaning of that open, so dynb refuses it";
    return nullptr;
  }
  if (config.moduleDim < 1 || config.featureChannels < 1 ||
      config.mapSize < 2 || config.projDim < 1 || config.fcDim < 1 ||
      config.answers < 1) {
    emitError(fileLoc) << "CLEVR model sizes must be positive (map size at "
                          "least 2)";
    return nullptr;
  }
  ClevrImporter importer(name, ctx, config, limits);
  return importer.run(text);
}
