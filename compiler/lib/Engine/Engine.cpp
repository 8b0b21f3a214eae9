//===- Engine.cpp - Loading a model and compiling its modules once --------===//
//
// The MLIR side of the embedded API: a ModelLoader loads the model and the
// parameters (with the CLI's located diagnostics, captured into errors),
// every module is lowered and JIT-compiled once through the KernelCache,
// and a per-instance op of a new signature is compiled on first use by
// building that one op and handing it to the same cache.
//
//===----------------------------------------------------------------------===//
#include "EngineModel.h"
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Driver/ModelLoader.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <chrono>
#include <fmt/format.h>

using namespace mlir;
using namespace dynb;
using namespace dynb::detail;

struct EngineModel::Compiler {
  /// The loader's diagnostics, as dynbc would print them.
  std::string diagnostics;
  llvm::raw_string_ostream diagStream{diagnostics};
  std::unique_ptr<ModelLoader> loader;
  /// Holds the single-op functions compiled for per-instance ops.
  OwningOpRef<ModuleOp> scratch;

  /// The diagnostics so far as an error, and forgets them.
  llvm::Error takeError(const llvm::Twine &fallback) {
    std::string text = diagnostics.empty() ? fallback.str() : diagnostics;
    diagnostics.clear();
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
    return llvm::createStringError(llvm::inconvertibleErrorCode(), text);
  }
};

EngineModel::EngineModel() = default;
EngineModel::~EngineModel() = default;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The width of a per-instance value of type `t`, or 0 if it is not a
/// vector (the CPU lowering handles vectors only).
static int64_t vectorWidth(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.getRank() == 1 ? r.getDimSize(0) : 0;
}

Engine::Engine() : model_(std::make_unique<EngineModel>()) {}
Engine::~Engine() = default;

llvm::Expected<std::unique_ptr<Engine>>
Engine::load(const EngineOptions &options) {
  std::unique_ptr<Engine> engine(new Engine());
  EngineModel &m = *engine->model_;
  m.options = options;
  m.compiler = std::make_unique<EngineModel::Compiler>();
  EngineModel::Compiler &c = *m.compiler;
  c.loader = std::make_unique<ModelLoader>(c.diagStream);
  ModelLoader &s = *c.loader;
  s.kernels().setObjectStore(KernelObjectStore::open(options.kernelCache));
  // Messages name the model by its path, or this for a model in memory.
  if (m.options.modelPath.empty())
    m.options.modelPath = "model.json";
  llvm::StringRef name = m.options.modelPath;
  if (failed(options.modelJson.empty()
                 ? s.loadGraphs(options.modelPath)
                 : s.loadJsonGraphs(name, options.modelJson)))
    return c.takeError("cannot load model '" + name + "'");
  if (options.planOnly) {
    // No values: the caller's executor binds the plans' parameters.
  } else if (options.paramsPath.empty()) {
    if (llvm::Error e = s.seedParams(options.seed))
      return std::move(e);
  } else if (llvm::Error e = s.loadParams(options.paramsPath)) {
    return std::move(e);
  }

  ModuleOp module = s.module();
  for (ParamOp p : module.getOps<ParamOp>()) {
    ParamInfo info;
    info.name = p.getSymName().str();
    ArrayRef<int64_t> shape = p.getTensorType().getShape();
    info.shape.assign(shape.begin(), shape.end());
    info.cols = shape.empty() ? 1 : shape.back();
    info.rows = info.cols ? p.getTensorType().getNumElements() / info.cols : 0;
    m.paramIds[info.name] = m.params.size();
    m.params.push_back(std::move(info));
  }

  auto start = std::chrono::steady_clock::now();
  for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
    ModuleInfo info;
    info.name = fn.getName().str();
    // Expert modules run only inside a dispatch: a table of their own.
    info.experts = expertCount(fn);
    auto widths = [&](TypeRange types, const char *what,
                      SmallVectorImpl<int64_t> &out) -> llvm::Error {
      for (auto [i, t] : llvm::enumerate(types)) {
        int64_t w = vectorWidth(t);
        if (!w)
          return makeError(fmt::format(
              "{}: module @{}: {} {} is not a vector; the embedded API "
              "runs modules over vectors only",
              m.options.modelPath, info.name, what, i));
        out.push_back(w);
      }
      return llvm::Error::success();
    };
    llvm::Error shapeError =
        widths(fn.getFunctionType().getInputs(), "argument", info.argWidths);
    if (!shapeError)
      shapeError = widths(fn.getFunctionType().getResults(), "result",
                          info.resultWidths);
    if (shapeError && info.experts) {
      // No dispatch can run it (the verifier's rule): not offered.
      llvm::consumeError(std::move(shapeError));
      continue;
    }
    if (shapeError)
      return std::move(shapeError);
    FailureOr<const LoweredModule *> lowered = s.kernels().getModule(fn);
    if (failed(lowered))
      return c.takeError("cannot compile module @" + info.name);
    info.lowered = *lowered;
    if (info.experts) {
      m.expertIds[info.name] = m.experts.size();
      m.experts.push_back(std::move(info));
      continue;
    }
    m.moduleIds[info.name] = m.modules.size();
    m.modules.push_back(std::move(info));
  }
  m.stats.modulesCompiled = s.kernels().stats().compiled;
  m.stats.modulesLoaded = s.kernels().stats().loaded;
  m.stats.jitSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  c.scratch = ModuleOp::create(UnknownLoc::get(&s.context()));

  if (options.planOnly)
    return std::move(engine);
  rt::ExecutorOptions exOpts;
  exOpts.numThreads = options.threads;
  m.executor = std::make_unique<rt::Executor>(s.params(), exOpts);
  return std::move(engine);
}

