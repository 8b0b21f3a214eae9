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
#include "dynb/Driver/BatchedGradient.h"
#include "dynb/Driver/Session.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"

#include <chrono>
#include <fmt/format.h>

using namespace mlir;
using namespace dynb;
using namespace dynb::detail;

struct EngineModel::Compiler {
  /// The loader's diagnostics, as dynbc would print them.
  std::string diagnostics;
  llvm::raw_string_ostream diagStream{diagnostics};
  /// A Session, for the batched backward pass (Engine::gradient).
  std::unique_ptr<Session> loader;
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
  c.loader = std::make_unique<Session>(c.diagStream);
  ModelLoader &s = *c.loader;
  s.kernels().setObjectStore(KernelObjectStore::open(options.kernelCache));
  // Messages name the model by its path, or this for a model in memory.
  if (options.model)
    m.options.modelPath = options.model->name();
  else if (m.options.modelPath.empty())
    m.options.modelPath = "model.json";
  llvm::StringRef name = m.options.modelPath;
  if (failed(options.model ? s.loadJsonModel(name, options.model->model())
             : options.modelJson.empty()
                 ? s.loadGraphs(options.modelPath)
                 : s.loadJsonGraphs(name, options.modelJson)))
    return c.takeError("cannot load model '" + name + "'");
  // The file's own instances are not the engine's (gradient() adds each
  // batch's instances to this module and differentiates all it holds).
  for (InstanceOp inst :
       llvm::make_early_inc_range(s.module().getOps<InstanceOp>()))
    inst.erase();
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

rt::ParameterStore &Engine::parameters() {
  return model_->compiler->loader->mutableParams();
}

/// The batch's instances as dynb.instance ops at the end of `module`, in
/// instance order, discarded instances left out.
static llvm::Error buildInstances(EngineModel &m, BatchData &d,
                                  ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = NameLoc::get(StringAttr::get(ctx, m.options.modelPath));
  auto vec = [&](int64_t w) {
    return RankedTensorType::get({w}, b.getF32Type());
  };
  auto sym = [&](const std::string &name) {
    return FlatSymbolRefAttr::get(ctx, name);
  };
  std::vector<llvm::SmallVector<uint32_t, 0>> byInstance(d.instances.size());
  for (auto [i, n] : llvm::enumerate(d.nodes))
    byInstance[n->instance].push_back(uint32_t(i));
  llvm::DenseMap<uint32_t, Operation *> opOf;
  for (auto [index, inst] : llvm::enumerate(d.instances)) {
    if (inst.discarded)
      continue;
    OpBuilder::InsertionGuard guard(b);
    auto instance = b.create<InstanceOp>(loc);
    b.setInsertionPointToStart(&instance.getBody().emplaceBlock());
    auto value = [&](OperandRef r) {
      return opOf[r.node]->getResult(r.result);
    };
    for (uint32_t id : byInstance[index]) {
      const Node &n = *d.nodes[id];
      SmallVector<mlir::Value, 4> operands;
      for (unsigned k = 0; k < n.numOperands; ++k)
        operands.push_back(value(n.operands[k]));
      Operation *op = nullptr;
      if (n.kind == NodeKind::Embedding) {
        auto *p = static_cast<const ParamInfo *>(n.info);
        if (p->shape.size() != 2)
          return makeError(fmt::format(
              "instance {}: the embedding of '{}' is not a vector; the "
              "embedded API's backward pass differentiates vectors only",
              index, p->name));
        op = b.create<EmbeddingOp>(loc, vec(p->cols), sym(p->name),
                                   b.getI64IntegerAttr(n.row));
      } else if (n.kind == NodeKind::Call) {
        auto *mod = static_cast<const ModuleInfo *>(n.info);
        SmallVector<Type> results;
        for (int64_t w : mod->resultWidths)
          results.push_back(vec(w));
        op = b.create<CallOp>(loc, results, sym(mod->name), operands);
      } else {
        auto *info = static_cast<const OpInfo *>(n.info);
        if (info->kind == OpKind::Dispatch)
          return makeError(fmt::format(
              "instance {}: dispatch has no backward pass yet", index));
        OperationState state(loc, std::string("dynb.") + opName(info->kind));
        state.addOperands(operands);
        state.addTypes(
            vec(info->kind == OpKind::SoftmaxXent ? 1 : info->resultWidth));
        if (info->kind == OpKind::Slice) {
          state.addAttribute("offset", b.getI64IntegerAttr(info->a));
          state.addAttribute("size", b.getI64IntegerAttr(info->b));
        } else if (info->kind == OpKind::Linear) {
          state.addAttribute("weight", sym(m.params[info->a].name));
          if (info->b >= 0)
            state.addAttribute("bias", sym(m.params[info->b].name));
        } else if (info->kind == OpKind::SoftmaxXent) {
          state.addAttribute("label", b.getI64IntegerAttr(n.row));
        }
        op = b.create(state);
      }
      opOf[id] = op;
    }
    SmallVector<mlir::Value, 2> outputs;
    for (OperandRef r : inst.outputs)
      outputs.push_back(value(r));
    b.create<OutputOp>(loc, outputs);
  }
  return llvm::Error::success();
}

llvm::Expected<Gradients> Engine::gradient(Batch &batch) {
  return gradient(batch, model_->options.strategy);
}

llvm::Expected<Gradients> Engine::gradient(Batch &batch,
                                           BatchingStrategy strategy) {
  BatchData &d = batch.data();
  struct Reset {
    BatchData &d;
    ~Reset() { d.reset(); }
  } reset{d};
  EngineModel &m = *model_;
  if (&d.engine != this)
    return makeError("the batch was made for another engine");
  if (!m.executor)
    return makeError("this engine was loaded to plan only "
                     "(EngineOptions::planOnly); it cannot run batches");
  if (llvm::Error err = batch.error())
    return std::move(err);
  // MLIR is single-threaded, and the executor's thread team is shared.
  std::lock_guard<std::mutex> compileLock(m.compileMutex);
  std::lock_guard<std::mutex> runLock(m.runMutex);
  EngineModel::Compiler &c = *m.compiler;
  Session &session = *c.loader;
  ModuleOp module = session.module();
  // The instances live in the session's module only while the backward
  // module is made from them.
  auto eraseInstances = llvm::make_scope_exit([&] {
    for (InstanceOp inst :
         llvm::make_early_inc_range(module.getOps<InstanceOp>()))
      inst.erase();
  });
  if (llvm::Error err = buildInstances(m, d, module))
    return std::move(err);
  if (failed(verify(module)))
    return c.takeError("the batch is not a valid graph");
  FailureOr<std::unique_ptr<BatchedGradient>> backward =
      BatchedGradient::create(session, session.params(), m.options.threads);
  if (failed(backward))
    return c.takeError("cannot differentiate the batch");
  std::vector<size_t> order((*backward)->numInstances());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  RunResult counts;
  FailureOr<std::vector<rt::Plan>> plans =
      (*backward)->plan(order, 0, strategy, counts);
  if (failed(plans))
    return c.takeError("cannot plan the batch's backward pass");
  Gradients out;
  for (const rt::Plan &plan : *plans) {
    FailureOr<double> loss = (*backward)->run(plan, /*accumulate=*/true);
    if (failed(loss))
      return c.takeError("the batch's backward pass failed");
    out.loss += *loss;
  }
  out.values = (*backward)->gradients();
  out.launches = counts.launches;
  out.lowerBound = counts.lowerBound;
  return out;
}
