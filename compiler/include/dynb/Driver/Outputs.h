//===- Outputs.h - A run's outputs and their comparison with the reference ===//
//
// MLIR-free, so tools and tests that only look at numbers need not include
// the compiler's headers.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_OUTPUTS_H
#define DYNB_DRIVER_OUTPUTS_H

#include <cstdint>
#include <vector>

namespace dynb {

/// Outputs stacked one row per instance: [instances x width] per output.
struct StackedOutputs {
  std::vector<int64_t> widths;
  std::vector<std::vector<float>> values;
  /// The sum of the instances' loss nodes (dynb.softmax_xent), when the
  /// model has any.
  bool hasLoss = false;
  double loss = 0;
};

struct Comparison {
  double maxAbsError = 0, maxRelError = 0;
  int64_t worstInstance = -1;
  bool withinTolerance = true;
  /// |got - ref| of the losses (0 without losses); within tolerance as the
  /// outputs are.
  double lossAbsError = 0;
};

/// The outputs as one row per instance, the instance's outputs side by
/// side: [instances x width], width the sum of the outputs' widths (what
/// `dynbc run --output` writes).
std::vector<float> outputRows(const StackedOutputs &outputs, uint64_t instances,
                              int64_t &width);

/// |got - ref| <= atol + rtol * |ref| everywhere.
Comparison compareOutputs(const StackedOutputs &ref, const StackedOutputs &got,
                          double atol, double rtol);

/// Folds the comparison of a batch whose first instance is `firstInstance`
/// into `total`, the comparison of the batches before it.
void accumulateComparison(Comparison &total, const Comparison &batch,
                          int64_t firstInstance);

} // namespace dynb

#endif // DYNB_DRIVER_OUTPUTS_H
