//===- DynbOps.cpp - Verifiers and folders of the dynb operations ---------===//
//
// Every message here is read by someone whose model or exported graph is
// wrong: it says what was expected and what was found.
//
//===----------------------------------------------------------------------===//
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Runtime/ElementCount.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace dynb;

namespace {
std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << '?';
    else
      os << d;
  });
  os << ']';
  return os.str();
}

RankedTensorType asTensor(Type t) { return llvm::cast<RankedTensorType>(t); }

/// The callee of a call-like op, with an error at the op if it is missing.
FailureOr<func::FuncOp> lookupModule(Operation *op,
                                     SymbolTableCollection &tables,
                                     FlatSymbolRefAttr callee) {
  auto fn = tables.lookupNearestSymbolFrom<func::FuncOp>(op, callee);
  if (!fn)
    return op->emitOpError() << "calls unknown module " << callee;
  return fn;
}

/// A call of an expert module would run it without saying which expert's
/// parameters to read.
LogicalResult rejectExpertCallee(Operation *op, func::FuncOp callee) {
  if (dynb::expertCount(callee))
    return op->emitOpError()
           << "calls expert module @" << callee.getName()
           << ", which only 'dynb.dispatch' runs (it reads one expert's "
              "slice of stacked parameters)";
  return success();
}
} // namespace

int64_t dynb::expertCount(func::FuncOp fn) {
  auto attr = fn->getAttrOfType<IntegerAttr>(kExpertsAttrName);
  return attr ? attr.getInt() : 0;
}

ParamOp dynb::lookupParam(Operation *from, SymbolTableCollection &tables,
                          FlatSymbolRefAttr name) {
  return tables.lookupNearestSymbolFrom<ParamOp>(from, name);
}

static FailureOr<ParamOp> requireParam(Operation *op,
                                       SymbolTableCollection &tables,
                                       FlatSymbolRefAttr name, StringRef role,
                                       int64_t rank) {
  ParamOp param = lookupParam(op, tables, name);
  if (!param)
    return op->emitOpError()
           << "refers to unknown parameter " << name << " as its " << role;
  if (param.getTensorType().getRank() != rank)
    return op->emitOpError() << "needs a rank-" << rank << " parameter as its "
                             << role << ", but " << name << " has shape "
                             << shapeString(param.getTensorType().getShape());
  return param;
}

//===----------------------------------------------------------------------===//
// ParamOp / InstanceOp / YieldOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  if (!type.hasStaticShape())
    return emitOpError("needs a static shape, got ")
           << shapeString(type.getShape());
  if (type.getRank() < 1 || type.getRank() > 4)
    return emitOpError("must be a vector, a matrix, a stack of matrices "
                       "(one per expert) or a rank-4 tensor (convolution "
                       "weights, a table of feature maps), got rank ")
           << type.getRank();
  if (llvm::any_of(type.getShape(), [](int64_t d) { return d <= 0; }))
    return emitOpError("has an empty dimension in shape ")
           << shapeString(type.getShape());
  if (!checkedElementCount(type.getShape()))
    return emitOpError("has more than 2^34 elements in shape ")
           << shapeString(type.getShape());
  return success();
}

LogicalResult InstanceOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != 0)
    return emitOpError("takes no block arguments: an instance's inputs are "
                       "its embeddings and parameters");
  if (body.empty() || !isa<OutputOp>(body.back()))
    return emitOpError("must end with 'dynb.output'");
  for (Value v : cast<OutputOp>(body.back()).getValues())
    if (!asTensor(v.getType()).hasStaticShape())
      return emitOpError("outputs must have static shapes");
  return success();
}

LogicalResult YieldOp::verify() {
  auto schedule = (*this)->getParentOfType<ScheduleOp>();
  int64_t instances = schedule.getNumInstances();
  for (Value v : getValues()) {
    auto type = asTensor(v.getType());
    if (type.getRank() < 2 || type.getDimSize(0) != instances)
      return emitOpError("yields ")
             << shapeString(type.getShape())
             << " but outputs stack one row per instance (" << instances << ")";
  }
  return success();
}

LogicalResult ScheduleOp::verify() {
  Block &body = getBody().front();
  if (body.empty() || !isa<YieldOp>(body.back()))
    return emitOpError("must end with 'dynb.yield'");
  uint64_t launchOps = llvm::count_if(
      body, [](Operation &op) { return !isa<GatherOp, YieldOp>(op); });
  if (launchOps != getLaunches())
    return emitOpError("says it has ")
           << getLaunches() << " launches but its body has " << launchOps
           << " (every op other than dynb.gather and dynb.yield is one)";
  if (getLowerBound() > getLaunches() || getLaunches() > getNodes())
    return emitOpError("counts must satisfy lower_bound <= launches <= "
                       "nodes, got ")
           << getLowerBound() << ", " << getLaunches() << ", " << getNodes();
  return success();
}

