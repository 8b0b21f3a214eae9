//===- ExpandMath.cpp - tanh and exp as polynomials (dynb-expand-math) ----===//
#include "dynb/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace dynb {
#define GEN_PASS_DEF_EXPANDMATH
#include "dynb/Transforms/Passes.h.inc"
} // namespace dynb

using namespace mlir;

namespace {

struct ExpandMathPass : public dynb::impl::ExpandMathBase<ExpandMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
