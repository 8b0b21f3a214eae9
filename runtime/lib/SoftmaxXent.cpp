//===- SoftmaxXent.cpp - Runs softmax cross-entropy steps -----------------===//
#include "StepRunners.h"

#include <algorithm>
#include <cmath>

using namespace dynb::rt;

double dynb::rt::softmaxXentRow(const float *logits, int64_t classes,
                                int64_t label) {
  // Shifting by the largest logit keeps exp() finite for any input.
  double top = *std::max_element(logits, logits + classes);
  double sum = 0;
  for (int64_t c = 0; c < classes; ++c)
    sum += std::exp(double(logits[c]) - top);
  return top + std::log(sum) - double(logits[label]);
}

void dynb::rt::runSoftmaxXent(const SoftmaxXentStep &step,
                              const ResolvedBuffers &resolved) {
  if (step.gradient) {
    int64_t classes = step.logits.cols;
    for (int64_t r = 0; r < step.logits.rows; ++r) {
      const float *row =
          resolved.at(step.logits.buffer, step.logits.row + r, step.logits.col);
      float *out =
          resolved.at(step.loss.buffer, step.loss.row + r, step.loss.col);
      double top = *std::max_element(row, row + classes);
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c)
        sum += std::exp(double(row[c]) - top);
      int64_t label = step.labels[static_cast<size_t>(r)];
      for (int64_t c = 0; c < classes; ++c)
        out[c] = static_cast<float>(std::exp(double(row[c]) - top) / sum -
                                    (c == label ? 1.0 : 0.0));
    }
    return;
  }
  for (int64_t r = 0; r < step.logits.rows; ++r) {
    const float *row =
        resolved.at(step.logits.buffer, step.logits.row + r, step.logits.col);
    *resolved.at(step.loss.buffer, step.loss.row + r, step.loss.col) =
        static_cast<float>(softmaxXentRow(row, step.logits.cols,
                                          step.labels[static_cast<size_t>(r)]));
  }
}
