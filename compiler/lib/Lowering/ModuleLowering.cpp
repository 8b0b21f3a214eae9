//===- ModuleLowering.cpp - Module bodies to GEMM steps and fused kernels -===//
#include "dynb/Lowering/ModuleLowering.h"
#include "dynb/Dialect/DynbOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace dynb;

LoweredModule::LoweredModule() = default;
LoweredModule::~LoweredModule() = default;

void dynb::loadLoweringDialects(MLIRContext &ctx) {
  ctx.loadDialect<affine::AffineDialect, arith::ArithDialect,
                  cf::ControlFlowDialect, func::FuncDialect,
                  linalg::LinalgDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect>();
}

static void printSlot(llvm::raw_ostream &os, const SlotRef &s) {
  os << (s.kind == SlotRef::Kind::Arg ? "arg" : "t") << s.index << "[:, "
     << s.col << ":" << s.col + s.cols << "]";
}

void LoweredModule::printSteps(llvm::raw_ostream &os) const {
  os << header;
  os << "// module @" << name << ": " << steps.size() << " steps, "
     << localCols.size() << " local buffers [N x cols] (";
  llvm::interleaveComma(localCols, os);
  os << ")\n";
  for (auto [i, s] : llvm::enumerate(steps)) {
    os << "//   step " << i << ": ";
    if (s.kind == LoweredStep::Kind::Gemm) {
      printSlot(os, s.c);
      os << " = gemm(";
      printSlot(os, s.a);
      StringRef slice = s.perExpert ? "[e]" : "";
      os << ", @" << s.weight << slice << (s.weightAsStored ? "" : "^T");
      if (!s.bias.empty())
        os << ") + @" << s.bias << slice;
      else
        os << ")";
      os << (s.relu ? ", relu   (oneDNN, ReLU post-op)\n" : "   (oneDNN)\n");
    } else if (s.kind == LoweredStep::Kind::Map) {
      printSlot(os, s.c);
      static const char *names[] = {"conv", "maxpool2x2", "to_map_layout",
                                    "flatten", "channel_concat"};
      os << " = " << names[static_cast<int>(s.map.op)] << "(";
      llvm::interleaveComma(s.args, os,
                            [&](const SlotRef &r) { printSlot(os, r); });
      os << ") " << s.map.channels << "x" << s.map.height << "x" << s.map.width;
      if (s.map.op == rt::MapStep::Op::Conv) {
        os << ", @" << s.weight << " " << s.map.outChannels << "x"
           << s.map.channels << "x" << s.map.kernelH << "x" << s.map.kernelW
           << " padding " << s.map.padding;
        if (!s.bias.empty())
          os << " + @" << s.bias;
        if (s.map.relu)
          os << ", relu";
      }
      os << "   (oneDNN)\n";
    } else {
      os << "call @" << kernelNames[s.kernel] << "(";
      llvm::interleaveComma(s.args, os,
                            [&](const SlotRef &r) { printSlot(os, r); });
      os << ")\n";
    }
  }
  os << "//   results: ";
  llvm::interleaveComma(results, os,
                        [&](const SlotRef &r) { printSlot(os, r); });
  os << "\n";
}

namespace {

bool isElementwise(Operation *op) {
  // The trait, not a list: a new op in ElementwiseOps.def fuses with no
  // change here, only its scalar body in emitScalar.
  return isa<DynbDialect>(op->getDialect()) &&
         op->hasTrait<OpTrait::Elementwise>();
}

/// Elements per instance: a vector's width, or a whole feature map (kernels
/// treat a map as a flat row, whatever its layout).
int64_t widthOf(Value v) {
  int64_t w = 1;
  for (int64_t d : cast<RankedTensorType>(v.getType()).getShape())
    w *= d;
  return w;
}

/// Per-instance values the lowering takes: vectors and C x H x W maps.
bool isLowerableType(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && t.hasStaticShape() && (t.getRank() == 1 || t.getRank() == 3);
}

/// Builds the kernels module and the step list of one module body.
class BodyLowering {
public:
  BodyLowering(func::FuncOp fn, StringRef prefix, LoweredModule &out)
      : fn(fn), prefix(prefix.str()), out(out), b(fn.getContext()),
        f32(b.getF32Type()) {
    out.kernels = ModuleOp::create(fn.getLoc());
  }

