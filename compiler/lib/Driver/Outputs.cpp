//===- Outputs.cpp - Comparing a run's outputs with the reference ---------===//
#include "dynb/Driver/Outputs.h"

#include <algorithm>
#include <cmath>

using namespace dynb;

Comparison dynb::compareOutputs(const StackedOutputs &ref,
                                const StackedOutputs &got, double atol,
                                double rtol) {
  Comparison c;
  if (ref.widths != got.widths || ref.values.size() != got.values.size()) {
    c.withinTolerance = false;
    c.maxAbsError = INFINITY;
    return c;
  }
  if (ref.hasLoss != got.hasLoss) {
    c.withinTolerance = false;
    c.lossAbsError = INFINITY;
  } else if (ref.hasLoss) {
    c.lossAbsError = std::fabs(ref.loss - got.loss);
    if (!(c.lossAbsError <= atol + rtol * std::fabs(ref.loss)))
      c.withinTolerance = false;
  }
  for (size_t p = 0; p < ref.values.size(); ++p) {
    const std::vector<float> &r = ref.values[p], &g = got.values[p];
    if (r.size() != g.size()) {
      c.withinTolerance = false;
      c.maxAbsError = INFINITY;
      return c;
    }
    for (size_t i = 0; i < r.size(); ++i) {
      double diff = std::fabs(double(r[i]) - double(g[i]));
      if (std::isnan(g[i]) != std::isnan(r[i]))
        diff = INFINITY;
      double rel = diff / std::max(std::fabs(double(r[i])), 1e-30);
      bool bad = !(diff <= atol + rtol * std::fabs(double(r[i])));
      if (diff > c.maxAbsError || (bad && c.withinTolerance)) {
        c.worstInstance = static_cast<int64_t>(i / ref.widths[p]);
      }
      c.maxAbsError = std::max(c.maxAbsError, diff);
      if (std::fabs(double(r[i])) > 1e-3)
        c.maxRelError = std::max(c.maxRelError, rel);
      if (bad)
        c.withinTolerance = false;
    }
  }
  return c;
}

void dynb::accumulateComparison(Comparison &total, const Comparison &batch,
                                int64_t firstInstance) {
  // The worst instance is the first out of tolerance, else the largest
  // absolute error, as compareOutputs picks it within one batch.
  bool firstFailure = total.withinTolerance && !batch.withinTolerance;
  if (firstFailure || batch.maxAbsError > total.maxAbsError)
    total.worstInstance =
        batch.worstInstance < 0 ? -1 : firstInstance + batch.worstInstance;
  total.maxAbsError = std::max(total.maxAbsError, batch.maxAbsError);
  total.maxRelError = std::max(total.maxRelError, batch.maxRelError);
  total.lossAbsError = std::max(total.lossAbsError, batch.lossAbsError);
  total.withinTolerance &= batch.withinTolerance;
}

std::vector<float> dynb::outputRows(const StackedOutputs &outputs,
                                    uint64_t instances, int64_t &width) {
  width = 0;
  for (int64_t w : outputs.widths)
    width += w;
  std::vector<float> rows;
  rows.reserve(instances * width);
  for (uint64_t i = 0; i < instances; ++i)
    for (size_t p = 0; p < outputs.widths.size(); ++p) {
      int64_t w = outputs.widths[p];
      const float *src = outputs.values[p].data() + i * w;
      rows.insert(rows.end(), src, src + w);
    }
  return rows;
}
