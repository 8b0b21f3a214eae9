//===- EngineTestUtils.h - SST models and reference outputs for tests -----===//
#ifndef DYNB_TESTS_UNIT_ENGINE_ENGINETESTUTILS_H
#define DYNB_TESTS_UNIT_ENGINE_ENGINETESTUTILS_H

#include "../../../examples/embed/SstTreeLstm.h"
#include "dynb/Driver/Session.h"
#include "dynb/Engine/Engine.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <vector>

namespace dynb::test {

inline std::string tempPath(const std::string &name) {
  llvm::SmallString<128> path;
  llvm::sys::fs::createUniquePath("dynb-engine-%%%%%%-" + name, path,
                                  /*MakeAbsolute=*/true);
  return path.str().str();
}

inline std::string writeTemp(const std::string &name, const std::string &text) {
  std::string path = tempPath(name);
  std::ofstream(path) << text;
  return path;
}

inline std::string sstDev() {
  return DYNB_SOURCE_DIR "/examples/treelstm/data/sst/dev.txt";
}

/// The TreeLSTM model and instances for the first `limit` dev trees, as
/// sst2dynb writes them (the CLI's input).
inline std::string sstModel(int hdim, int limit, bool labels = false) {
  std::string out = tempPath(
      fmt::format("sst-h{}-n{}{}.jsonl", hdim, limit, labels ? "-labels" : ""));
  std::string cmd = fmt::format(
      "'{}/sst2dynb' '{}' --hdim {} --limit {}{} -o '{}'", DYNB_BIN_DIR,
      sstDev(), hdim, limit, labels ? " --labels" : "", out);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

/// The reference interpreter's outputs for the instances in `path`, one
/// vector per instance (its single output), parameters seeded by `seed`.
inline std::vector<std::vector<float>> referenceOutputs(const std::string &path,
                                                        uint64_t seed) {
  Session s;
  std::vector<std::vector<float>> out;
  if (failed(s.loadGraphs(path))) {
    ADD_FAILURE() << "cannot load " << path;
    return out;
  }
  if (llvm::Error e = s.seedParams(seed)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return out;
  }
  auto ref = s.runReference();
  if (failed(ref)) {
    ADD_FAILURE() << "reference failed";
    return out;
  }
  int64_t w = ref->widths[0];
  for (size_t i = 0; i * w < ref->values[0].size(); ++i)
    out.emplace_back(ref->values[0].begin() + i * w,
                     ref->values[0].begin() + (i + 1) * w);
  return out;
}

/// |got - ref| <= atol + rtol |ref|, as `dynbc run --check` compares.
inline ::testing::AssertionResult close(llvm::ArrayRef<float> got,
                                        llvm::ArrayRef<float> ref,
                                        double atol = 1e-4,
                                        double rtol = 1e-3) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure()
           << "width " << got.size() << " vs " << ref.size();
  for (size_t k = 0; k < got.size(); ++k)
    if (!(std::fabs(double(got[k]) - ref[k]) <=
          atol + rtol * std::fabs(ref[k])))
      return ::testing::AssertionFailure()
             << "element " << k << ": " << got[k] << " vs " << ref[k];
  return ::testing::AssertionSuccess();
}

} // namespace dynb::test

#endif // DYNB_TESTS_UNIT_ENGINE_ENGINETESTUTILS_H