  LogicalResult run();

private:
  SlotRef newLocal(int64_t cols) {
    out.localCols.push_back(cols);
    return {SlotRef::Kind::Local,
            static_cast<unsigned>(out.localCols.size() - 1), 0, cols};
  }
  MemRefType slotType(int64_t cols) {
    auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                                         {ShapedType::kDynamic, 1});
    return MemRefType::get({ShapedType::kDynamic, cols}, f32, layout);
  }
  /// The slot of a value, flushing the pending cluster if it computes it.
  FailureOr<SlotRef> materialize(Value v);
  LogicalResult flushCluster();
  func::FuncOp newKernel(ArrayRef<int64_t> argCols, StringRef what);
  /// A feature-map op as one map step; a ReLU that is a convolution's only
  /// user runs inside it.
  LogicalResult lowerMap(Operation *op);
  llvm::SmallPtrSet<Operation *, 8> fusedRelus;
  void emitConcat(ConcatOp op);
  void emitPad(PadOp op);
  Value emitScalar(OpBuilder &kb, Operation *op, ArrayRef<Value> operands);

  func::FuncOp fn;
  std::string prefix;
  LoweredModule &out;
  OpBuilder b;
  Type f32;
  DenseMap<Value, SlotRef> slots;
  llvm::SetVector<Operation *> cluster;
  int64_t clusterWidth = 0;
};

} // namespace

func::FuncOp BodyLowering::newKernel(ArrayRef<int64_t> argCols,
                                     StringRef what) {
  SmallVector<Type> types;
  for (int64_t c : argCols)
    types.push_back(slotType(c));
  std::string name = prefix + "_k" + std::to_string(out.kernelNames.size());
  OpBuilder kb = OpBuilder::atBlockEnd(out.kernels->getBody());
  auto kfn =
      kb.create<func::FuncOp>(fn.getLoc(), name, kb.getFunctionType(types, {}));
  kfn->setAttr("llvm.emit_c_interface", kb.getUnitAttr());
  // Outputs are fresh buffers the inputs never overlap (inputs may overlap
  // each other, but are only read), so the vectoriser needs no runtime
  // alias checks.
  for (unsigned i = 0; i < argCols.size(); ++i)
    kfn.setArgAttr(i, "llvm.noalias", kb.getUnitAttr());
  kfn->setAttr("dynb.kernel", kb.getStringAttr(what));
  kfn.addEntryBlock();
  out.kernelNames.push_back(name);
  return kfn;
}

