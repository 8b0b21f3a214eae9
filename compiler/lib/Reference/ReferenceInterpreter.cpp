//===- ReferenceInterpreter.cpp - One instance at a time, plain loops -----===//
#include "dynb/Reference/ReferenceInterpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

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
      int64_t cols = (*t)->shape.back();
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
      int64_t n = (*w)->shape[0], k = (*w)->shape[1];
      const std::vector<float> &x = in(0);
      int64_t rows = x.size() / k;
      std::vector<float> y(rows * n);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i) {
          double acc = bias ? bias->data[i] : 0.0;
          const float *wr = (*w)->data.data() + i * k;
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

FailureOr<std::vector<std::vector<float>>>
ReferenceInterpreter::run(InstanceOp instance) {
  DenseMap<Value, std::vector<float>> env;
  std::vector<std::vector<float>> results;
  if (failed(evalBlock(instance.getBody().front(), env, results)))
    return failure();
  return results;
}
