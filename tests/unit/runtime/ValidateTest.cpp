//===- ValidateTest.cpp - Executor::validate() rejects inconsistent plans -===//
#include "RuntimeTestUtils.h"
#include "dynb/Runtime/Executor.h"

#include <gtest/gtest.h>

using namespace dynb::rt;
using namespace dynb::rt::test;

namespace {

void noopKernel(void **) {}

/// A valid plan: embedding gather, a linear layer and a kernel, which each
/// test then breaks in one place.
struct ValidPlan {
  ParameterStore params;
  Plan plan;
  BufferId emb, weight, bias, x, y;

  ValidPlan() {
    params.addSeeded("emb", {10, 8}, 1);
    params.addSeeded("w", {6, 8}, 2);
    params.addSeeded("b", {6}, 3);
    emb = plan.addParameterBuffer("emb", 10, 8);
    weight = plan.addParameterBuffer("w", 6, 8);
    bias = plan.addParameterBuffer("b", 1, 6);
    x = plan.addArenaBuffer(3, 8);
    y = plan.addArenaBuffer(3, 6);
    plan.steps.push_back(
        gatherStep(wholeBuffer(plan, x), 0, {{emb, 1}, {emb, 4}, {emb, 9}}));
    plan.steps.push_back(
        gemmStep(wholeBuffer(plan, x), weight, bias, wholeBuffer(plan, y)));
    plan.steps.push_back(
        kernelStep(noopKernel, "tanh_0", 3, {wholeBuffer(plan, y)}));
    plan.outputs.push_back(wholeBuffer(plan, y));
    planArena(plan);
  }

  std::string error() {
    Executor executor(params);
    Status status = executor.validate(plan);
    return status.isOk() ? std::string("<ok>") : status.message();
  }
};

#define EXPECT_MENTIONS(message, text)                                         \
  EXPECT_NE((message).find(text), std::string::npos)                           \
      << "message: " << (message) << "\nexpected to mention: " << (text)

} // namespace

