//===- DifferentiateModules.cpp - Forward and adjoint modules (dynb-grad) -===//
#include "dynb/Transforms/AdjointRules.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace dynb {
#define GEN_PASS_DEF_DIFFERENTIATEMODULES
#include "dynb/Transforms/Passes.h.inc"
} // namespace dynb

using namespace mlir;
using namespace dynb;

namespace {

constexpr llvm::StringLiteral kForwardOf = "dynb.grad.forward_of";
constexpr llvm::StringLiteral kAdjointOf = "dynb.grad.adjoint_of";
constexpr llvm::StringLiteral kArgs = "dynb.grad.args";
constexpr llvm::StringLiteral kLinears = "dynb.grad.linears";

/// Builds `@f_adj` for one module, walking `@f`'s body backwards; the
/// forward values the adjoint reads become its trailing arguments, in the
/// order they are first read (`saved`).
class AdjointBuilder {
public:
  AdjointBuilder(func::FuncOp fn, func::FuncOp adjoint)
      : fn(fn), block(adjoint.addEntryBlock()), b(fn.getContext()) {
    b.setInsertionPointToStart(block);
  }

  LogicalResult build();

  llvm::SetVector<Value> saved;
  SmallVector<Value> results;
  SmallVector<int64_t> argsWithAdjoints;
  SmallVector<Attribute> linears;

private:
  /// The adjoint module's copy of forward value `v`.
  Value savedValue(Value v) {
    saved.insert(v);
    auto [it, added] = savedArgs.try_emplace(v, Value());
    if (added)
      it->second = block->addArgument(v.getType(), v.getLoc());
    return it->second;
  }
  void accumulate(Value forward, Value adjoint) {
    Value &slot = adjoints[forward];
    slot = slot ? b.create<AddOp>(adjoint.getLoc(), slot, adjoint).getResult()
                : adjoint;
  }
  LogicalResult differentiate(Operation *op, Value dy);

  /// x's adjoint, once every use of x was differentiated: the slices' parts
  /// joined in. Where the slices of x tile it exactly (a TreeLSTM's gates
  /// are slices of one linear's output), their adjoints are concatenated;
  /// otherwise each is padded to x's width and summed.
  Value adjointOf(Value x) {
    auto it = pendingSlices.find(x);
    if (it != pendingSlices.end()) {
      SmallVector<SliceAdjoint, 3> parts = std::move(it->second);
      pendingSlices.erase(it);
      llvm::stable_sort(parts,
                        [](const SliceAdjoint &a, const SliceAdjoint &b) {
                          return a.offset < b.offset;
                        });
      auto type = cast<RankedTensorType>(x.getType());
      int64_t end = 0;
      bool tiles = true;
      for (const SliceAdjoint &p : parts) {
        tiles &= p.offset == end;
        end += cast<RankedTensorType>(p.adjoint.getType()).getShape().back();
      }
      tiles &= end == type.getShape().back();
      if (tiles && parts.size() == 1) {
        accumulate(x, parts.front().adjoint);
      } else if (tiles) {
        SmallVector<Value> pieces;
        for (const SliceAdjoint &p : parts)
          pieces.push_back(p.adjoint);
        accumulate(x, b.create<ConcatOp>(parts.front().loc, type, pieces));
      } else {
        for (const SliceAdjoint &p : parts)
          accumulate(x, b.create<PadOp>(p.loc, type, p.adjoint,
                                        b.getI64IntegerAttr(p.offset)));
      }
    }
    return adjoints.lookup(x);
  }

  struct SliceAdjoint {
    int64_t offset;
    Value adjoint;
    Location loc;
  };
  DenseMap<Value, SmallVector<SliceAdjoint, 3>> pendingSlices;

  func::FuncOp fn;
  Block *block;
  OpBuilder b;
  DenseMap<Value, Value> adjoints;
  DenseMap<Value, Value> savedArgs;
};

LogicalResult AdjointBuilder::differentiate(Operation *op, Value dy) {
  Location loc = op->getLoc();
  if (auto lin = dyn_cast<LinearOp>(op)) {
    Value x = lin.getInput();
    accumulate(x, b.create<LinearTransposeOp>(loc, x.getType(), dy,
                                              lin.getWeightAttr()));
    savedValue(x);
    SmallVector<NamedAttribute, 3> entry;
    entry.push_back(b.getNamedAttr("weight", lin.getWeightAttr()));
    if (auto bias = lin.getBiasAttr())
      entry.push_back(b.getNamedAttr("bias", bias));
    // Saved values only ever append, so this index stays right.
    int64_t input = llvm::find(saved, x) - saved.begin();
    entry.push_back(b.getNamedAttr("input", b.getI64IntegerAttr(input)));
    linears.push_back(b.getDictionaryAttr(entry));
    results.push_back(dy);
    return success();
  }
  if (buildLocalAdjoint(
          b, op, dy, [&](Value v) { return savedValue(v); },
          [&](Value x, Value d) { accumulate(x, d); }))
    return success();
  if (auto slice = dyn_cast<SliceOp>(op)) {
    // Held until x's adjoint is read: slices that tile x become one concat.
    pendingSlices[slice.getInput()].push_back(
        {slice.getOffsetAttr().getInt(), dy, loc});
    return success();
  }
  return op->emitOpError("cannot be differentiated by dynb-grad yet (it "
                         "differentiates linear, the elementwise ops, concat "
                         "and slice)");
}

LogicalResult AdjointBuilder::build() {
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    accumulate(v, block->getArgument(i));
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (op.getNumResults() != 1)
      return op.emitOpError("cannot be differentiated by dynb-grad yet");
    Value dy = adjointOf(op.getResult(0));
    if (!dy) {
      // Nothing a result depends on, but an unsupported op is still one.
      if (!isa<LinearOp, AddOp, MulOp, NegOp, SigmoidOp, TanhOp, ReluOp,
               ConcatOp, SliceOp>(op))
        return op.emitOpError("cannot be differentiated by dynb-grad yet");
      continue;
    }
    if (failed(differentiate(&op, dy)))
      return failure();
  }
  // The linears were met last first; list them (and their adjoints) in
  // program order, with `input` as an index into the saved values.
  std::reverse(linears.begin(), linears.end());
  std::reverse(results.begin(), results.end());
  SmallVector<Value> argAdjoints;
  for (BlockArgument arg : fn.getArguments())
    if (Value d = adjointOf(arg)) {
      argsWithAdjoints.push_back(arg.getArgNumber());
      argAdjoints.push_back(d);
    }
  results.insert(results.begin(), argAdjoints.begin(), argAdjoints.end());
  return success();
}

