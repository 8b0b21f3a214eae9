//===- AdjointRules.cpp - The adjoints of the elementwise ops and concat --===//
#include "dynb/Transforms/AdjointRules.h"

using namespace mlir;
using namespace dynb;

bool dynb::buildLocalAdjoint(
    OpBuilder &b, Operation *op, Value dy,
    llvm::function_ref<Value(Value)> saved,
    llvm::function_ref<void(Value, Value)> accumulate) {
  Location loc = op->getLoc();
  if (isa<AddOp>(op)) {
    accumulate(op->getOperand(0), dy);
    accumulate(op->getOperand(1), dy);
    return true;
  }
  if (isa<MulOp>(op)) {
    Value x = op->getOperand(0), y = op->getOperand(1);
    Value sx = saved(x), sy = saved(y);
    accumulate(x, b.create<MulOp>(loc, dy, sy));
    accumulate(y, b.create<MulOp>(loc, dy, sx));
    return true;
  }
  if (isa<NegOp>(op)) {
    accumulate(op->getOperand(0), b.create<NegOp>(loc, dy));
    return true;
  }
  if (isa<SigmoidOp>(op)) {
    accumulate(op->getOperand(0),
               b.create<SigmoidGradOp>(loc, saved(op->getResult(0)), dy));
    return true;
  }
  if (isa<TanhOp>(op)) {
    accumulate(op->getOperand(0),
               b.create<TanhGradOp>(loc, saved(op->getResult(0)), dy));
    return true;
  }
  if (isa<ReluOp>(op)) {
    accumulate(op->getOperand(0),
               b.create<ReluGradOp>(loc, saved(op->getOperand(0)), dy));
    return true;
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    int64_t offset = 0;
    for (Value in : concat.getInputs()) {
      auto type = cast<RankedTensorType>(in.getType());
      int64_t width = type.getShape().back();
      accumulate(in,
                 b.create<SliceOp>(loc, type, dy, b.getI64IntegerAttr(offset),
                                   b.getI64IntegerAttr(width)));
      offset += width;
    }
    return true;
  }
  return false;
}
