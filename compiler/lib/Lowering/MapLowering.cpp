//===- MapLowering.cpp - Feature-map ops to runtime map steps -------------===//
//
// Convolutions and pooling are oneDNN's best work, so they are not written
// as linalg: each becomes one map step the runtime hands to a cached
// primitive, on maps kept in the runtime's map layout between modules.
// Flatten is the one place a map leaves that layout (for the dense layer
// that reads PyTorch's C, H, W order).
//
//===----------------------------------------------------------------------===//
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Lowering/ModuleLowering.h"

using namespace mlir;
using namespace dynb;

namespace {
void setMapShape(rt::MapStep &m, Value v) {
  ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
  m.channels = s[s.size() - 3];
  m.height = s[s.size() - 2];
  m.width = s[s.size() - 1];
}
} // namespace

bool dynb::isMapOp(Operation *op) {
  return isa<Conv2DOp, MaxPool2DOp, FlattenOp, ChannelConcatOp>(op);
}

LoweredStep dynb::lowerMapOp(Operation *op, ArrayRef<SlotRef> inputs,
                             SlotRef out, bool fuseRelu) {
  LoweredStep step;
  step.kind = LoweredStep::Kind::Map;
  step.args.append(inputs.begin(), inputs.end());
  step.c = out;
  rt::MapStep &m = step.map;
  setMapShape(m, op->getOperand(0));
  if (auto conv = dyn_cast<Conv2DOp>(op)) {
    m.op = rt::MapStep::Op::Conv;
    // The window follows from the types the verifier checked against the
    // weight: H' = H + 2 padding - kh + 1.
    ArrayRef<int64_t> r =
        cast<RankedTensorType>(op->getResult(0).getType()).getShape();
    m.outChannels = r[r.size() - 3];
    m.padding = conv.getPaddingAttr().getInt();
    m.kernelH = m.height + 2 * m.padding - r[r.size() - 2] + 1;
    m.kernelW = m.width + 2 * m.padding - r[r.size() - 1] + 1;
    m.relu = fuseRelu;
    step.weight = conv.getWeight().str();
    if (auto bias = conv.getBias())
      step.bias = bias->str();
  } else if (isa<MaxPool2DOp>(op)) {
    m.op = rt::MapStep::Op::MaxPool;
  } else if (isa<FlattenOp>(op)) {
    m.op = rt::MapStep::Op::FromMapLayout;
  } else {
    m.op = rt::MapStep::Op::ChannelConcat;
    for (Value v : op->getOperands()) {
      ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
      m.inChannels.push_back(s[s.size() - 3]);
    }
  }
  return step;
}