//===----------------------------------------------------------------------===//
// Per-instance ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verifySymbolUses(SymbolTableCollection &tables) {
  ParamOp table = lookupParam(*this, tables, getTableAttr());
  if (!table)
    return emitOpError() << "refers to unknown parameter " << getTableAttr()
                         << " as its table";
  ArrayRef<int64_t> shape = table.getTensorType().getShape();
  if (shape.size() < 2)
    return emitOpError() << "needs a table of rank 2 or more, but "
                         << getTableAttr() << " has shape "
                         << shapeString(shape);
  // Attributes are signless i64; read them signed so that -1 says -1.
  int64_t index = getIndexAttr().getInt();
  if (index < 0 || index >= shape[0])
    return emitOpError() << "index " << index << " is outside table "
                         << getTableAttr() << " of " << shape[0] << " rows";
  RankedTensorType result = getResult().getType();
  if (result.getShape() != shape.drop_front())
    return emitOpError() << "result must be " << shapeString(shape.drop_front())
                         << " (a row of " << getTableAttr() << "), got "
                         << shapeString(result.getShape());
  return success();
}

LogicalResult LinearOp::verifySymbolUses(SymbolTableCollection &tables) {
  // Inside an expert module the parameters carry a leading expert dimension.
  auto fn = (*this)->getParentOfType<func::FuncOp>();
  int64_t experts = fn ? expertCount(fn) : 0;
  FailureOr<ParamOp> weight =
      requireParam(*this, tables, getWeightAttr(), "weight", experts ? 3 : 2);
  if (failed(weight))
    return failure();
  ArrayRef<int64_t> wShape = weight->getTensorType().getShape();
  if (experts && wShape[0] != experts)
    return emitOpError() << "weight " << getWeightAttr() << " "
                         << shapeString(wShape) << " stacks " << wShape[0]
                         << " experts, but module @" << fn.getName()
                         << " has dynb.experts = " << experts;
  ArrayRef<int64_t> matrix = wShape.take_back(2);
  int64_t n = matrix[0];
  int64_t k = matrix[1];
  RankedTensorType in = getInput().getType();
  RankedTensorType out = getResult().getType();
  if (in.getRank() < 1 || in.getShape().back() != k)
    return emitOpError() << "input " << shapeString(in.getShape())
                         << " does not end in " << k << ", the columns of "
                         << getWeightAttr() << " [" << n << ", " << k << "]";
  SmallVector<int64_t> expected(in.getShape());
  expected.back() = n;
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeString(expected)
                         << ", got " << shapeString(out.getShape());
  if (auto bias = getBiasAttr()) {
    FailureOr<ParamOp> b =
        requireParam(*this, tables, bias, "bias", experts ? 2 : 1);
    if (failed(b))
      return failure();
    ArrayRef<int64_t> bShape = b->getTensorType().getShape();
    if (experts && bShape[0] != experts)
      return emitOpError() << "bias " << bias << " " << shapeString(bShape)
                           << " stacks " << bShape[0]
                           << " experts, but module @" << fn.getName()
                           << " has dynb.experts = " << experts;
    if (bShape.back() != n)
      return emitOpError() << "bias " << bias << " has " << bShape.back()
                           << " elements, the weight has " << n << " rows";
  }
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().size() < 2)
    return emitOpError("needs at least two inputs");
  for (auto [i, v] : llvm::enumerate(getInputs()))
    if (asTensor(v.getType()).getRank() < 1)
      return emitOpError() << "input " << i
                           << " is a scalar; concat joins along the last "
                              "dimension";
  if (getResult().getType().getRank() < 1)
    return emitOpError("result must have a last dimension");
  RankedTensorType first = asTensor(getInputs().front().getType());
  ArrayRef<int64_t> lead = first.getShape().drop_back();
  int64_t total = 0;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    RankedTensorType t = asTensor(v.getType());
    if (t.getRank() != first.getRank() || t.getShape().drop_back() != lead)
      return emitOpError() << "input " << i << " " << shapeString(t.getShape())
                           << " differs from input 0 "
                           << shapeString(first.getShape())
                           << " before the last dimension";
    total += t.getShape().back();
  }
  SmallVector<int64_t> expected(lead);
  expected.push_back(total);
  if (getResult().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeString(expected)
                         << ", got "
                         << shapeString(getResult().getType().getShape());
  return success();
}

