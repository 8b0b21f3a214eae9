//===- ReferenceInterpreter.cpp - One instance at a time, plain loops -----===//
#include "dynb/Reference/ReferenceInterpreter.h"

#include "dynb/Runtime/Routing.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;
using namespace dynb;

ReferenceInterpreter::ReferenceInterpreter(ModuleOp model,
                                           const rt::ParameterStore &params)
    : model(model), params(params) {}

FailureOr<const rt::ParamTensor *> ReferenceInterpreter::param(Operation *user,
                                                               StringRef name) {
  const rt::ParamTensor *t = params.find(name);
  if (!t)
    return user->emitOpError() << "parameter '" << name << "' has no values";
  return t;
}

/// log(sum_c exp(z_c)) in double, shifted by the largest logit so that
/// exp() stays finite for any input.
static double logSumExp(const std::vector<float> &z) {
  double top = *std::max_element(z.begin(), z.end());
  double sum = 0;
  for (float v : z)
    sum += std::exp(double(v) - top);
  return top + std::log(sum);
}

static int64_t lastDim(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape().back();
}

LogicalResult
ReferenceInterpreter::evalBlock(Block &block,
                                DenseMap<Value, std::vector<float>> &env,
                                std::vector<std::vector<float>> &results) {
  for (Operation &opRef : block) {
    Operation *op = &opRef;
    auto in = [&](unsigned i) -> const std::vector<float> & {
      return env[op->getOperand(i)];
    };
    auto unary = [&](auto f) {
      std::vector<float> y(in(0));
      for (float &v : y)
        v = f(v);
      env[op->getResult(0)] = std::move(y);
    };
    auto binary = [&](auto f) {
      const std::vector<float> &a = in(0), &b = in(1);
      std::vector<float> y(a.size());
      for (size_t i = 0; i < a.size(); ++i)
        y[i] = f(a[i], b[i]);
      env[op->getResult(0)] = std::move(y);
    };

    if (auto emb = dyn_cast<EmbeddingOp>(op)) {
      FailureOr<const rt::ParamTensor *> t = param(op, emb.getTable());
      if (failed(t))
        return failure();
      // A row of the first dimension: a vector, or a whole feature map.
      int64_t cols = (*t)->numElements() / (*t)->shape.front();
      const float *row = (*t)->data.data() + emb.getIndexAttr().getInt() * cols;
      env[emb.getResult()] = std::vector<float>(row, row + cols);
    } else if (auto lin = dyn_cast<LinearOp>(op)) {
      FailureOr<const rt::ParamTensor *> w = param(op, lin.getWeight());
      if (failed(w))
        return failure();
      const rt::ParamTensor *bias = nullptr;
      if (auto b = lin.getBias()) {
        FailureOr<const rt::ParamTensor *> bt = param(op, *b);
        if (failed(bt))
          return failure();
        bias = *bt;
      }
      // Stacked per-expert parameters: the running expert's slice.
      const std::vector<int64_t> &shape = (*w)->shape;
      int64_t n = shape[shape.size() - 2], k = shape.back();
      bool stacked = shape.size() == 3;
      if (stacked && (expert_ < 0 || expert_ >= shape[0]))
        return op->emitOpError()
               << "reads stacked parameter '" << lin.getWeight()
               << "' outside a dispatch to one of its " << shape[0]
               << " experts";
      const float *wBase = (*w)->data.data() + (stacked ? expert_ * n * k : 0);
      const float *bBase =
          bias ? bias->data.data() + (stacked ? expert_ * n : 0) : nullptr;
      const std::vector<float> &x = in(0);
      int64_t rows = x.size() / k;
      std::vector<float> y(rows * n);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i) {
          double acc = bBase ? bBase[i] : 0.0;
          const float *wr = wBase + i * k;
          for (int64_t j = 0; j < k; ++j)
            acc += double(wr[j]) * double(x[r * k + j]);
          y[r * n + i] = static_cast<float>(acc);
        }
      env[lin.getResult()] = std::move(y);
    } else if (isa<AddOp>(op)) {
      binary([](float a, float b) { return a + b; });
    } else if (isa<MulOp>(op)) {
      binary([](float a, float b) { return a * b; });
    } else if (isa<SigmoidOp>(op)) {
      unary([](float v) { return float(1.0 / (1.0 + std::exp(-double(v)))); });
    } else if (isa<TanhOp>(op)) {
      unary([](float v) { return float(std::tanh(double(v))); });
    } else if (isa<ReluOp>(op)) {
      unary([](float v) { return v > 0.0f ? v : 0.0f; });
    } else if (isa<NegOp>(op)) {
      unary([](float v) { return -v; });
    } else if (isa<SigmoidGradOp>(op)) {
      binary([](float y, float d) {
        return float(double(d) * double(y) * (1.0 - double(y)));
      });
    } else if (isa<TanhGradOp>(op)) {
      binary([](float y, float d) {
        return float(double(d) * (1.0 - double(y) * double(y)));
      });
    } else if (isa<ReluGradOp>(op)) {
      binary([](float x, float d) { return x > 0.0f ? d : 0.0f; });
    } else if (auto lt = dyn_cast<LinearTransposeOp>(op)) {
      FailureOr<const rt::ParamTensor *> w = param(op, lt.getWeight());
      if (failed(w))
        return failure();
      int64_t n = (*w)->shape[0], k = (*w)->shape[1];
      const std::vector<float> &dy = in(0);
      int64_t rows = dy.size() / n;
      std::vector<float> dx(rows * k);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < k; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < n; ++i)
            acc += double((*w)->data[i * k + j]) * double(dy[r * n + i]);
          dx[r * k + j] = static_cast<float>(acc);
        }
      env[lt.getResult()] = std::move(dx);
    } else if (auto pad = dyn_cast<PadOp>(op)) {
      int64_t inW = lastDim(pad.getInput()), outW = lastDim(pad.getResult());
      int64_t off = pad.getOffsetAttr().getInt();
      const std::vector<float> &x = in(0);
      int64_t rows = x.size() / inW;
      std::vector<float> y(rows * outW, 0.0f);
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(x.data() + r * inW, inW, y.data() + r * outW + off);
      env[pad.getResult()] = std::move(y);
    } else if (auto zeros = dyn_cast<ZerosOp>(op)) {
      env[zeros.getResult()] = std::vector<float>(
          size_t(zeros.getResult().getType().getNumElements()), 0.0f);
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      int64_t outW = lastDim(concat.getResult());
      int64_t rows = in(0).size() / lastDim(concat.getInputs()[0]);
      std::vector<float> y(rows * outW);
      int64_t col = 0;
      for (Value v : concat.getInputs()) {
        const std::vector<float> &x = env[v];
        int64_t w = lastDim(v);
        for (int64_t r = 0; r < rows; ++r)
          std::copy_n(x.data() + r * w, w, y.data() + r * outW + col);
        col += w;
      }
      env[concat.getResult()] = std::move(y);
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      int64_t inW = lastDim(slice.getInput());
      int64_t size = slice.getSizeAttr().getInt();
      int64_t off = slice.getOffsetAttr().getInt();
      const std::vector<float> &x = in(0);
      int64_t rows = x.size() / inW;
      std::vector<float> y(rows * size);
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(x.data() + r * inW + off, size, y.data() + r * size);
      env[slice.getResult()] = std::move(y);
    } else if (auto call = dyn_cast<CallOp>(op)) {
      auto callee = model.lookupSymbol<func::FuncOp>(call.getCallee());
      if (!callee || callee.getBody().empty())
        return op->emitOpError() << "calls a module without a body";
      DenseMap<Value, std::vector<float>> inner;
      for (auto [arg, v] : llvm::zip(callee.getArguments(), call.getOperands()))
        inner[arg] = env[v];
      std::vector<std::vector<float>> outs;
      if (failed(evalBlock(callee.getBody().front(), inner, outs)))
        return failure();
      for (auto [r, v] : llvm::zip(call.getResults(), outs))
        env[r] = std::move(v);
    } else if (auto xent = dyn_cast<SoftmaxXentOp>(op)) {
      // log(sum_c exp(z_c)) - z_label.
      const std::vector<float> &z = in(0);
      double loss = logSumExp(z) - double(z[xent.getLabelAttr().getInt()]);
      loss_ += loss;
      sawLoss_ = true;
      env[xent.getLoss()] = {static_cast<float>(loss)};
    } else if (auto grad = dyn_cast<SoftmaxXentGradOp>(op)) {
      // exp(z_c - logsumexp(z)) - [c == label].
      const std::vector<float> &z = in(0);
      double lse = logSumExp(z);
      int64_t label = grad.getLabelAttr().getInt();
      std::vector<float> dz(z.size());
      for (size_t c = 0; c < z.size(); ++c)
        dz[c] =
            static_cast<float>(std::exp(double(z[c]) - lse) -
                               (static_cast<int64_t>(c) == label ? 1.0 : 0.0));
      env[grad.getResult()] = std::move(dz);
    } else if (auto dispatch = dyn_cast<DispatchOp>(op)) {
      if (failed(evalDispatch(dispatch, env)))
        return failure();
    } else if (isa<Conv2DOp, MaxPool2DOp, FlattenOp, ChannelConcatOp>(op)) {
      if (failed(evalMapOp(op, env)))
        return failure();
    } else if (isa<OutputOp, func::ReturnOp>(op)) {
      for (Value v : op->getOperands())
        results.push_back(env[v]);
    } else {
      return op->emitOpError() << "is not supported by the reference "
                                  "interpreter";
    }
  }
  return success();
}

