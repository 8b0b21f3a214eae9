//===- AppendBackward.cpp - Each instance's backward nodes (dynb-backward)
//-===//
//
// The backward pass of an instance is written as more nodes of the same
// instance, so the batching strategies batch it exactly as they batch the
// forward pass (docs/training.md).
//
//===----------------------------------------------------------------------===//
#include "dynb/Transforms/AdjointRules.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace dynb {
#define GEN_PASS_DEF_APPENDBACKWARD
#include "dynb/Transforms/Passes.h.inc"
} // namespace dynb

using namespace mlir;
using namespace dynb;

namespace {

constexpr llvm::StringLiteral kDone = "dynb.backward";

/// The forward and adjoint modules dynb-grad wrote for a module.
struct ModulePair {
  func::FuncOp forward;
  func::FuncOp adjoint;
};

class InstanceBackward {
public:
  InstanceBackward(InstanceOp inst, int64_t index,
                   llvm::StringMap<ModulePair> &pairs)
      : inst(inst), index(index), pairs(pairs), b(inst.getContext()) {}

  LogicalResult run();

private:
  void accumulate(Value forward, Value adjoint) {
    Value &slot = adjoints[forward];
    slot = slot ? b.create<AddOp>(adjoint.getLoc(), slot, adjoint).getResult()
                : adjoint;
  }
  InFlightDiagnostic fail(Operation *op, const Twine &why) {
    return op->emitOpError() << "(instance " << index << ") " << why;
  }
  LogicalResult useForwardModules();
  LogicalResult differentiate(Operation *op);
  LogicalResult differentiateCall(CallOp call);

  InstanceOp inst;
  int64_t index;
  llvm::StringMap<ModulePair> &pairs;
  OpBuilder b;
  DenseMap<Value, Value> adjoints;
  /// Calls of forward modules: how many results the original module had.
  DenseMap<Operation *, unsigned> forwardCalls;
};

LogicalResult InstanceBackward::useForwardModules() {
  Block &body = inst.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    auto call = dyn_cast<CallOp>(op);
    if (!call)
      continue;
    auto it = pairs.find(call.getCallee());
    if (it == pairs.end())
      return fail(call, "calls @")
             << call.getCallee()
             << ", which has no forward and adjoint modules: run -dynb-grad "
                "before -dynb-backward";
    b.setInsertionPoint(call);
    auto fwd = b.create<CallOp>(
        call.getLoc(), it->second.forward.getFunctionType().getResults(),
        it->second.forward.getSymName(), call.getOperands());
    for (auto [old, now] : llvm::zip(call.getResults(), fwd.getResults()))
      old.replaceAllUsesWith(now);
    forwardCalls[fwd] = call.getNumResults();
    call.erase();
  }
  return success();
}

LogicalResult InstanceBackward::differentiateCall(CallOp call) {
  unsigned outputs = forwardCalls.lookup(call);
  bool any = false;
  for (unsigned i = 0; i < outputs; ++i)
    any |= bool(adjoints.lookup(call.getResult(i)));
  if (!any)
    return success(); // no loss depends on the call
  StringRef original = call.getCallee().drop_back(strlen("_fwd"));
  ModulePair &pair = pairs.find(original)->second;
  Location loc = call.getLoc();
  SmallVector<Value> operands;
  for (unsigned i = 0; i < outputs; ++i) {
    Value dy = adjoints.lookup(call.getResult(i));
    operands.push_back(
        dy ? dy
           : b.create<ZerosOp>(loc, call.getResult(i).getType()).getResult());
  }
  for (Value saved : call.getResults().drop_front(outputs))
    operands.push_back(saved);
  auto adj = b.create<CallOp>(loc, pair.adjoint.getFunctionType().getResults(),
                              pair.adjoint.getSymName(), operands);
  auto args = pair.adjoint->getAttrOfType<DenseI64ArrayAttr>("dynb.grad.args");
  auto linears = pair.adjoint->getAttrOfType<ArrayAttr>("dynb.grad.linears");
  if (!args || !linears)
    return fail(call, "calls a forward module whose adjoint @")
           << pair.adjoint.getSymName()
           << " lacks dynb.grad.args or dynb.grad.linears";
  unsigned r = 0;
  for (int64_t arg : args.asArrayRef())
    accumulate(call.getOperand(arg), adj.getResult(r++));
  for (Attribute a : linears) {
    auto entry = cast<DictionaryAttr>(a);
    auto input = entry.getAs<IntegerAttr>("input");
    auto weight = entry.getAs<FlatSymbolRefAttr>("weight");
    auto bias = entry.getAs<FlatSymbolRefAttr>("bias");
    Value x = call.getResult(outputs + input.getInt());
    b.create<LinearGradOp>(loc, adj.getResult(r++), x, weight, bias);
  }
  return success();
}