LogicalResult SliceOp::verify() {
  if (getInput().getType().getRank() < 1)
    return emitOpError("input is a scalar; slice cuts the last dimension");
  ArrayRef<int64_t> in = getInput().getType().getShape();
  int64_t width = in.back();
  int64_t offset = getOffsetAttr().getInt(), size = getSizeAttr().getInt();
  if (offset < 0 || size <= 0 || offset > width || size > width - offset)
    return emitOpError() << "slice [" << offset << ", " << size
                         << "] (offset, size) does not fit in the last "
                            "dimension of "
                         << shapeString(in);
  SmallVector<int64_t> expected(in);
  expected.back() = size;
  if (getResult().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeString(expected)
                         << ", got "
                         << shapeString(getResult().getType().getShape());
  return success();
}

LogicalResult
LinearTransposeOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<ParamOp> weight =
      requireParam(*this, tables, getWeightAttr(), "weight", 2);
  if (failed(weight))
    return failure();
  ArrayRef<int64_t> w = weight->getTensorType().getShape();
  RankedTensorType in = getInput().getType();
  if (in.getRank() < 1 || in.getShape().back() != w[0])
    return emitOpError() << "input " << shapeString(in.getShape())
                         << " does not end in " << w[0] << ", the rows of "
                         << getWeightAttr() << " " << shapeString(w);
  SmallVector<int64_t> expected(in.getShape());
  expected.back() = w[1];
  if (getResult().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeString(expected)
                         << ", got "
                         << shapeString(getResult().getType().getShape());
  return success();
}

LogicalResult PadOp::verify() {
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getResult().getType().getShape();
  if (in.empty() || out.size() != in.size() ||
      in.drop_back() != out.drop_back())
    return emitOpError() << "input " << shapeString(in) << " and result "
                         << shapeString(out)
                         << " must differ in the last dimension only";
  int64_t offset = getOffsetAttr().getInt();
  if (offset < 0 || in.back() > out.back() - offset)
    return emitOpError() << "input of width " << in.back() << " at offset "
                         << offset << " does not fit in " << out.back();
  return success();
}

LogicalResult SoftmaxXentOp::verify() {
  RankedTensorType logits = getLogits().getType();
  if (logits.getRank() != 1 || logits.getDimSize(0) < 1)
    return emitOpError() << "logits must be a non-empty vector, got "
                         << shapeString(logits.getShape());
  int64_t label = getLabelAttr().getInt();
  if (label < 0 || label >= logits.getDimSize(0))
    return emitOpError() << "label " << label << " is not a class of "
                         << logits.getDimSize(0) << " logits";
  if (getLoss().getType().getShape() != ArrayRef<int64_t>{1})
    return emitOpError() << "result must be [1], got "
                         << shapeString(getLoss().getType().getShape());
  return success();
}

LogicalResult SoftmaxXentGradOp::verify() {
  RankedTensorType logits = getLogits().getType();
  if (logits.getRank() != 1 || logits.getDimSize(0) < 1)
    return emitOpError() << "logits must be a non-empty vector, got "
                         << shapeString(logits.getShape());
  int64_t label = getLabelAttr().getInt();
  if (label < 0 || label >= logits.getDimSize(0))
    return emitOpError() << "label " << label << " is not a class of "
                         << logits.getDimSize(0) << " logits";
  if (getResult().getType() != logits)
    return emitOpError() << "result must be the logits' type "
                         << shapeString(logits.getShape()) << ", got "
                         << shapeString(getResult().getType().getShape());
  return success();
}

/// The logits and labels of a batched loss or loss adjoint: [N x classes]
/// logits and one class per row.
static LogicalResult verifyBatchedLabels(Operation *op, RankedTensorType logits,
                                         ArrayRef<int64_t> labels) {
  if (logits.getRank() != 2)
    return op->emitOpError() << "logits must be [N x classes], got "
                             << shapeString(logits.getShape());
  int64_t n = logits.getDimSize(0), classes = logits.getDimSize(1);
  if (static_cast<int64_t>(labels.size()) != n)
    return op->emitOpError() << labels.size() << " labels for " << n << " rows";
  for (int64_t label : labels)
    if (label < 0 || label >= classes)
      return op->emitOpError() << "label " << label << " is not a class of "
                               << classes << " logits";
  return success();
}

LogicalResult BatchedSoftmaxXentGradOp::verify() {
  if (failed(verifyBatchedLabels(*this, getLogits().getType(), getLabels())))
    return failure();
  if (getResult().getType() != getLogits().getType())
    return emitOpError() << "result must be the logits' type";
  return success();
}

LogicalResult BatchedSoftmaxXentOp::verify() {
  if (failed(verifyBatchedLabels(*this, getLogits().getType(), getLabels())))
    return failure();
  int64_t n = getLogits().getType().getDimSize(0);
  if (getLoss().getType().getShape() != ArrayRef<int64_t>{n, 1})
    return emitOpError() << "result must be " << shapeString({n, 1}) << ", got "
                         << shapeString(getLoss().getType().getShape());
  return success();
}

/// Checks that `actual` is `expected` with `batch` leading dimensions
/// prepended (none for per-instance calls).
static LogicalResult checkCallTypes(Operation *op, func::FuncOp callee,
                                    TypeRange operands, TypeRange results,
                                    std::optional<int64_t> batch) {
  FunctionType fnType = callee.getFunctionType();
  auto matches = [&](Type expected, Type actual) {
    auto e = asTensor(expected);
    auto a = asTensor(actual);
    if (!batch)
      return e == a;
    return a.getRank() == e.getRank() + 1 && a.getDimSize(0) == *batch &&
           a.getShape().drop_front() == e.getShape() &&
           a.getElementType() == e.getElementType();
  };
  auto describe = [&](Type expected) {
    SmallVector<int64_t> shape;
    if (batch)
      shape.push_back(*batch);
    llvm::append_range(shape, asTensor(expected).getShape());
    return shapeString(shape);
  };
  if (fnType.getNumInputs() != operands.size())
    return op->emitOpError()
           << "passes " << operands.size() << " operands to module @"
           << callee.getName() << ", which takes " << fnType.getNumInputs();
  if (fnType.getNumResults() != results.size())
    return op->emitOpError()
           << "expects " << results.size() << " results from module @"
           << callee.getName() << ", which returns " << fnType.getNumResults();
  for (unsigned i = 0; i < operands.size(); ++i)
    if (!isa<RankedTensorType>(fnType.getInput(i)) ||
        !matches(fnType.getInput(i), operands[i]))
      return op->emitOpError()
             << "operand " << i << " is "
             << shapeString(asTensor(operands[i]).getShape()) << " but module @"
             << callee.getName() << " expects "
             << (isa<RankedTensorType>(fnType.getInput(i))
                     ? describe(fnType.getInput(i))
                     : std::string("a non-tensor"));
  for (unsigned i = 0; i < results.size(); ++i)
    if (!isa<RankedTensorType>(fnType.getResult(i)) ||
        !matches(fnType.getResult(i), results[i]))
      return op->emitOpError()
             << "result " << i << " is "
             << shapeString(asTensor(results[i]).getShape()) << " but module @"
             << callee.getName() << " returns "
             << (isa<RankedTensorType>(fnType.getResult(i))
                     ? describe(fnType.getResult(i))
                     : std::string("a non-tensor"));
  return success();
}

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<func::FuncOp> callee = lookupModule(*this, tables, getCalleeAttr());
  if (failed(callee) || failed(rejectExpertCallee(*this, *callee)))
    return failure();
  return checkCallTypes(*this, *callee, getOperands().getTypes(),
                        getResultTypes(), std::nullopt);
}