Value BodyLowering::emitScalar(OpBuilder &kb, Operation *op,
                               ArrayRef<Value> x) {
  Location loc = op->getLoc();
  if (isa<AddOp>(op))
    return kb.create<arith::AddFOp>(loc, x[0], x[1]);
  if (isa<MulOp>(op))
    return kb.create<arith::MulFOp>(loc, x[0], x[1]);
  if (isa<TanhOp>(op))
    return kb.create<math::TanhOp>(loc, x[0]);
  if (isa<NegOp>(op))
    return kb.create<arith::NegFOp>(loc, x[0]);
  if (isa<ReluOp>(op)) {
    Value zero = kb.create<arith::ConstantOp>(loc, kb.getF32FloatAttr(0.0f));
    return kb.create<arith::MaximumFOp>(loc, x[0], zero);
  }
  // The adjoint ops dynb-grad writes: (saved value, incoming adjoint).
  if (isa<SigmoidGradOp, TanhGradOp>(op)) {
    Value one = kb.create<arith::ConstantOp>(loc, kb.getF32FloatAttr(1.0f));
    Value slope;
    if (isa<SigmoidGradOp>(op)) {
      Value rest = kb.create<arith::SubFOp>(loc, one, x[0]);
      slope = kb.create<arith::MulFOp>(loc, x[0], rest);
    } else {
      Value square = kb.create<arith::MulFOp>(loc, x[0], x[0]);
      slope = kb.create<arith::SubFOp>(loc, one, square);
    }
    return kb.create<arith::MulFOp>(loc, x[1], slope);
  }
  if (isa<ReluGradOp>(op)) {
    Value zero = kb.create<arith::ConstantOp>(loc, kb.getF32FloatAttr(0.0f));
    Value positive =
        kb.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, x[0], zero);
    return kb.create<arith::SelectOp>(loc, positive, x[1], zero);
  }
  assert(isa<SigmoidOp>(op) && "not an elementwise op");
  // 1 / (1 + exp(-x)): exp overflows to +inf for very negative x, which
  // gives the correct limit 0.
  Value one = kb.create<arith::ConstantOp>(loc, kb.getF32FloatAttr(1.0f));
  Value neg = kb.create<arith::NegFOp>(loc, x[0]);
  Value e = kb.create<math::ExpOp>(loc, neg);
  Value den = kb.create<arith::AddFOp>(loc, one, e);
  return kb.create<arith::DivFOp>(loc, one, den);
}

LogicalResult BodyLowering::flushCluster() {
  if (cluster.empty())
    return success();
  // Inputs: values from outside the cluster, in first-use order. Outputs:
  // cluster values that something outside the cluster still needs.
  llvm::MapVector<Value, unsigned> inputs;
  SmallVector<Value> outputs;
  for (Operation *op : cluster)
    for (Value v : op->getOperands())
      if (!cluster.contains(v.getDefiningOp()))
        inputs.insert({v, inputs.size()});
  for (Operation *op : cluster)
    for (Operation *user : op->getResult(0).getUsers())
      if (!cluster.contains(user)) {
        outputs.push_back(op->getResult(0));
        break;
      }

  SmallVector<int64_t> argCols(inputs.size() + outputs.size(), clusterWidth);
  std::string what;
  llvm::raw_string_ostream os(what);
  os << "fused ";
  llvm::interleave(
      cluster, os, [&](Operation *op) { os << op->getName().stripDialect(); },
      ",");
  func::FuncOp kfn = newKernel(argCols, os.str());

  LoweredStep step;
  step.kind = LoweredStep::Kind::Kernel;
  step.kernel = out.kernelNames.size() - 1;
  for (auto &kv : inputs)
    step.args.push_back(slots.lookup(kv.first));
  for (Value v : outputs) {
    SlotRef s = newLocal(clusterWidth);
    slots[v] = s;
    step.args.push_back(s);
  }

  Block &entry = kfn.getBody().front();
  OpBuilder kb = OpBuilder::atBlockEnd(&entry);
  Location loc = fn.getLoc();
  SmallVector<Value> ins(entry.getArguments().take_front(inputs.size()));
  SmallVector<Value> outs(entry.getArguments().drop_front(inputs.size()));
  SmallVector<AffineMap> maps(ins.size() + outs.size(),
                              kb.getMultiDimIdentityMap(2));
  SmallVector<utils::IteratorType> iters(2, utils::IteratorType::parallel);
  kb.create<linalg::GenericOp>(loc, TypeRange{}, ins, outs, maps, iters,
                               [&](OpBuilder &nb, Location, ValueRange args) {
                                 DenseMap<Value, Value> scalar;
                                 for (auto &kv : inputs)
                                   scalar[kv.first] = args[kv.second];
                                 for (Operation *op : cluster) {
                                   SmallVector<Value, 2> operands;
                                   for (Value v : op->getOperands())
                                     operands.push_back(scalar.lookup(v));
                                   scalar[op->getResult(0)] =
                                       emitScalar(nb, op, operands);
                                 }
                                 SmallVector<Value> yields;
                                 for (Value v : outputs)
                                   yields.push_back(scalar.lookup(v));
                                 nb.create<linalg::YieldOp>(loc, yields);
                               });
  kb.create<func::ReturnOp>(loc);
  out.steps.push_back(std::move(step));
  cluster.clear();
  clusterWidth = 0;
  return success();
}