LogicalResult InstanceBackward::differentiate(Operation *op) {
  Location loc = op->getLoc();
  if (auto xent = dyn_cast<SoftmaxXentOp>(op)) {
    accumulate(xent.getLogits(), b.create<SoftmaxXentGradOp>(
                                     loc, xent.getLogits().getType(),
                                     xent.getLogits(), xent.getLabelAttr()));
    return success();
  }
  if (auto call = dyn_cast<CallOp>(op))
    return differentiateCall(call);
  if (op->getNumResults() != 1)
    return fail(op, "cannot be differentiated by dynb-backward yet");
  Value dy = adjoints.lookup(op->getResult(0));
  if (!dy)
    return success(); // no loss depends on it
  if (auto emb = dyn_cast<EmbeddingOp>(op)) {
    b.create<EmbeddingGradOp>(loc, dy, emb.getTableAttr(), emb.getIndexAttr());
    return success();
  }
  if (auto lin = dyn_cast<LinearOp>(op)) {
    Value x = lin.getInput();
    b.create<LinearGradOp>(loc, dy, x, lin.getWeightAttr(), lin.getBiasAttr());
    accumulate(x, b.create<LinearTransposeOp>(loc, x.getType(), dy,
                                              lin.getWeightAttr()));
    return success();
  }
  if (buildLocalAdjoint(
          b, op, dy, [](Value v) { return v; },
          [&](Value x, Value d) { accumulate(x, d); }))
    return success();
  if (auto slice = dyn_cast<SliceOp>(op)) {
    Value x = slice.getInput();
    accumulate(x, b.create<PadOp>(
                      loc, x.getType(), dy,
                      b.getI64IntegerAttr(slice.getOffsetAttr().getInt())));
    return success();
  }
  return fail(op, "is on the path from a parameter to a loss but cannot be "
                  "differentiated by dynb-backward yet (it differentiates "
                  "embedding, linear, module calls, the elementwise ops, "
                  "concat, slice and softmax_xent)");
}

LogicalResult InstanceBackward::run() {
  Block &body = inst.getBody().front();
  bool hasLoss =
      llvm::any_of(body, [](Operation &op) { return isa<SoftmaxXentOp>(op); });
  if (!hasLoss)
    return success();
  if (failed(useForwardModules()))
    return failure();
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  b.setInsertionPoint(body.getTerminator());
  for (Operation *op : llvm::reverse(forward))
    if (failed(differentiate(op)))
      return failure();
  inst->setAttr(kDone, b.getUnitAttr());
  return success();
}

struct AppendBackwardPass
    : public dynb::impl::AppendBackwardBase<AppendBackwardPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<ModulePair> pairs;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (auto of =
              fn->getAttrOfType<FlatSymbolRefAttr>("dynb.grad.forward_of"))
        pairs[of.getValue()].forward = fn;
      if (auto of =
              fn->getAttrOfType<FlatSymbolRefAttr>("dynb.grad.adjoint_of"))
        pairs[of.getValue()].adjoint = fn;
    }
    for (auto it = pairs.begin(); it != pairs.end();) {
      auto cur = it++;
      if (!cur->second.forward || !cur->second.adjoint)
        pairs.erase(cur);
    }
    int64_t index = 0;
    bool failedAny = false;
    for (InstanceOp inst : module.getOps<InstanceOp>()) {
      if (!inst->hasAttr(kDone)) {
        InstanceBackward backward(inst, index, pairs);
        failedAny |= failed(backward.run());
      }
      ++index;
    }
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
