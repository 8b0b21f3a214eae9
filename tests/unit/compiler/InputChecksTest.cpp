//===- InputChecksTest.cpp - Duplicate JSON keys and non-finite values ----===//
#include "dynb/Driver/FiniteCheck.h"
#include "dynb/Import/DuplicateKeys.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace dynb;

namespace {

TEST(DuplicateKeys, DistinctObjectsMayShareKeys) {
  EXPECT_FALSE(findDuplicateKey(R"({"a": {"x": 1}, "b": {"x": 2}})"));
  EXPECT_FALSE(findDuplicateKey(R"([{"op": 1, "in": [1]}, {"op": 2}])"));
  // JSON Lines: every line is an object of its own.
  EXPECT_FALSE(findDuplicateKey("{\"op\": 1}\n{\"op\": 2}\n"));
  // Values that look like keys are not keys.
  EXPECT_FALSE(findDuplicateKey(R"({"a": "a", "b": ["a", "a"]})"));
}

TEST(DuplicateKeys, FindsTheKeyTheLineAndTheDepth) {
  auto d = findDuplicateKey("{\"a\": 1,\n \"n\": {\"x\": 1,\n \"x\": 2}}");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "x");
  EXPECT_EQ(d->line, 3u);
  EXPECT_EQ(d->depth, 2u);
  d = findDuplicateKey(R"({"E": {}, "W": {}, "E": {}})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "E");
  EXPECT_EQ(d->depth, 1u);
}

TEST(DuplicateKeys, EscapesAreDecodedAndQuotesInStringsSkipped) {
  auto d = findDuplicateKey(R"({"op": 1, "\u006fp": 2})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "op");
  EXPECT_FALSE(findDuplicateKey(R"({"a\"b": 1, "a": {"b": "}{"}})"));
}

TEST(DuplicateKeys, BrokenTextEndsTheScanWithoutAFinding) {
  EXPECT_FALSE(findDuplicateKey(R"({"a": "unterminated)"));
  EXPECT_FALSE(findDuplicateKey("}}}]]"));
  EXPECT_FALSE(findDuplicateKey(""));
}

TEST(FiniteCheck, ParametersNameTheTensorAndElement) {
  rt::ParameterStore store;
  ASSERT_TRUE(store.add("A", {2, 3}, {0, 1, 2, 3, 4, 5}).isOk());
  EXPECT_FALSE(llvm::errorToBool(checkFiniteParams(store, "f.safetensors")));
  float inf = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(store.add("B", {2, 3}, {0, 1, NAN, 3, -inf, 5}).isOk());
  llvm::Error e = checkFiniteParams(store, "f.safetensors");
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(llvm::toString(std::move(e)),
            "f.safetensors: parameter 'B' holds NaN at [0, 2] (and 1 more "
            "non-finite values); --check-finite refuses parameters that are "
            "not finite");
}

TEST(FiniteCheck, OutputsNameTheInstanceOutputAndColumn) {
  StackedOutputs out;
  out.widths = {2, 3};
  out.values = {{0, 1, 2, 3}, {0, 1, 2, 3, 4, 5}};
  EXPECT_FALSE(llvm::errorToBool(checkFiniteOutputs(out, "agenda")));
  out.values[1][4] = std::numeric_limits<float>::infinity();
  llvm::Error e = checkFiniteOutputs(out, "agenda");
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(llvm::toString(std::move(e)),
            "agenda: instance 1, output 1 is +Inf at column 1; "
            "--check-finite refuses outputs that are not finite");
}

} // namespace