void BodyLowering::emitConcat(ConcatOp op) {
  // Each input is copied into its column window of one local buffer, by
  // kernels of at most kConcatInputsPerKernel copies each: LLVM's code
  // generation of one kernel holding every copy grows quadratically in
  // them (time `dynbc run --no-cache` on a module concatenating 100
  // inputs, with and without the split).
  constexpr size_t kConcatInputsPerKernel = 8;
  SlotRef dst = newLocal(widthOf(op.getResult()));
  int64_t col = 0;
  for (size_t first = 0, e = op.getInputs().size(); first < e;
       first += kConcatInputsPerKernel) {
    auto inputs = op.getInputs().slice(
        first, std::min(kConcatInputsPerKernel, e - first));
    SmallVector<int64_t> argCols;
    for (Value v : inputs)
      argCols.push_back(widthOf(v));
    for (Value v : inputs)
      argCols.push_back(widthOf(v));
    func::FuncOp kfn = newKernel(argCols, "concat");
    LoweredStep step;
    step.kind = LoweredStep::Kind::Kernel;
    step.kernel = out.kernelNames.size() - 1;
    for (Value v : inputs)
      step.args.push_back(slots.lookup(v));
    bool allArgs = llvm::all_of(inputs, [&](Value v) {
      SlotRef s = slots.lookup(v);
      return s.kind == SlotRef::Kind::Arg && s.col == 0 &&
             s.cols == out.argCols[s.index];
    });
    if (allArgs)
      for (Value v : inputs)
        step.concatArgs.push_back(slots.lookup(v).index);
    for (Value v : inputs) {
      step.args.push_back({dst.kind, dst.index, col, widthOf(v)});
      col += widthOf(v);
    }
    Block &entry = kfn.getBody().front();
    OpBuilder kb = OpBuilder::atBlockEnd(&entry);
    unsigned n = inputs.size();
    SmallVector<utils::IteratorType> iters(2, utils::IteratorType::parallel);
    for (unsigned i = 0; i < n; ++i) {
      SmallVector<AffineMap> maps(2, kb.getMultiDimIdentityMap(2));
      kb.create<linalg::GenericOp>(
          op.getLoc(), TypeRange{}, ValueRange{entry.getArgument(i)},
          ValueRange{entry.getArgument(n + i)}, maps, iters,
          [&](OpBuilder &nb, Location loc, ValueRange args) {
            nb.create<linalg::YieldOp>(loc, args[0]);
          });
    }
    kb.create<func::ReturnOp>(op.getLoc());
    out.steps.push_back(std::move(step));
  }
  slots[op.getResult()] = dst;
}