LogicalResult DispatchOp::verify() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  if (in.getRank() < 1 || out.getRank() != in.getRank() ||
      in.getShape().drop_back() != out.getShape().drop_back())
    return emitOpError() << "input " << shapeString(in.getShape())
                         << " and result " << shapeString(out.getShape())
                         << " must differ in the last dimension only";
  if (getKAttr().getInt() < 1)
    return emitOpError() << "keeps the top " << getKAttr().getInt()
                         << " experts; k must be at least 1";
  return success();
}

LogicalResult DispatchOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<ParamOp> gate =
      requireParam(*this, tables, getGateAttr(), "gate", /*rank=*/2);
  if (failed(gate))
    return failure();
  ArrayRef<int64_t> gShape = gate->getTensorType().getShape();
  int64_t experts = gShape[0], d = gShape[1];
  RankedTensorType in = getInput().getType();
  if (in.getShape().back() != d)
    return emitOpError() << "input " << shapeString(in.getShape())
                         << " does not end in " << d << ", the columns of gate "
                         << getGateAttr() << " " << shapeString(gShape);
  if (getKAttr().getInt() > experts)
    return emitOpError() << "keeps the top " << getKAttr().getInt()
                         << " experts but gate " << getGateAttr()
                         << " scores only " << experts;
  if (auto noise = getNoiseAttr()) {
    FailureOr<ParamOp> n = requireParam(*this, tables, noise, "noise", 2);
    if (failed(n))
      return failure();
    if (n->getTensorType().getShape() != gShape)
      return emitOpError() << "noise " << noise << " is "
                           << shapeString(n->getTensorType().getShape())
                           << " but gate " << getGateAttr() << " is "
                           << shapeString(gShape);
  }
  FailureOr<func::FuncOp> fn = lookupModule(*this, tables, getExpertsAttr());
  if (failed(fn))
    return failure();
  int64_t marked = expertCount(*fn);
  if (marked == 0)
    return emitOpError() << "module @" << fn->getName()
                         << " is not an expert module: mark it with '"
                         << kExpertsAttrName << " = " << experts << " : i64'";
  if (marked != experts)
    return emitOpError() << "module @" << fn->getName() << " has "
                         << kExpertsAttrName << " = " << marked << " but gate "
                         << getGateAttr() << " scores " << experts
                         << " experts";
  FunctionType type = fn->getFunctionType();
  auto isVector = [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && r.getRank() == 1;
  };
  if (type.getNumInputs() != 1 || type.getNumResults() != 1 ||
      !isVector(type.getInput(0)) || !isVector(type.getResult(0)))
    return emitOpError() << "expert module @" << fn->getName()
                         << " must take one vector and return one vector";
  int64_t argWidth = asTensor(type.getInput(0)).getDimSize(0);
  int64_t resultWidth = asTensor(type.getResult(0)).getDimSize(0);
  if (argWidth != d)
    return emitOpError() << "expert module @" << fn->getName() << " takes ["
                         << argWidth << "] but the input rows are [" << d
                         << "]";
  if (getResult().getType().getShape().back() != resultWidth)
    return emitOpError() << "result "
                         << shapeString(getResult().getType().getShape())
                         << " does not end in " << resultWidth
                         << ", the width expert module @" << fn->getName()
                         << " returns";
  return success();
}

