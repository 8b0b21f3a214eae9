//===- ReferenceGradient.cpp - Reverse mode over a tape, in double --------===//
#include "dynb/Reference/ReferenceGradient.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <cassert>
#include <cmath>

using namespace mlir;
using namespace dynb;

/// Every value an instance computes, in evaluation order, with the op that
/// made it: module calls are inlined, so a call's results are the slots its
/// body returned and its body's ops are entries like the instance's own.
struct ReferenceGradient::Tape {
  struct Entry {
    Operation *op;
    SmallVector<unsigned, 4> in;
    unsigned out;
  };
  std::vector<std::vector<double>> values;
  std::vector<Entry> entries;
  /// The slots of the loss nodes' results: each is seeded with 1.
  std::vector<unsigned> losses;
  /// Slots seeded with an adjoint of their own (moduleAdjoint's results).
  std::vector<std::pair<unsigned, std::vector<double>>> seeds;

  /// A value no op of the tape made: an argument of the module run alone.
  unsigned input(std::vector<double> value) {
    values.push_back(std::move(value));
    return values.size() - 1;
  }

  unsigned add(Operation *op, SmallVector<unsigned, 4> in,
               std::vector<double> value) {
    values.push_back(std::move(value));
    unsigned out = values.size() - 1;
    entries.push_back({op, std::move(in), out});
    return out;
  }
};

ReferenceGradient::ReferenceGradient(ModuleOp model,
                                     const rt::ParameterStore &params)
    : model(model) {
  for (const std::string &name : params.names()) {
    const rt::ParamTensor *t = params.find(name);
    Tensor &d = params_[name];
    d.shape = t->shape;
    d.data.assign(t->data.begin(), t->data.end());
    gradients_[name].assign(d.data.size(), 0.0);
  }
}

const std::vector<int64_t> &
ReferenceGradient::shapeOf(const std::string &param) const {
  auto it = params_.find(param);
  assert(it != params_.end() && "shapeOf a parameter the store lacks");
  return it->second.shape;
}

void ReferenceGradient::setParams(const rt::ParameterStore &params) {
  for (auto &[name, d] : params_) {
    const rt::ParamTensor *t = params.find(name);
    assert(t && t->shape == d.shape && "setParams with another model's store");
    d.data.assign(t->data.begin(), t->data.end());
  }
}

rt::ParameterStore ReferenceGradient::gradientsAsStore() const {
  rt::ParameterStore store;
  for (const auto &[name, g] : gradients_)
    (void)store.add(name, shapeOf(name),
                    std::vector<float>(g.begin(), g.end()));
  return store;
}

void ReferenceGradient::clearGradients() {
  for (auto &[name, g] : gradients_)
    std::fill(g.begin(), g.end(), 0.0);
}

void ReferenceGradient::nudge(StringRef param, int64_t index, double delta) {
  auto it = params_.find(param);
  assert(it != params_.end() && index >= 0 &&
         index < static_cast<int64_t>(it->second.data.size()) &&
         "nudge outside the parameter");
  it->second.data[index] += delta;
}

FailureOr<const ReferenceGradient::Tensor *>
ReferenceGradient::param(Operation *user, StringRef name) const {
  auto it = params_.find(name);
  if (it == params_.end())
    return user->emitOpError() << "parameter '" << name << "' has no values";
  return &it->second;
}

static int64_t lastDim(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape().back();
}