llvm::Error EngineModel::compileOp(OpInfo &op) {
  if (op.lowered)
    return llvm::Error::success();
  if (op.kind == OpKind::Dispatch)
    return makeError("a dispatch runs its expert module: it has no kernel");
  if (op.kind == OpKind::SoftmaxXent)
    return makeError("a loss runs as a plan step of its own: it has no kernel");
  auto start = std::chrono::steady_clock::now();
  Compiler &c = *compiler;
  MLIRContext &ctx = c.loader->context();
  Location loc = NameLoc::get(StringAttr::get(&ctx, opName(op.kind)));
  OpBuilder b = OpBuilder::atBlockEnd(c.scratch->getBody());
  // The batched op on one row: KernelCache::getOp wraps it as a module of
  // one op and lowers it like any module (batch size stays a runtime
  // value), keyed by what it computes.
  auto rowType = [&](int64_t w) {
    return RankedTensorType::get({1, w}, b.getF32Type());
  };
  SmallVector<Type> argTypes;
  for (int64_t w : op.operandWidths)
    argTypes.push_back(rowType(w));
  auto holder = b.create<func::FuncOp>(loc, "engine_op_holder",
                                       b.getFunctionType(argTypes, {}));
  Block *body = holder.addEntryBlock();
  b.setInsertionPointToEnd(body);
  OperationState state(loc, std::string("dynb.") + opName(op.kind));
  state.addOperands(body->getArguments());
  state.addTypes(rowType(op.resultWidth));
  if (op.kind == OpKind::Slice) {
    state.addAttribute("offset", b.getI64IntegerAttr(op.a));
    state.addAttribute("size", b.getI64IntegerAttr(op.b));
  } else if (op.kind == OpKind::Linear) {
    state.addAttribute("weight",
                       FlatSymbolRefAttr::get(&ctx, params[op.a].name));
    if (op.b >= 0)
      state.addAttribute("bias",
                         FlatSymbolRefAttr::get(&ctx, params[op.b].name));
  }
  Operation *batched = b.create(state);
  FailureOr<const LoweredModule *> lowered = c.loader->kernels().getOp(batched);
  holder.erase();
  if (failed(lowered))
    return c.takeError(
        fmt::format("cannot compile a kernel for {}", opName(op.kind)));
  op.lowered = *lowered;
  ++stats.opKernelsCompiled;
  stats.jitSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return llvm::Error::success();
}

llvm::Expected<Module> Engine::module(llvm::StringRef name) const {
  auto it = model_->moduleIds.find(name);
  if (it == model_->moduleIds.end())
    return makeError("unknown module '" + name + "' in " +
                     model_->options.modelPath);
  return Module{it->second};
}

llvm::Expected<Experts> Engine::experts(llvm::StringRef name) const {
  auto it = model_->expertIds.find(name);
  if (it == model_->expertIds.end())
    return makeError("unknown expert module '" + name + "' in " +
                     model_->options.modelPath);
  return Experts{it->second};
}

llvm::Expected<Param> Engine::param(llvm::StringRef name) const {
  auto it = model_->paramIds.find(name);
  if (it == model_->paramIds.end())
    return makeError("unknown parameter '" + name + "' in " +
                     model_->options.modelPath);
  return Param{it->second};
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(model_->compileMutex);
  return model_->stats;
}

const EngineOptions &Engine::options() const { return model_->options; }