void BodyLowering::emitPad(PadOp op) {
  // One kernel: the input copied into its window of a local buffer, the
  // columns either side of it filled with zeros.
  int64_t inW = widthOf(op.getInput()), outW = widthOf(op.getResult());
  int64_t offset = op.getOffsetAttr().getInt();
  SlotRef dst = newLocal(outW);
  SmallVector<std::pair<int64_t, int64_t>, 2> zeros; // (column, width)
  if (offset > 0)
    zeros.push_back({0, offset});
  if (offset + inW < outW)
    zeros.push_back({offset + inW, outW - offset - inW});
  SmallVector<int64_t> argCols = {inW, inW};
  for (auto [col, width] : zeros)
    argCols.push_back(width);
  func::FuncOp kfn = newKernel(argCols, "pad");
  LoweredStep step;
  step.kind = LoweredStep::Kind::Kernel;
  step.kernel = out.kernelNames.size() - 1;
  step.args.push_back(slots.lookup(op.getInput()));
  step.args.push_back({dst.kind, dst.index, offset, inW});
  for (auto [col, width] : zeros)
    step.args.push_back({dst.kind, dst.index, col, width});
  Block &entry = kfn.getBody().front();
  OpBuilder kb = OpBuilder::atBlockEnd(&entry);
  SmallVector<utils::IteratorType> iters(2, utils::IteratorType::parallel);
  SmallVector<AffineMap> maps(2, kb.getMultiDimIdentityMap(2));
  kb.create<linalg::GenericOp>(
      op.getLoc(), TypeRange{}, ValueRange{entry.getArgument(0)},
      ValueRange{entry.getArgument(1)}, maps, iters,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        nb.create<linalg::YieldOp>(loc, args[0]);
      });
  Value zero =
      kb.create<arith::ConstantOp>(op.getLoc(), kb.getF32FloatAttr(0.0f));
  for (unsigned i = 0; i < zeros.size(); ++i)
    kb.create<linalg::FillOp>(op.getLoc(), ValueRange{zero},
                              ValueRange{entry.getArgument(2 + i)});
  kb.create<func::ReturnOp>(op.getLoc());
  out.steps.push_back(std::move(step));
  slots[op.getResult()] = dst;
}

LogicalResult BodyLowering::lowerMap(Operation *op) {
  if (expertCount(fn))
    return op->emitOpError() << "inside expert module @" << fn.getName()
                             << ": feature maps are not lowered in experts";
  SmallVector<SlotRef, 2> inputs;
  for (Value v : op->getOperands()) {
    FailureOr<SlotRef> s = materialize(v);
    if (failed(s))
      return failure();
    inputs.push_back(*s);
  }
  Value result = op->getResult(0);
  Operation *relu = nullptr;
  if (isa<Conv2DOp>(op) && result.hasOneUse() &&
      isa<ReluOp>(*result.getUsers().begin()))
    relu = *result.getUsers().begin();
  SlotRef outSlot = newLocal(widthOf(result));
  out.steps.push_back(lowerMapOp(op, inputs, outSlot, relu != nullptr));
  slots[result] = outSlot;
  if (relu) {
    fusedRelus.insert(relu);
    slots[relu->getResult(0)] = outSlot;
  }
  return success();
}

FailureOr<SlotRef> BodyLowering::materialize(Value v) {
  auto it = slots.find(v);
  if (it != slots.end())
    return it->second;
  if (cluster.contains(v.getDefiningOp())) {
    if (failed(flushCluster()))
      return failure();
    return slots.lookup(v);
  }
  return emitError(v.getLoc()) << "value has no buffer (internal error)";
}

