//===- Optimizer.cpp - SGD and Adam steps on a parameter store ------------===//
#include "dynb/Runtime/Optimizer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

using namespace dynb::rt;

/// Elements of a tensor above which its update is spread over the threads.
static constexpr size_t kParallelMinElements = 1 << 16;

namespace {

// One row's update each, on restrict pointers and local constants so that
// GCC vectorises them (with -fno-math-errno for the sqrt: runtime/
// CMakeLists.txt); Adam's pass over an SST embedding table is most of an
// update (`dynbc train --report`, update_seconds).
void adamRow(float *__restrict p, float *__restrict m1, float *__restrict m2,
             const float *__restrict g, size_t n, float scale, float b1,
             float b2, float stepSize, float rootCorrection2, float eps) {
  const float c1 = 1 - b1, c2 = 1 - b2;
  for (size_t i = 0; i < n; ++i) {
    float gi = g[i] * scale;
    float m = m1[i] = b1 * m1[i] + c1 * gi;
    float v = m2[i] = b2 * m2[i] + c2 * gi * gi;
    p[i] -= stepSize * m / (std::sqrt(v) / rootCorrection2 + eps);
  }
}

void momentumRow(float *__restrict p, float *__restrict v,
                 const float *__restrict g, size_t n, float scale, float mu,
                 float lr) {
  for (size_t i = 0; i < n; ++i) {
    float vi = v[i] = mu * v[i] + g[i] * scale;
    p[i] -= lr * vi;
  }
}

/// The sum of squares in double, in eight independent lanes so that the
/// pass is not one long chain of dependent additions (the same order every
/// time, so the same bits).
double sumOfSquares(const float *__restrict g, size_t n) {
  constexpr size_t kLanes = 8;
  double lane[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l)
      lane[l] += double(g[i + l]) * g[i + l];
  double sum = 0;
  for (; i < n; ++i)
    sum += double(g[i]) * g[i];
  for (double v : lane)
    sum += v;
  return sum;
}

void sgdRow(float *__restrict p, const float *__restrict g, size_t n,
            float scale, float lr) {
  for (size_t i = 0; i < n; ++i)
    p[i] -= lr * (g[i] * scale);
}

} // namespace

Optimizer::Optimizer(OptimizerOptions options) : options_(options) {}

Status Optimizer::step(ParameterStore &params,
                       const ParameterStore &gradients) {
  // Checked before anything changes, so a refused step leaves the
  // parameters and the optimizer's state as they were.
  double sumSquares = 0;
  for (const std::string &name : gradients.names()) {
    const ParamTensor *g = gradients.find(name);
    const ParamTensor *p = params.find(name);
    if (!p)
      return Status::error(
          fmt::format("gradient '{}' names no parameter", name));
    if (p->shape != g->shape)
      return Status::error(fmt::format(
          "gradient '{}' has shape [{}] but the parameter has [{}]", name,
          fmt::join(g->shape, ", "), fmt::join(p->shape, ", ")));
    // A NaN or Inf makes the sum non-finite (finite floats' squares cannot
    // overflow a double's sum); only then are the elements searched.
    double sum = sumOfSquares(g->data.data(), g->data.size());
    if (!std::isfinite(sum))
      for (size_t i = 0; i < g->data.size(); ++i)
        if (!std::isfinite(g->data[i]))
          return Status::error(fmt::format(
              "gradient '{}' holds {} at element {}; the step is refused", name,
              g->data[i], i));
    sumSquares += sum;
  }
  lastNorm_ = std::sqrt(sumSquares);
  float scale = 1;
  if (options_.clipNorm > 0 && lastNorm_ > options_.clipNorm)
    scale = float(options_.clipNorm / lastNorm_);

  ++steps_;
  const float lr = options_.effectiveLearningRate();
  const bool adam = options_.kind == OptimizerOptions::Kind::Adam;
  // Bias corrections in double: beta^t underflows float's precision long
  // before it matters, and the correction is one number a step.
  const double correction1 =
      1 - std::pow(double(options_.beta1), double(steps_));
  const double correction2 =
      1 - std::pow(double(options_.beta2), double(steps_));
  const float stepSize = float(lr / correction1);
  const float rootCorrection2 = float(std::sqrt(correction2));

  for (const std::string &name : gradients.names()) {
    const ParamTensor *g = gradients.find(name);
    ParamTensor *p = params.findMutable(name);
    State &st = state_[name];
    size_t n = g->data.size();
    if (st.first.size() != n) {
      st.first.assign(n, 0);
      if (adam)
        st.second.assign(n, 0);
    }
    size_t rowWidth = g->shape.empty() ? 1 : size_t(g->shape.back());
    int64_t rows = int64_t(n / rowWidth);
    // Every element's update is its own, so rows may go to any thread: the
    // result is the same bits on any thread count. Small tensors stay on
    // the calling thread, where waking the team would cost more.
    const float *grad = g->data.data();
    float *param = p->data.data();
    float *first = st.first.data();
    float *second = adam ? st.second.data() : nullptr;
    const OptimizerOptions &o = options_;
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
    for (int64_t row = 0; row < rows; ++row) {
      size_t begin = size_t(row) * rowWidth, end = begin + rowWidth;
      if (o.lazyRows) {
        bool touched = false;
        for (size_t i = begin; i < end && !touched; ++i)
          touched = grad[i] != 0;
        if (!touched)
          continue;
      }
      size_t width = end - begin;
      if (adam)
        adamRow(param + begin, first + begin, second + begin, grad + begin,
                width, scale, o.beta1, o.beta2, stepSize, rootCorrection2,
                o.epsilon);
      else if (o.momentum != 0)
        momentumRow(param + begin, first + begin, grad + begin, width, scale,
                    o.momentum, lr);
      else
        sgdRow(param + begin, grad + begin, width, scale, lr);
    }
  }
  return Status::ok();
}