LogicalResult
ReferenceInterpreter::evalDispatch(DispatchOp op,
                                   DenseMap<Value, std::vector<float>> &env) {
  FailureOr<const rt::ParamTensor *> gate = param(op, op.getGate());
  if (failed(gate))
    return failure();
  const rt::ParamTensor *noise = nullptr;
  if (auto name = op.getNoise()) {
    FailureOr<const rt::ParamTensor *> t = param(op, *name);
    if (failed(t))
      return failure();
    noise = *t;
  }
  auto experts = model.lookupSymbol<func::FuncOp>(op.getExperts());
  if (!experts || experts.getBody().empty())
    return op->emitOpError() << "dispatches to a module without a body";
  int64_t numExperts = (*gate)->shape[0], d = (*gate)->shape[1];
  int64_t k = op.getKAttr().getInt();
  int64_t outW = lastDim(op.getResult());
  const std::vector<float> &x = env[op.getInput()];
  int64_t rows = x.size() / d;
  std::vector<float> y(rows * outW);
  std::vector<double> logits(numExperts);
  std::vector<int64_t> order(numExperts);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x.data() + r * d;
    auto dot = [&](const rt::ParamTensor *w, int64_t e) {
      double acc = 0;
      for (int64_t j = 0; j < d; ++j)
        acc += double(w->data[e * d + j]) * double(xr[j]);
      return acc;
    };
    uint64_t noiseKey =
        noise ? rt::gatingNoiseKey(op.getNoiseSeed(), xr, d) : 0;
    for (int64_t e = 0; e < numExperts; ++e) {
      logits[e] = dot(*gate, e);
      if (noise) {
        double v = dot(noise, e);
        double scale =
            v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
        logits[e] += double(rt::gatingNoise(noiseKey, e)) * scale;
      }
    }
    // KeepTopK: the k largest, ties to the lower expert.
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) {
                        return logits[a] > logits[b] ||
                               (logits[a] == logits[b] && a < b);
                      });
    double sum = 0;
    std::vector<double> weight(k);
    for (int64_t j = 0; j < k; ++j)
      sum += weight[j] = std::exp(logits[order[j]] - logits[order[0]]);
    std::vector<double> acc(outW, 0.0);
    for (int64_t j = 0; j < k; ++j) {
      DenseMap<Value, std::vector<float>> inner;
      inner[experts.getArgument(0)] = std::vector<float>(xr, xr + d);
      std::vector<std::vector<float>> outs;
      expert_ = order[j];
      LogicalResult ok = evalBlock(experts.getBody().front(), inner, outs);
      expert_ = -1;
      if (failed(ok))
        return failure();
      for (int64_t i = 0; i < outW; ++i)
        acc[i] += weight[j] / sum * double(outs.front()[i]);
    }
    for (int64_t i = 0; i < outW; ++i)
      y[r * outW + i] = static_cast<float>(acc[i]);
  }
  env[op.getResult()] = std::move(y);
  return success();
}

FailureOr<std::vector<std::vector<float>>>
ReferenceInterpreter::run(InstanceOp instance) {
  DenseMap<Value, std::vector<float>> env;
  std::vector<std::vector<float>> results;
  if (failed(evalBlock(instance.getBody().front(), env, results)))
    return failure();
  return results;
}

FailureOr<std::vector<std::vector<float>>>
ReferenceInterpreter::callModule(func::FuncOp fn,
                                 ArrayRef<std::vector<float>> arguments) {
  if (fn.getBody().empty() || fn.getNumArguments() != arguments.size())
    return fn.emitOpError() << "takes " << fn.getNumArguments()
                            << " arguments and a body to be called";
  DenseMap<Value, std::vector<float>> env;
  for (auto [arg, v] : llvm::zip(fn.getArguments(), arguments))
    env[arg] = v;
  std::vector<std::vector<float>> results;
  if (failed(evalBlock(fn.getBody().front(), env, results)))
    return failure();
  return results;
}