//===----------------------------------------------------------------------===//
// Feature maps
//===----------------------------------------------------------------------===//

/// The leading (batch) dimensions of a map value must match between input
/// and result; the last three are C x H x W.
static LogicalResult checkMapRanks(Operation *op, RankedTensorType in,
                                   RankedTensorType out, int64_t outRank) {
  if (in.getRank() < 3)
    return op->emitOpError()
           << "input " << shapeString(in.getShape())
           << " is not a feature map: it needs channels, height and width "
              "as its last three dimensions";
  if (!in.hasStaticShape())
    return op->emitOpError() << "input " << shapeString(in.getShape())
                             << " must have a static shape";
  if (out.getRank() != in.getRank() - 3 + outRank ||
      out.getShape().take_front(in.getRank() - 3) != in.getShape().drop_back(3))
    return op->emitOpError() << "result " << shapeString(out.getShape())
                             << " does not keep the leading dimensions of "
                             << shapeString(in.getShape());
  return success();
}

LogicalResult Conv2DOp::verify() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  if (failed(checkMapRanks(*this, in, out, 3)))
    return failure();
  if (getPaddingAttr().getInt() < 0)
    return emitOpError() << "padding " << getPaddingAttr().getInt()
                         << " is negative";
  return success();
}

LogicalResult Conv2DOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<ParamOp> weight =
      requireParam(*this, tables, getWeightAttr(), "weight", /*rank=*/4);
  if (failed(weight))
    return failure();
  ArrayRef<int64_t> w = weight->getTensorType().getShape();
  ArrayRef<int64_t> in = getInput().getType().getShape().take_back(3);
  int64_t pad = getPaddingAttr().getInt();
  if (in[0] != w[1])
    return emitOpError() << "input "
                         << shapeString(getInput().getType().getShape())
                         << " has " << in[0] << " channels but weight "
                         << getWeightAttr() << " " << shapeString(w)
                         << " takes " << w[1];
  int64_t h = in[1] + 2 * pad - w[2] + 1, wd = in[2] + 2 * pad - w[3] + 1;
  if (h < 1 || wd < 1)
    return emitOpError() << "window " << w[2] << "x" << w[3]
                         << " does not fit map " << shapeString(in)
                         << " with padding " << pad;
  SmallVector<int64_t> expected(getInput().getType().getShape().drop_back(3));
  expected.append({w[0], h, wd});
  if (getResult().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeString(expected)
                         << ", got "
                         << shapeString(getResult().getType().getShape());
  if (auto bias = getBiasAttr()) {
    FailureOr<ParamOp> b = requireParam(*this, tables, bias, "bias", 1);
    if (failed(b))
      return failure();
    if (b->getTensorType().getDimSize(0) != w[0])
      return emitOpError() << "bias " << bias << " has "
                           << b->getTensorType().getDimSize(0)
                           << " elements, the weight has " << w[0]
                           << " output channels";
  }
  return success();
}