LogicalResult BodyLowering::run() {
  out.name = fn.getName().str();
  for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
    if (!isLowerableType(arg.getType()))
      return fn.emitError() << "module @" << fn.getName() << ": argument " << i
                            << " must be a static 1-D tensor or C x H x W "
                               "map per instance (other ranks are not "
                               "lowered yet)";
    out.argCols.push_back(widthOf(arg));
    slots[arg] = {SlotRef::Kind::Arg, static_cast<unsigned>(i), 0,
                  widthOf(arg)};
  }
  for (Operation &opRef : fn.getBody().front()) {
    Operation *op = &opRef;
    if (fusedRelus.contains(op))
      continue;
    for (Value r : op->getResults())
      if (!isLowerableType(r.getType()))
        return op->emitOpError()
               << "results must be static 1-D tensors or C x H x W maps per "
                  "instance to be lowered (other ranks are not lowered yet)";
    // Ops on the last dimension would cut across the runtime's map layout.
    if (isa<SliceOp, ConcatOp, PadOp, LinearOp, LinearTransposeOp>(op))
      for (Value v : op->getOperands())
        if (cast<RankedTensorType>(v.getType()).getRank() != 1)
          return op->emitOpError()
                 << "inside module @" << fn.getName()
                 << " works on the last dimension of a feature map, which "
                    "is not lowered (use dynb.flatten or "
                    "dynb.channel_concat)";
    if (isMapOp(op)) {
      if (failed(lowerMap(op)))
        return failure();
      continue;
    }
    if (isElementwise(op)) {
      int64_t w = widthOf(op->getResult(0));
      if (!cluster.empty() && w != clusterWidth && failed(flushCluster()))
        return failure();
      for (Value v : op->getOperands())
        if (!cluster.contains(v.getDefiningOp()) && failed(materialize(v)))
          return failure();
      cluster.insert(op);
      clusterWidth = w;
      continue;
    }
    if (auto slice = dyn_cast<SliceOp>(op)) {
      FailureOr<SlotRef> in = materialize(slice.getInput());
      if (failed(in))
        return failure();
      slots[slice.getResult()] = {in->kind, in->index,
                                  in->col + slice.getOffsetAttr().getInt(),
                                  slice.getSizeAttr().getInt()};
      continue;
    }
    if (auto linear = dyn_cast<LinearOp>(op)) {
      FailureOr<SlotRef> in = materialize(linear.getInput());
      if (failed(in))
        return failure();
      LoweredStep step;
      step.kind = LoweredStep::Kind::Gemm;
      step.a = *in;
      step.weight = linear.getWeight().str();
      step.perExpert = expertCount(fn) > 0;
      if (auto bias = linear.getBias())
        step.bias = bias->str();
      step.c = newLocal(widthOf(linear.getResult()));
      slots[linear.getResult()] = step.c;
      // In an expert module a ReLU that is the linear's only use runs
      // inside the GEMM, on each block of c while it is in cache (a oneDNN
      // post-op). Other modules keep it in their kernels for now: the GPU
      // lowering compiles those kernels and has no GEMMs yet.
      Value result = linear.getResult();
      if (step.perExpert && result.hasOneUse() &&
          isa<ReluOp>(*result.getUsers().begin())) {
        Operation *relu = *result.getUsers().begin();
        step.relu = true;
        fusedRelus.insert(relu);
        slots[relu->getResult(0)] = step.c;
      }
      out.steps.push_back(std::move(step));
      continue;
    }
    if (auto transpose = dyn_cast<LinearTransposeOp>(op)) {
      FailureOr<SlotRef> in = materialize(transpose.getInput());
      if (failed(in))
        return failure();
      LoweredStep step;
      step.kind = LoweredStep::Kind::Gemm;
      step.a = *in;
      step.weight = transpose.getWeight().str();
      step.weightAsStored = true;
      step.c = newLocal(widthOf(transpose.getResult()));
      slots[transpose.getResult()] = step.c;
      out.steps.push_back(std::move(step));
      continue;
    }
    if (auto pad = dyn_cast<PadOp>(op)) {
      if (failed(materialize(pad.getInput())))
        return failure();
      emitPad(pad);
      continue;
    }
    if (auto concat = dyn_cast<ConcatOp>(op)) {
      for (Value v : concat.getInputs())
        if (failed(materialize(v)))
          return failure();
      emitConcat(concat);
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands()) {
        FailureOr<SlotRef> s = materialize(v);
        if (failed(s))
          return failure();
        out.results.push_back(*s);
      }
      continue;
    }
    if (isa<CallOp>(op))
      return op->emitOpError() << "inside module @" << fn.getName()
                               << ": modules cannot call modules yet";
    if (isa<EmbeddingOp>(op))
      return op->emitOpError()
             << "inside module @" << fn.getName()
             << ": embeddings read per-instance data and belong in instances";
    if (isa<SoftmaxXentOp, SoftmaxXentGradOp>(op))
      return op->emitOpError()
             << "inside module @" << fn.getName()
             << ": a loss's label is per-instance data; losses belong in "
                "instances";
    return op->emitOpError()
           << "cannot be lowered inside module @" << fn.getName();
  }
  return flushCluster();
}