struct DifferentiateModulesPass
    : public dynb::impl::DifferentiateModulesBase<DifferentiateModulesPass> {
  void runOnOperation() override;
  LogicalResult differentiate(func::FuncOp fn, SymbolTable &symbols);
};

LogicalResult DifferentiateModulesPass::differentiate(func::FuncOp fn,
                                                      SymbolTable &symbols) {
  if (fn.getBody().empty())
    return fn.emitOpError("has no body to differentiate");
  if (expertCount(fn))
    return fn.emitOpError(
        "is an expert module: dynb-grad cannot differentiate those yet");
  std::string fwdName = (fn.getName() + "_fwd").str();
  std::string adjName = (fn.getName() + "_adj").str();
  for (const std::string &name : {fwdName, adjName})
    if (symbols.lookup(name))
      return fn.emitOpError("cannot be differentiated: the module's name for "
                            "its forward or adjoint, @")
             << name << ", is taken";

  OpBuilder b(fn.getContext());
  b.setInsertionPointAfter(fn);
  Location loc = fn.getLoc();
  FunctionType type = fn.getFunctionType();
  // The adjoint's signature is known once its body is: start it with the
  // result adjoints and fix the type at the end.
  auto adjoint = b.create<func::FuncOp>(
      loc, adjName, b.getFunctionType(type.getResults(), {}));
  AdjointBuilder builder(fn, adjoint);
  if (failed(builder.build())) {
    adjoint.erase();
    return failure();
  }
  OpBuilder rb = OpBuilder::atBlockEnd(&adjoint.getBody().front());
  rb.create<func::ReturnOp>(loc, builder.results);
  adjoint.setFunctionType(
      b.getFunctionType(adjoint.getBody().front().getArgumentTypes(),
                        ValueRange(builder.results).getTypes()));
  adjoint->setAttr(kAdjointOf, FlatSymbolRefAttr::get(fn.getNameAttr()));
  adjoint->setAttr(kArgs, b.getDenseI64ArrayAttr(builder.argsWithAdjoints));
  adjoint->setAttr(kLinears, b.getArrayAttr(builder.linears));

  // The forward module: @f's body, returning the saved values too.
  b.setInsertionPoint(adjoint);
  SmallVector<Type> fwdResults(type.getResults());
  for (Value v : builder.saved)
    fwdResults.push_back(v.getType());
  auto forward = b.create<func::FuncOp>(
      loc, fwdName, b.getFunctionType(type.getInputs(), fwdResults));
  IRMapping map;
  fn.getBody().cloneInto(&forward.getBody(), map);
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  SmallVector<Value> returned(ret.getOperands());
  for (Value v : builder.saved)
    returned.push_back(map.lookup(v));
  OpBuilder fb(ret);
  fb.create<func::ReturnOp>(ret.getLoc(), returned);
  ret.erase();
  forward->setAttr(kForwardOf, FlatSymbolRefAttr::get(fn.getNameAttr()));
  symbols.insert(forward);
  symbols.insert(adjoint);
  return success();
}

void DifferentiateModulesPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> todo;
  llvm::DenseSet<StringRef> hasAdjoint;
  for (auto fn : module.getOps<func::FuncOp>())
    if (auto of = fn->getAttrOfType<FlatSymbolRefAttr>(kAdjointOf))
      hasAdjoint.insert(of.getValue());
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn->hasAttr(kForwardOf) && !fn->hasAttr(kAdjointOf) &&
        !hasAdjoint.contains(fn.getName()))
      todo.push_back(fn);
  bool failedAny = false;
  for (func::FuncOp fn : todo)
    failedAny |= failed(differentiate(fn, symbols));
  if (failedAny)
    signalPassFailure();
}

} // namespace