LogicalResult MaxPool2DOp::verify() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  if (failed(checkMapRanks(*this, in, out, 3)))
    return failure();
  ArrayRef<int64_t> m = in.getShape().take_back(3);
  if (m[1] < 2 || m[2] < 2)
    return emitOpError() << "map " << shapeString(m)
                         << " is smaller than the 2x2 window";
  SmallVector<int64_t> expected(in.getShape().drop_back(3));
  expected.append({m[0], m[1] / 2, m[2] / 2});
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeString(expected)
                         << ", got " << shapeString(out.getShape());
  return success();
}

LogicalResult FlattenOp::verify() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  if (failed(checkMapRanks(*this, in, out, 1)))
    return failure();
  ArrayRef<int64_t> m = in.getShape().take_back(3);
  if (out.getShape().back() != m[0] * m[1] * m[2])
    return emitOpError() << "result must end in " << m[0] * m[1] * m[2] << " ("
                         << shapeString(m) << " flattened), got "
                         << shapeString(out.getShape());
  return success();
}

LogicalResult ChannelConcatOp::verify() {
  if (getInputs().size() < 2)
    return emitOpError("needs at least two inputs");
  RankedTensorType first = asTensor(getInputs().front().getType());
  RankedTensorType out = getResult().getType();
  if (failed(checkMapRanks(*this, first, out, 3)))
    return failure();
  int64_t channels = 0;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    RankedTensorType t = asTensor(v.getType());
    if (t.getRank() != first.getRank() ||
        t.getShape().drop_back(3) != first.getShape().drop_back(3) ||
        t.getShape().take_back(2) != first.getShape().take_back(2))
      return emitOpError() << "input " << i << " " << shapeString(t.getShape())
                           << " differs from input 0 "
                           << shapeString(first.getShape())
                           << " in other than the channels";
    channels += t.getShape()[t.getRank() - 3];
  }
  SmallVector<int64_t> expected(first.getShape());
  expected[expected.size() - 3] = channels;
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeString(expected)
                         << ", got " << shapeString(out.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Batched ops
//===----------------------------------------------------------------------===//

LogicalResult BatchedCallOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<func::FuncOp> callee = lookupModule(*this, tables, getCalleeAttr());
  if (failed(callee) || failed(rejectExpertCallee(*this, *callee)))
    return failure();
  if (getOperands().empty() && getResults().empty())
    return emitOpError("needs an operand or a result to carry the batch");
  Type carrier = getOperands().empty() ? getResult(0).getType()
                                       : getOperands()[0].getType();
  RankedTensorType t = asTensor(carrier);
  if (t.getRank() < 1)
    return emitOpError("operands must carry a leading batch dimension");
  return checkCallTypes(*this, *callee, getOperands().getTypes(),
                        getResultTypes(), t.getDimSize(0));
}