void Optimizer::saveState(ParameterStore &out) const {
  std::string prefix = kStatePrefix;
  // Floats hold step counts exactly up to 2^24: far beyond any run's.
  (void)out.add(prefix + "steps", {1}, {float(steps_)});
  (void)out.add(prefix + "kind", {1},
                {options_.kind == OptimizerOptions::Kind::Adam ? 1.0f : 0.0f});
  for (const auto &[name, st] : state_) {
    int64_t n = int64_t(st.first.size());
    (void)out.add(prefix + "first/" + name, {n}, st.first);
    if (!st.second.empty())
      (void)out.add(prefix + "second/" + name, {n}, st.second);
  }
}

Status Optimizer::loadState(ParameterStore &in) {
  std::string prefix = kStatePrefix;
  const ParamTensor *steps = in.find(prefix + "steps");
  const ParamTensor *kind = in.find(prefix + "kind");
  if (!steps || !kind || steps->data.size() != 1 || kind->data.size() != 1)
    return Status::error("it holds no optimizer state (a checkpoint that "
                         "dynbc train wrote does)");
  bool adam = options_.kind == OptimizerOptions::Kind::Adam;
  if ((kind->data[0] == 1) != adam)
    return Status::error(fmt::format("its optimizer state is {}'s, not {}'s",
                                     adam ? "SGD" : "Adam",
                                     adam ? "Adam" : "SGD"));
  std::map<std::string, State, std::less<>> state;
  std::vector<std::string> taken = {prefix + "steps", prefix + "kind"};
  for (const std::string &name : in.names()) {
    if (name.rfind(prefix + "first/", 0) != 0)
      continue;
    std::string param = name.substr(prefix.size() + 6);
    State &st = state[param];
    st.first = in.find(name)->data;
    taken.push_back(name);
    if (adam) {
      const ParamTensor *second = in.find(prefix + "second/" + param);
      if (!second || second->data.size() != st.first.size())
        return Status::error(fmt::format(
            "its Adam state for '{}' has no second moment of {} elements",
            param, st.first.size()));
      st.second = second->data;
      taken.push_back(prefix + "second/" + param);
    }
  }
  for (const std::string &name : in.names())
    if (name.rfind(prefix, 0) == 0 &&
        std::find(taken.begin(), taken.end(), name) == taken.end())
      return Status::error(fmt::format(
          "its optimizer state holds an unknown tensor '{}'", name));
  steps_ = int64_t(steps->data[0]);
  state_ = std::move(state);
  for (const std::string &name : taken)
    in.remove(name);
  return Status::ok();
}