LogicalResult ReferenceGradient::record(Block &block,
                                        DenseMap<Value, unsigned> &env,
                                        SmallVectorImpl<unsigned> &results,
                                        Tape &tape) {
  for (Operation &opRef : block) {
    Operation *op = &opRef;
    auto slot = [&](unsigned i) { return env.lookup(op->getOperand(i)); };
    auto value = [&](unsigned i) -> const std::vector<double> & {
      return tape.values[slot(i)];
    };
    auto define = [&](SmallVector<unsigned, 4> in, std::vector<double> y) {
      env[op->getResult(0)] = tape.add(op, std::move(in), std::move(y));
    };
    auto unary = [&](auto f) {
      std::vector<double> y(value(0));
      for (double &v : y)
        v = f(v);
      define({slot(0)}, std::move(y));
    };
    auto binary = [&](auto f) {
      const std::vector<double> &a = value(0), &b = value(1);
      std::vector<double> y(a.size());
      for (size_t i = 0; i < a.size(); ++i)
        y[i] = f(a[i], b[i]);
      define({slot(0), slot(1)}, std::move(y));
    };

    if (auto emb = dyn_cast<EmbeddingOp>(op)) {
      FailureOr<const Tensor *> t = param(op, emb.getTable());
      if (failed(t))
        return failure();
      int64_t cols = (*t)->data.size() / (*t)->shape.front();
      auto row = (*t)->data.begin() + emb.getIndexAttr().getInt() * cols;
      define({}, std::vector<double>(row, row + cols));
    } else if (auto lin = dyn_cast<LinearOp>(op)) {
      FailureOr<const Tensor *> w = param(op, lin.getWeight());
      if (failed(w))
        return failure();
      if ((*w)->shape.size() != 2)
        return op->emitOpError()
               << "reads stacked parameter '" << lin.getWeight()
               << "': reverse mode does not differentiate expert modules yet";
      const Tensor *bias = nullptr;
      if (auto b = lin.getBias()) {
        FailureOr<const Tensor *> bt = param(op, *b);
        if (failed(bt))
          return failure();
        bias = *bt;
      }
      int64_t n = (*w)->shape[0], k = (*w)->shape[1];
      const std::vector<double> &x = value(0);
      int64_t rows = x.size() / k;
      std::vector<double> y(rows * n);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i) {
          double acc = bias ? bias->data[i] : 0.0;
          for (int64_t j = 0; j < k; ++j)
            acc += (*w)->data[i * k + j] * x[r * k + j];
          y[r * n + i] = acc;
        }
      define({slot(0)}, std::move(y));
    } else if (isa<AddOp>(op)) {
      binary([](double a, double b) { return a + b; });
    } else if (isa<MulOp>(op)) {
      binary([](double a, double b) { return a * b; });
    } else if (isa<SigmoidOp>(op)) {
      unary([](double v) { return 1.0 / (1.0 + std::exp(-v)); });
    } else if (isa<TanhOp>(op)) {
      unary([](double v) { return std::tanh(v); });
    } else if (isa<ReluOp>(op)) {
      unary([](double v) { return v > 0.0 ? v : 0.0; });
    } else if (isa<NegOp>(op)) {
      unary([](double v) { return -v; });
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      int64_t outW = lastDim(concat.getResult());
      int64_t rows = value(0).size() / lastDim(concat.getInputs()[0]);
      std::vector<double> y(rows * outW);
      SmallVector<unsigned, 4> in;
      int64_t col = 0;
      for (auto [i, v] : llvm::enumerate(concat.getInputs())) {
        const std::vector<double> &x = value(i);
        int64_t w = lastDim(v);
        for (int64_t r = 0; r < rows; ++r)
          std::copy_n(x.data() + r * w, w, y.data() + r * outW + col);
        col += w;
        in.push_back(slot(i));
      }
      define(std::move(in), std::move(y));
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      int64_t inW = lastDim(slice.getInput());
      int64_t size = slice.getSizeAttr().getInt();
      int64_t off = slice.getOffsetAttr().getInt();
      const std::vector<double> &x = value(0);
      int64_t rows = x.size() / inW;
      std::vector<double> y(rows * size);
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(x.data() + r * inW + off, size, y.data() + r * size);
      define({slot(0)}, std::move(y));
    } else if (auto call = dyn_cast<CallOp>(op)) {
      auto callee = model.lookupSymbol<func::FuncOp>(call.getCallee());
      if (!callee || callee.getBody().empty())
        return op->emitOpError() << "calls a module without a body";
      DenseMap<Value, unsigned> inner;
      for (auto [arg, v] : llvm::zip(callee.getArguments(), call.getOperands()))
        inner[arg] = env.lookup(v);
      SmallVector<unsigned, 2> outs;
      if (failed(record(callee.getBody().front(), inner, outs, tape)))
        return failure();
      for (auto [r, s] : llvm::zip(call.getResults(), outs))
        env[r] = s;
    } else if (auto xent = dyn_cast<SoftmaxXentOp>(op)) {
      const std::vector<double> &z = value(0);
      double top = *std::max_element(z.begin(), z.end());
      double sum = 0;
      for (double v : z)
        sum += std::exp(v - top);
      int64_t label = xent.getLabelAttr().getInt();
      double loss = top + std::log(sum) - z[label];
      ++predictions_.total;
      if (std::max_element(z.begin(), z.end()) - z.begin() == label)
        ++predictions_.correct;
      define({slot(0)}, {loss});
      tape.losses.push_back(env.lookup(xent.getLoss()));
    } else if (isa<OutputOp, func::ReturnOp>(op)) {
      for (Value v : op->getOperands())
        results.push_back(env.lookup(v));
    } else {
      return op->emitOpError()
             << "is not supported by reverse mode yet (the reference "
                "gradient covers embedding, linear, the elementwise ops, "
                "concat, slice, module calls and softmax_xent)";
    }
  }
  return success();
}