FailureOr<std::unique_ptr<LoweredModule>>
dynb::lowerModuleBody(func::FuncOp fn, StringRef kernelPrefix) {
  loadLoweringDialects(*fn.getContext());
  auto out = std::make_unique<LoweredModule>();
  if (fn.getBody().empty())
    return fn.emitError() << "module @" << fn.getName() << " has no body";
  BodyLowering lowering(fn, kernelPrefix, *out);
  if (failed(lowering.run()))
    return failure();
  return out;
}

static RankedTensorType dropBatch(Type t) {
  auto r = cast<RankedTensorType>(t);
  return RankedTensorType::get(r.getShape().drop_front(), r.getElementType());
}

func::FuncOp dynb::wrapBatchedOp(Operation *op, StringRef name,
                                 OwningOpRef<ModuleOp> &holder) {
  SmallVector<Type> args, results;
  for (Type t : op->getOperandTypes())
    args.push_back(dropBatch(t));
  for (Type t : op->getResultTypes())
    results.push_back(dropBatch(t));
  // Built in the op's own context (a streamed batch has one of its own),
  // in a module that lives as long as the caller needs the wrapper.
  holder = ModuleOp::create(op->getLoc());
  OpBuilder b = OpBuilder::atBlockEnd(holder->getBody());
  auto fn = b.create<func::FuncOp>(op->getLoc(), name,
                                   b.getFunctionType(args, results));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToEnd(body);
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(body->getArguments());
  state.addAttributes(op->getAttrs());
  state.addTypes(results);
  Operation *clone = b.create(state);
  b.create<func::ReturnOp>(op->getLoc(), clone->getResults());
  return fn;
}

FailureOr<std::unique_ptr<LoweredModule>>
dynb::lowerLaunch(Operation *op, StringRef wrapperName) {
  if (auto fn = dyn_cast<func::FuncOp>(op))
    return lowerModuleBody(fn, fn.getName());
  if (auto dispatch = dyn_cast<DispatchOp>(op)) {
    // The runtime's part (gate, routing, combine) has no kernels: show the
    // expert module's steps under a line that says how they are run.
    auto experts = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        op, dispatch.getExpertsAttr());
    auto lowered = lowerModuleBody(experts, experts.getName());
    if (failed(lowered))
      return failure();
    std::string header;
    llvm::raw_string_ostream os(header);
    os << "// dispatch: gate @" << dispatch.getGate();
    if (auto noise = dispatch.getNoise())
      os << " + noise @" << *noise;
    os << ", top " << dispatch.getKAttr().getInt() << " of "
       << expertCount(experts)
       << " experts; rows grouped by expert (counting sort), expert module "
          "@"
       << experts.getName()
       << " run per used expert on its rows (GEMMs read expert e's slice of "
          "stacked weights, kernels run once over every routed row), "
          "gate-weighted sum back in row order\n";
    (*lowered)->header = os.str();
    return lowered;
  }
  OwningOpRef<ModuleOp> holder;
  func::FuncOp fn = wrapBatchedOp(op, wrapperName, holder);
  return lowerModuleBody(fn, fn.getName());
}

std::string dynb::launchCodeKey(Operation &op) {
  if (auto call = dyn_cast<BatchedCallOp>(op))
    return "call:" + call.getCallee().str();
  std::string key;
  llvm::raw_string_ostream ks(key);
  ks << op.getName() << op.getAttrDictionary();
  for (Type t : op.getOperandTypes())
    ks << cast<RankedTensorType>(t).getShape().drop_front().size()
       << cast<RankedTensorType>(t).getShape().back();
  return key;
}