LogicalResult LookupOp::verifySymbolUses(SymbolTableCollection &tables) {
  ParamOp table = lookupParam(*this, tables, getTableAttr());
  if (!table)
    return emitOpError() << "refers to unknown parameter " << getTableAttr()
                         << " as its table";
  ArrayRef<int64_t> shape = table.getTensorType().getShape();
  if (shape.size() < 2)
    return emitOpError() << "needs a table of rank 2 or more, but "
                         << getTableAttr() << " has shape "
                         << shapeString(shape);
  for (int64_t idx : getIndices())
    if (idx < 0 || idx >= shape[0])
      return emitOpError() << "index " << idx << " is outside table "
                           << getTableAttr() << " of " << shape[0] << " rows";
  SmallVector<int64_t> expected = {static_cast<int64_t>(getIndices().size())};
  llvm::append_range(expected, shape.drop_front());
  if (getResult().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result must be " << shapeString(expected)
                         << ", got "
                         << shapeString(getResult().getType().getShape());
  return success();
}

LogicalResult GatherOp::verify() {
  ArrayRef<int64_t> rows = getRows();
  if (rows.size() % 2 != 0)
    return emitOpError("rows must hold (source, row) pairs");
  RankedTensorType result = getResult().getType();
  if (result.getRank() < 2 ||
      result.getDimSize(0) != static_cast<int64_t>(rows.size() / 2))
    return emitOpError() << "result must have " << rows.size() / 2
                         << " rows, got " << shapeString(result.getShape());
  for (auto [i, v] : llvm::enumerate(getSources())) {
    RankedTensorType t = asTensor(v.getType());
    if (t.getRank() != result.getRank() ||
        t.getShape().drop_front() != result.getShape().drop_front())
      return emitOpError() << "source " << i << " " << shapeString(t.getShape())
                           << " has other row shape than the result "
                           << shapeString(result.getShape());
  }
  for (size_t i = 0; i < rows.size(); i += 2) {
    int64_t src = rows[i], row = rows[i + 1];
    if (src < 0 || src >= static_cast<int64_t>(getSources().size()))
      return emitOpError() << "row " << i / 2 << " names source " << src
                           << " of " << getSources().size();
    int64_t n = asTensor(getSources()[src].getType()).getDimSize(0);
    if (row < 0 || row >= n)
      return emitOpError() << "row " << i / 2 << " reads row " << row
                           << " of source " << src << ", which has " << n;
  }
  return success();
}

OpFoldResult GatherOp::fold(FoldAdaptor) {
  // Every row of one source, in order: the gather is the source itself.
  if (getSources().size() != 1 ||
      getSources()[0].getType() != getResult().getType())
    return {};
  ArrayRef<int64_t> rows = getRows();
  for (size_t i = 0; i < rows.size(); i += 2)
    if (rows[i] != 0 || rows[i + 1] != static_cast<int64_t>(i / 2))
      return {};
  return getSources()[0];
}

//===----------------------------------------------------------------------===//
// Backward nodes
//===----------------------------------------------------------------------===//

LogicalResult LinearGradOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<ParamOp> weight =
      requireParam(*this, tables, getWeightAttr(), "weight", 2);
  if (failed(weight))
    return failure();
  ArrayRef<int64_t> w = weight->getTensorType().getShape();
  ArrayRef<int64_t> dy = getAdjoint().getType().getShape();
  ArrayRef<int64_t> x = getInput().getType().getShape();
  if (dy.empty() || dy.back() != w[0])
    return emitOpError() << "adjoint " << shapeString(dy) << " does not end in "
                         << w[0] << ", the rows of " << getWeightAttr() << " "
                         << shapeString(w);
  if (x.empty() || x.back() != w[1])
    return emitOpError() << "input " << shapeString(x) << " does not end in "
                         << w[1] << ", the columns of " << getWeightAttr()
                         << " " << shapeString(w);
  if (dy.drop_back() != x.drop_back())
    return emitOpError() << "adjoint " << shapeString(dy) << " and input "
                         << shapeString(x)
                         << " must differ in the last dimension only";
  if (auto bias = getBiasAttr()) {
    FailureOr<ParamOp> b = requireParam(*this, tables, bias, "bias", 1);
    if (failed(b))
      return failure();
    if (b->getTensorType().getShape().back() != w[0])
      return emitOpError() << "bias " << bias << " has "
                           << b->getTensorType().getShape().back()
                           << " elements, the weight has " << w[0] << " rows";
  }
  return success();
}

/// A table for an embedding's adjoint: a matrix whose rows are `row`.
static LogicalResult checkGradTable(Operation *op,
                                    SymbolTableCollection &tables,
                                    FlatSymbolRefAttr name,
                                    ArrayRef<int64_t> row,
                                    ArrayRef<int64_t> indices) {
  FailureOr<ParamOp> table = requireParam(op, tables, name, "table", 2);
  if (failed(table))
    return failure();
  ArrayRef<int64_t> shape = table->getTensorType().getShape();
  if (row != shape.drop_front())
    return op->emitOpError()
           << "adjoint rows " << shapeString(row) << " are not rows of " << name
           << " " << shapeString(shape);
  for (int64_t index : indices)
    if (index < 0 || index >= shape[0])
      return op->emitOpError() << "index " << index << " is outside table "
                               << name << " of " << shape[0] << " rows";
  return success();
}

LogicalResult EmbeddingGradOp::verifySymbolUses(SymbolTableCollection &tables) {
  return checkGradTable(*this, tables, getTableAttr(),
                        getAdjoint().getType().getShape(),
                        {getIndexAttr().getInt()});
}

LogicalResult
BatchedEmbeddingGradOp::verifySymbolUses(SymbolTableCollection &tables) {
  ArrayRef<int64_t> shape = getAdjoint().getType().getShape();
  if (shape.empty() || shape[0] != static_cast<int64_t>(getRows().size()))
    return emitOpError() << "adjoint " << shapeString(shape) << " must have "
                         << getRows().size() << " rows, one per index";
  return checkGradTable(*this, tables, getTableAttr(), shape.drop_front(),
                        getRows());
}