FailureOr<double> ReferenceGradient::forward(InstanceOp instance, Tape &tape) {
  DenseMap<Value, unsigned> env;
  SmallVector<unsigned, 2> outputs;
  if (failed(record(instance.getBody().front(), env, outputs, tape)))
    return failure();
  double loss = 0;
  for (unsigned s : tape.losses)
    loss += tape.values[s].front();
  return loss;
}

FailureOr<std::vector<std::vector<double>>>
ReferenceGradient::moduleAdjoint(func::FuncOp fn,
                                 ArrayRef<std::vector<double>> arguments,
                                 ArrayRef<std::vector<double>> resultAdjoints) {
  if (fn.getBody().empty() || fn.getNumArguments() != arguments.size() ||
      fn.getNumResults() != resultAdjoints.size())
    return fn.emitOpError()
           << "takes " << fn.getNumArguments() << " arguments and "
           << fn.getNumResults() << " result adjoints";
  Tape tape;
  DenseMap<Value, unsigned> env;
  SmallVector<unsigned, 4> args;
  for (auto [arg, v] : llvm::zip(fn.getArguments(), arguments)) {
    args.push_back(tape.input(v));
    env[arg] = args.back();
  }
  SmallVector<unsigned, 2> results;
  if (failed(record(fn.getBody().front(), env, results, tape)))
    return failure();
  for (auto [slot, seed] : llvm::zip(results, resultAdjoints))
    tape.seeds.push_back({slot, seed});
  std::vector<std::vector<double>> adjoints;
  backward(tape, &adjoints);
  std::vector<std::vector<double>> out;
  for (auto [arg, slot] : llvm::zip(arguments, args))
    out.push_back(adjoints[slot].empty() ? std::vector<double>(arg.size(), 0.0)
                                         : adjoints[slot]);
  return out;
}

FailureOr<double> ReferenceGradient::loss(InstanceOp instance) {
  Tape tape;
  return forward(instance, tape);
}

FailureOr<double> ReferenceGradient::accumulate(InstanceOp instance) {
  Tape tape;
  FailureOr<double> loss = forward(instance, tape);
  if (succeeded(loss))
    backward(tape);
  return loss;
}