TEST(ValidateTest, AcceptsAndRunsTheValidPlan) {
  ValidPlan vp;
  EXPECT_EQ(vp.error(), "<ok>");
  Executor executor(vp.params);
  Status status = executor.run(vp.plan);
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST(ValidateTest, RejectsUnknownParameter) {
  ValidPlan vp;
  vp.plan.buffers[vp.weight].paramName = "w_missing";
  std::string message = vp.error();
  EXPECT_MENTIONS(message, "unknown parameter 'w_missing'");
  EXPECT_MENTIONS(message, "buffer 1");
  // run() refuses it too rather than reading through a null pointer.
  Executor executor(vp.params);
  Status status = executor.run(vp.plan);
  EXPECT_FALSE(status.isOk());
  EXPECT_MENTIONS(status.message(), "w_missing");
}

TEST(ValidateTest, RejectsWrongParameterShape) {
  ValidPlan vp;
  vp.plan.buffers[vp.weight].rows = 8;
  vp.plan.buffers[vp.weight].cols = 6; // transposed: same element count
  std::string message = vp.error();
  EXPECT_MENTIONS(message, "parameter 'w' has shape [6, 8], not [8 x 6]");

  ValidPlan vp1d;
  vp1d.plan.buffers[vp1d.bias].rows = 6;
  vp1d.plan.buffers[vp1d.bias].cols = 1; // a 1-D parameter is one row
  EXPECT_MENTIONS(vp1d.error(), "parameter 'b' has shape [6], not [6 x 1]");
}

TEST(ValidateTest, RejectsOutOfBoundsRegions) {
  ValidPlan kernelArg;
  kernelArg.plan.steps[2].kernel().args[0].col = 1; // cols [1, 7) of 6
  std::string message = kernelArg.error();
  EXPECT_MENTIONS(message, "step 2 (kernel 'tanh_0')");
  EXPECT_MENTIONS(message, "arg 0 rows [0, 3) cols [1, 7) is outside buffer 4");

  ValidPlan gatherSource;
  gatherSource.plan.steps[0].gather().sources[1].row = 10;
  message = gatherSource.error();
  EXPECT_MENTIONS(message, "step 0 (gather)");
  EXPECT_MENTIONS(message, "source 1 reads row 10");

  ValidPlan gatherCount;
  gatherCount.plan.steps[0].gather().sources.pop_back();
  EXPECT_MENTIONS(gatherCount.error(), "2 sources for 3 dst rows");

  ValidPlan output;
  output.plan.outputs[0].rows = 4;
  EXPECT_MENTIONS(output.error(), "output 0: region rows [0, 4)");

  ValidPlan badId;
  badId.plan.steps[1].gemm().c.buffer = 99;
  EXPECT_MENTIONS(badId.error(), "step 1 (gemm): c names buffer 99");
}

TEST(ValidateTest, RejectsGemmShapeMismatch) {
  ValidPlan innerDim;
  innerDim.plan.steps[1].gemm().a.cols = 7;
  EXPECT_MENTIONS(innerDim.error(),
                  "step 1 (gemm): a has 7 cols but weight 1 is [6 x 8]");

  ValidPlan outerDim;
  outerDim.plan.steps[1].gemm().c.cols = 5;
  EXPECT_MENTIONS(outerDim.error(),
                  "step 1 (gemm): c has 5 cols but weight 1 is [6 x 8]");

  ValidPlan rows;
  rows.plan.steps[1].gemm().c.rows = 2;
  EXPECT_MENTIONS(rows.error(), "step 1 (gemm): a has 3 rows but c has 2");

  ValidPlan bias;
  bias.plan.steps[1].gemm().bias = bias.x;
  EXPECT_MENTIONS(bias.error(),
                  "step 1 (gemm): bias buffer 3 has 24 elements, not 6");
}

// A weight read as stored ([6 x 8] read as such: a [3 x 6] a, a [3 x 8] c)
// takes the other shape rule, and no bias.
TEST(ValidateTest, ChecksGemmsWithTheWeightAsStored) {
  ValidPlan stored;
  GemmStep &g = stored.plan.steps[1].gemm();
  g.weightAsStored = true;
  g.hasBias = false;
  EXPECT_MENTIONS(stored.error(), "step 1 (gemm): a has 8 cols and c 6, but "
                                  "weight 1 read as stored is [6 x 8]");
  ValidPlan withBias;
  withBias.plan.steps[1].gemm().weightAsStored = true;
  EXPECT_MENTIONS(withBias.error(),
                  "step 1 (gemm): a weight read as stored takes no bias");
}

TEST(ValidateTest, RejectsWritesToParametersAndAliasing) {
  ValidPlan gemmIntoParam;
  gemmIntoParam.plan.steps[1].gemm().c = Region{gemmIntoParam.emb, 0, 3, 0, 6};
  EXPECT_MENTIONS(gemmIntoParam.error(),
                  "step 1 (gemm): c writes parameter buffer 0 ('emb')");

  ValidPlan aliasing;
  aliasing.plan.buffers[aliasing.x].cols = 8;
  aliasing.plan.steps[1].gemm().c = Region{aliasing.x, 0, 3, 2, 6};
  EXPECT_MENTIONS(aliasing.error(), "step 1 (gemm): a and c overlap");
}

TEST(ValidateTest, RejectsKernelRowMismatchAndMissingFunction) {
  ValidPlan rows;
  rows.plan.steps[2].kernel().rows = 2;
  EXPECT_MENTIONS(rows.error(),
                  "step 2 (kernel 'tanh_0'): arg 0 has 3 rows, the step 2");

  ValidPlan noFn;
  noFn.plan.steps[2].kernel().fn = nullptr;
  EXPECT_MENTIONS(noFn.error(), "step 2 (kernel 'tanh_0'): no kernel function");
}

TEST(ValidateTest, RejectsWrongVersionAndRunRejectsUnplannedArena) {
  ValidPlan version;
  version.plan.version = kPlanFormatVersion + 1;
  EXPECT_MENTIONS(version.error(), "plan format version");

  ValidPlan unplanned;
  unplanned.plan.buffers[unplanned.y].arenaOffset = -1;
  Executor executor(unplanned.params);
  Status status = executor.run(unplanned.plan);
  EXPECT_FALSE(status.isOk());
  EXPECT_MENTIONS(status.message(), "was planArena() called?");
}

// Host buffers (a builder's values from earlier runs) are read in place and
// never written.
TEST(ValidateTest, HostBuffersAreReadOnlyAndNeedData) {
  std::vector<float> carried(4 * 8);
  for (size_t i = 0; i < carried.size(); ++i)
    carried[i] = float(i);
  ValidPlan fromHost;
  BufferId host = fromHost.plan.addHostBuffer(carried.data(), 4, 8);
  fromHost.plan.steps[0] = gatherStep(wholeBuffer(fromHost.plan, fromHost.x), 0,
                                      {{host, 3}, {host, 0}, {host, 2}});
  planArena(fromHost.plan);
  EXPECT_EQ(fromHost.error(), "<ok>");
  Executor executor(fromHost.params);
  ASSERT_TRUE(executor.run(fromHost.plan).isOk());
  const float *row = executor.rowPointer(fromHost.plan, fromHost.x, 1);
  EXPECT_EQ(row[0], 0.0f);
  EXPECT_EQ(row[7], 7.0f);
  EXPECT_EQ(executor.rowPointer(fromHost.plan, fromHost.x, 0)[0], 24.0f);

  ValidPlan intoHost;
  BufferId target = intoHost.plan.addHostBuffer(carried.data(), 4, 8);
  intoHost.plan.steps[1].gemm().c = Region{target, 0, 3, 0, 6};
  planArena(intoHost.plan);
  EXPECT_MENTIONS(intoHost.error(), "c writes host buffer 5");

  ValidPlan noData;
  noData.plan.addHostBuffer(nullptr, 4, 8);
  planArena(noData.plan);
  EXPECT_MENTIONS(noData.error(), "buffer 5: host buffer without data");
}