//===----------------------------------------------------------------------===//
// What batching asks of each op (BatchableOpInterface)
//===----------------------------------------------------------------------===//

// An embedding's row is the launch's data: every row of one table is one
// signature, and the launch is a lookup of all the members' rows.
bool EmbeddingOp::isPerRowAttribute(StringAttr name) {
  return name == getIndexAttrName();
}

Operation *EmbeddingOp::buildLaunch(OpBuilder &b, ArrayRef<Operation *> members,
                                    TypeRange resultTypes,
                                    ValueRange operands) {
  SmallVector<int64_t> indices;
  for (Operation *member : members)
    indices.push_back(cast<EmbeddingOp>(member).getIndexAttr().getInt());
  return b.create<LookupOp>(getLoc(), resultTypes.front(), getTableAttr(),
                            b.getDenseI64ArrayAttr(indices));
}

void EmbeddingOp::describeSignature(llvm::raw_ostream &os) {
  os << ' ' << getTableAttr();
}

// A loss's label is the launch's data, as an embedding's row is.
bool SoftmaxXentOp::isPerRowAttribute(StringAttr name) {
  return name == getLabelAttrName();
}

Operation *SoftmaxXentOp::buildLaunch(OpBuilder &b,
                                      ArrayRef<Operation *> members,
                                      TypeRange resultTypes,
                                      ValueRange operands) {
  SmallVector<int64_t> labels;
  for (Operation *member : members)
    labels.push_back(cast<SoftmaxXentOp>(member).getLabelAttr().getInt());
  return b.create<BatchedSoftmaxXentOp>(getLoc(), resultTypes.front(),
                                        operands.front(),
                                        b.getDenseI64ArrayAttr(labels));
}

bool SoftmaxXentGradOp::isPerRowAttribute(StringAttr name) {
  return name == getLabelAttrName();
}

Operation *SoftmaxXentGradOp::buildLaunch(OpBuilder &b,
                                          ArrayRef<Operation *> members,
                                          TypeRange resultTypes,
                                          ValueRange operands) {
  SmallVector<int64_t> labels;
  for (Operation *member : members)
    labels.push_back(cast<SoftmaxXentGradOp>(member).getLabelAttr().getInt());
  return b.create<BatchedSoftmaxXentGradOp>(getLoc(), resultTypes.front(),
                                            operands.front(),
                                            b.getDenseI64ArrayAttr(labels));
}

// A call's launch runs the module once on the stacked arguments.
Operation *CallOp::buildLaunch(OpBuilder &b, ArrayRef<Operation *> members,
                               TypeRange resultTypes, ValueRange operands) {
  return b.create<BatchedCallOp>(getLoc(), resultTypes, getCalleeAttr(),
                                 operands);
}

void CallOp::describeSignature(llvm::raw_ostream &os) {
  os << ' ' << getCalleeAttr();
}

void LinearOp::describeSignature(llvm::raw_ostream &os) {
  os << ' ' << getWeightAttr();
}

void DispatchOp::describeSignature(llvm::raw_ostream &os) {
  os << ' ' << getExpertsAttr() << " top " << getKAttr().getInt();
}

void LinearTransposeOp::describeSignature(llvm::raw_ostream &os) {
  os << ' ' << getWeightAttr();
}

void LinearGradOp::describeSignature(llvm::raw_ostream &os) {
  os << ' ' << getWeightAttr();
}

// The row an embedding read is the launch's data, as for the embedding.
bool EmbeddingGradOp::isPerRowAttribute(StringAttr name) {
  return name == getIndexAttrName();
}

Operation *EmbeddingGradOp::buildLaunch(OpBuilder &b,
                                        ArrayRef<Operation *> members,
                                        TypeRange resultTypes,
                                        ValueRange operands) {
  SmallVector<int64_t> rows;
  for (Operation *member : members)
    rows.push_back(cast<EmbeddingGradOp>(member).getIndexAttr().getInt());
  return b.create<BatchedEmbeddingGradOp>(
      getLoc(), operands.front(), getTableAttr(), b.getDenseI64ArrayAttr(rows));
}

void EmbeddingGradOp::describeSignature(llvm::raw_ostream &os) {
  os << ' ' << getTableAttr();
}

#include "dynb/Dialect/DynbEnums.cpp.inc"
#include "dynb/Dialect/DynbInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dynb/Dialect/DynbOps.cpp.inc"
