//===- Optimizer.cpp - SGD and Adam steps on a parameter store ------------===//
#include "dynb/Runtime/Optimizer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

using namespace dynb::rt;

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
    for (size_t i = 0; i < g->data.size(); ++i) {
      if (!std::isfinite(g->data[i]))
        return Status::error(fmt::format(
            "gradient '{}' holds {} at element {}; the step is refused", name,
            g->data[i], i));
      sumSquares += double(g->data[i]) * g->data[i];
    }
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
    for (size_t row = 0; row * rowWidth < n; ++row) {
      size_t begin = row * rowWidth, end = begin + rowWidth;
      if (options_.lazyRows) {
        bool touched = false;
        for (size_t i = begin; i < end && !touched; ++i)
          touched = g->data[i] != 0;
        if (!touched)
          continue;
      }
      for (size_t i = begin; i < end; ++i) {
        float grad = g->data[i] * scale;
        if (adam) {
          float m = st.first[i] =
              options_.beta1 * st.first[i] + (1 - options_.beta1) * grad;
          float v = st.second[i] = options_.beta2 * st.second[i] +
                                   (1 - options_.beta2) * grad * grad;
          p->data[i] -= stepSize * m /
                        (std::sqrt(v) / rootCorrection2 + options_.epsilon);
        } else if (options_.momentum != 0) {
          float v = st.first[i] = options_.momentum * st.first[i] + grad;
          p->data[i] -= lr * v;
        } else {
          p->data[i] -= lr * grad;
        }
      }
    }
  }
  return Status::ok();
}
