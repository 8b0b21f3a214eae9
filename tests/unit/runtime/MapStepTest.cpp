//===- MapStepTest.cpp - Map steps through the executor vs. plain loops ---===//
#include "RuntimeTestUtils.h"

#include "dynb/Runtime/Executor.h"
#include "dynb/Runtime/ParameterStore.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

/// A plain C x H x W convolution with stride 1, the oracle.
std::vector<float> naiveConv(const std::vector<float> &x, int64_t n, int64_t c,
                             int64_t hw, const std::vector<float> &w,
                             const std::vector<float> &b, int64_t o, int64_t k,
                             int64_t pad, bool relu) {
  int64_t ohw = hw + 2 * pad - k + 1;
  std::vector<float> y(n * o * ohw * ohw);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t i = 0; i < ohw; ++i)
        for (int64_t j = 0; j < ohw; ++j) {
          double acc = b[oc];
          for (int64_t ic = 0; ic < c; ++ic)
            for (int64_t u = 0; u < k; ++u)
              for (int64_t v = 0; v < k; ++v) {
                int64_t yi = i + u - pad, xj = j + v - pad;
                if (yi < 0 || yi >= hw || xj < 0 || xj >= hw)
                  continue;
                acc += double(w[((oc * c + ic) * k + u) * k + v]) *
                       x[((r * c + ic) * hw + yi) * hw + xj];
              }
          float v = static_cast<float>(acc);
          y[((r * o + oc) * ohw + i) * ohw + j] = relu ? std::max(v, 0.0f) : v;
        }
  return y;
}

Step mapStep(MapStep::Op op, int64_t c, int64_t hw, std::vector<Region> in,
             Region out) {
  Step step{MapStep{}};
  step.map().op = op;
  step.map().channels = c;
  step.map().height = step.map().width = hw;
  step.map().inputs = std::move(in);
  step.map().out = out;
  return step;
}

/// Plain maps in `x` -> map layout -> conv -> plain, against naiveConv.
void checkConv(int64_t n, int64_t c, int64_t o, int64_t hw, int64_t k,
               int64_t pad, bool relu) {
  ParameterStore params;
  std::vector<float> w = randomValues(o * c * k * k, 1);
  std::vector<float> b = randomValues(o, 2);
  std::vector<float> x = randomValues(n * c * hw * hw, 3);
  ASSERT_FALSE(params.add("w", {o, c, k, k}, w));
  ASSERT_FALSE(params.add("b", {o}, b));
  ASSERT_FALSE(params.add("x", {n, c, hw, hw}, x));
  int64_t ohw = hw + 2 * pad - k + 1;
  Plan plan;
  BufferId px = plan.addParameterBuffer("x", n, c * hw * hw);
  BufferId in = plan.addArenaBuffer(n, c * hw * hw);
  BufferId out = plan.addArenaBuffer(n, o * ohw * ohw);
  BufferId plain = plan.addArenaBuffer(n, o * ohw * ohw);
  plan.steps.push_back(mapStep(MapStep::Op::ToMapLayout, c, hw,
                               {wholeBuffer(plan, px)}, wholeBuffer(plan, in)));
  Step conv = mapStep(MapStep::Op::Conv, c, hw, {wholeBuffer(plan, in)},
                      wholeBuffer(plan, out));
  conv.map().outChannels = o;
  conv.map().kernelH = conv.map().kernelW = k;
  conv.map().padding = pad;
  conv.map().relu = relu;
  conv.map().weight = plan.addParameterBuffer("w", o, c * k * k);
  conv.map().hasBias = true;
  conv.map().bias = plan.addParameterBuffer("b", 1, o);
  plan.steps.push_back(conv);
  plan.steps.push_back(mapStep(MapStep::Op::FromMapLayout, o, ohw,
                               {wholeBuffer(plan, out)},
                               wholeBuffer(plan, plain)));
  plan.outputs.push_back(wholeBuffer(plan, plain));
  planArena(plan);
  Executor executor(params);
  ASSERT_FALSE(executor.validate(plan)) << executor.validate(plan).message();
  for (int pass = 0; pass < 2; ++pass) { // the second reuses the primitives
    ASSERT_FALSE(executor.run(plan));
    std::vector<float> got;
    executor.copyOutput(plan, 0, got);
    std::vector<float> want = naiveConv(x, n, c, hw, w, b, o, k, pad, relu);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i]))
          << "element " << i;
  }
}

} // namespace

TEST(MapStep, ConvBlockedLayout) { checkConv(3, 8, 16, 6, 3, 1, true); }
TEST(MapStep, ConvChannelsLast) { checkConv(2, 3, 5, 5, 3, 1, false); }
TEST(MapStep, ConvOneByOneAcrossLayouts) {
  checkConv(4, 16, 12, 4, 1, 0, true);
}