void ReferenceGradient::backward(Tape &tape,
                                 std::vector<std::vector<double>> *adjoints) {
  // An empty adjoint is one no loss depends on: its producer is skipped.
  std::vector<std::vector<double>> local;
  std::vector<std::vector<double>> &adj = adjoints ? *adjoints : local;
  adj.assign(tape.values.size(), {});
  auto adjointOf = [&](unsigned s) -> std::vector<double> & {
    if (adj[s].empty())
      adj[s].assign(tape.values[s].size(), 0.0);
    return adj[s];
  };
  for (unsigned s : tape.losses)
    adjointOf(s).front() += 1.0;
  for (const auto &[s, seed] : tape.seeds) {
    std::vector<double> &a = adjointOf(s);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] += seed[i];
  }

  for (const Tape::Entry &e : llvm::reverse(tape.entries)) {
    if (adj[e.out].empty())
      continue;
    const std::vector<double> &dy = adj[e.out];
    const std::vector<double> &y = tape.values[e.out];
    Operation *op = e.op;
    auto each = [&](unsigned input, auto f) {
      std::vector<double> &dx = adjointOf(input);
      for (size_t i = 0; i < dy.size(); ++i)
        dx[i] += f(i);
    };

    if (auto emb = dyn_cast<EmbeddingOp>(op)) {
      // Sparse: only the row the node read.
      std::vector<double> &g = gradients_[emb.getTable().str()];
      int64_t row = emb.getIndexAttr().getInt();
      for (size_t j = 0; j < dy.size(); ++j)
        g[row * dy.size() + j] += dy[j];
    } else if (auto lin = dyn_cast<LinearOp>(op)) {
      const Tensor &w = params_.find(lin.getWeight())->second;
      int64_t n = w.shape[0], k = w.shape[1];
      const std::vector<double> &x = tape.values[e.in[0]];
      int64_t rows = x.size() / k;
      std::vector<double> &gw = gradients_[lin.getWeight().str()];
      std::vector<double> *gb =
          lin.getBias() ? &gradients_[lin.getBias()->str()] : nullptr;
      std::vector<double> &dx = adjointOf(e.in[0]);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i) {
          double d = dy[r * n + i];
          if (gb)
            (*gb)[i] += d;
          for (int64_t j = 0; j < k; ++j) {
            gw[i * k + j] += d * x[r * k + j];
            dx[r * k + j] += d * w.data[i * k + j];
          }
        }
    } else if (isa<AddOp>(op)) {
      each(e.in[0], [&](size_t i) { return dy[i]; });
      each(e.in[1], [&](size_t i) { return dy[i]; });
    } else if (isa<MulOp>(op)) {
      const std::vector<double> &a = tape.values[e.in[0]];
      const std::vector<double> &b = tape.values[e.in[1]];
      each(e.in[0], [&](size_t i) { return dy[i] * b[i]; });
      each(e.in[1], [&](size_t i) { return dy[i] * a[i]; });
    } else if (isa<SigmoidOp>(op)) {
      each(e.in[0], [&](size_t i) { return dy[i] * y[i] * (1.0 - y[i]); });
    } else if (isa<TanhOp>(op)) {
      each(e.in[0], [&](size_t i) { return dy[i] * (1.0 - y[i] * y[i]); });
    } else if (isa<ReluOp>(op)) {
      const std::vector<double> &x = tape.values[e.in[0]];
      each(e.in[0], [&](size_t i) { return x[i] > 0.0 ? dy[i] : 0.0; });
    } else if (isa<NegOp>(op)) {
      each(e.in[0], [&](size_t i) { return -dy[i]; });
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      int64_t outW = lastDim(concat.getResult());
      int64_t rows = dy.size() / outW;
      int64_t col = 0;
      for (auto [i, v] : llvm::enumerate(concat.getInputs())) {
        int64_t w = lastDim(v);
        std::vector<double> &dx = adjointOf(e.in[i]);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < w; ++j)
            dx[r * w + j] += dy[r * outW + col + j];
        col += w;
      }
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      int64_t inW = lastDim(slice.getInput());
      int64_t size = slice.getSizeAttr().getInt();
      int64_t off = slice.getOffsetAttr().getInt();
      int64_t rows = dy.size() / size;
      std::vector<double> &dx = adjointOf(e.in[0]);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < size; ++j)
          dx[r * inW + off + j] += dy[r * size + j];
    } else if (auto xent = dyn_cast<SoftmaxXentOp>(op)) {
      // d/dz_c = softmax(z)_c - [c == label], times the loss's adjoint.
      const std::vector<double> &z = tape.values[e.in[0]];
      double top = *std::max_element(z.begin(), z.end());
      double sum = 0;
      for (double v : z)
        sum += std::exp(v - top);
      int64_t label = xent.getLabelAttr().getInt();
      std::vector<double> &dz = adjointOf(e.in[0]);
      for (size_t c = 0; c < z.size(); ++c)
        dz[c] += dy[0] * (std::exp(z[c] - top) / sum -
                          (static_cast<int64_t>(c) == label ? 1.0 : 0.0));
    }
  }
}