TEST(MapStep, PoolAndConcatMatchPlainLoops) {
  // Two maps (8 and 4 channels: blocked and channels-last) concatenated to
  // 12 channels, then pooled 2 x 2 (5 x 5 floors to 2 x 2).
  const int64_t n = 3, hw = 5, ca = 8, cb = 4, c = ca + cb;
  ParameterStore params;
  std::vector<float> a = randomValues(n * ca * hw * hw, 4);
  std::vector<float> bv = randomValues(n * cb * hw * hw, 5);
  ASSERT_FALSE(params.add("a", {n, ca, hw, hw}, a));
  ASSERT_FALSE(params.add("b", {n, cb, hw, hw}, bv));
  Plan plan;
  BufferId pa = plan.addParameterBuffer("a", n, ca * hw * hw);
  BufferId pb = plan.addParameterBuffer("b", n, cb * hw * hw);
  BufferId ma = plan.addArenaBuffer(n, ca * hw * hw);
  BufferId mb = plan.addArenaBuffer(n, cb * hw * hw);
  BufferId cat = plan.addArenaBuffer(n, c * hw * hw);
  BufferId pool = plan.addArenaBuffer(n, c * 2 * 2);
  BufferId plain = plan.addArenaBuffer(n, c * 2 * 2);
  plan.steps.push_back(mapStep(MapStep::Op::ToMapLayout, ca, hw,
                               {wholeBuffer(plan, pa)}, wholeBuffer(plan, ma)));
  plan.steps.push_back(mapStep(MapStep::Op::ToMapLayout, cb, hw,
                               {wholeBuffer(plan, pb)}, wholeBuffer(plan, mb)));
  Step concat = mapStep(MapStep::Op::ChannelConcat, ca, hw,
                        {wholeBuffer(plan, ma), wholeBuffer(plan, mb)},
                        wholeBuffer(plan, cat));
  concat.map().inChannels = {ca, cb};
  plan.steps.push_back(concat);
  plan.steps.push_back(mapStep(MapStep::Op::MaxPool, c, hw,
                               {wholeBuffer(plan, cat)},
                               wholeBuffer(plan, pool)));
  plan.steps.push_back(mapStep(MapStep::Op::FromMapLayout, c, 2,
                               {wholeBuffer(plan, pool)},
                               wholeBuffer(plan, plain)));
  plan.outputs.push_back(wholeBuffer(plan, plain));
  planArena(plan);
  Executor executor(params);
  ASSERT_FALSE(executor.validate(plan)) << executor.validate(plan).message();
  ASSERT_FALSE(executor.run(plan));
  std::vector<float> got;
  executor.copyOutput(plan, 0, got);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          float m = -INFINITY;
          for (int64_t u = 0; u < 2; ++u)
            for (int64_t v = 0; v < 2; ++v) {
              int64_t y = 2 * i + u, x = 2 * j + v;
              float val = ch < ca ? a[((r * ca + ch) * hw + y) * hw + x]
                                  : bv[((r * cb + ch - ca) * hw + y) * hw + x];
              m = std::max(m, val);
            }
          EXPECT_EQ(got[((r * c + ch) * 2 + i) * 2 + j], m)
              << "row " << r << " channel " << ch << " at " << i << "," << j;
        }
}

TEST(MapStep, ValidationRefusesPartialRowsAndBadWeights) {
  ParameterStore params;
  ASSERT_FALSE(params.add("w", {4, 8, 3, 3}, randomValues(4 * 8 * 9, 1)));
  Plan plan;
  BufferId in = plan.addArenaBuffer(2, 8 * 16 + 1); // not whole map rows
  BufferId out = plan.addArenaBuffer(2, 4 * 16);
  Step conv = mapStep(MapStep::Op::Conv, 8, 4, {Region{in, 0, 2, 0, 8 * 16}},
                      wholeBuffer(plan, out));
  conv.map().outChannels = 4;
  conv.map().kernelH = conv.map().kernelW = 3;
  conv.map().padding = 1;
  conv.map().weight = plan.addParameterBuffer("w", 4, 8 * 9);
  plan.steps.push_back(conv);
  planArena(plan);
  Executor executor(params);
  Status s = executor.validate(plan);
  ASSERT_TRUE(s);
  EXPECT_NE(s.message().find("must span whole rows"), std::string::npos)
      << s.message();

  Plan plan2;
  BufferId in2 = plan2.addArenaBuffer(2, 8 * 16);
  BufferId out2 = plan2.addArenaBuffer(2, 5 * 16);
  Step conv2 = mapStep(MapStep::Op::Conv, 8, 4, {wholeBuffer(plan2, in2)},
                       wholeBuffer(plan2, out2));
  conv2.map().outChannels = 5; // the weight has 4
  conv2.map().kernelH = conv2.map().kernelW = 3;
  conv2.map().padding = 1;
  conv2.map().weight = plan2.addParameterBuffer("w", 4, 8 * 9);
  plan2.steps.push_back(conv2);
  planArena(plan2);
  s = executor.validate(plan2);
  ASSERT_TRUE(s);
  EXPECT_NE(s.message().find("weight buffer"), std::string::npos)
      << s.message();
}
