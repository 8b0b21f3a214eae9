//===- ReferenceGradientTest.cpp - Reverse mode against central differences
//===//
//
// The reference gradient is the oracle every batched backward pass will be
// checked against, so it is checked itself: for every op it differentiates
// and for module calls, on hand-made graphs and on SST trees with labels,
// each gradient element against (L(p + e) - L(p - e)) / 2e of its own
// double-precision forward pass.
//
//===----------------------------------------------------------------------===//
#include "EngineTestUtils.h"

#include "dynb/Reference/ReferenceGradient.h"

#include <random>

using namespace dynb;
using namespace dynb::test;

namespace {

constexpr double kStep = 1e-6;

double totalLoss(ReferenceGradient &grad, mlir::ModuleOp module) {
  double sum = 0;
  for (InstanceOp inst : module.getOps<InstanceOp>()) {
    mlir::FailureOr<double> l = grad.loss(inst);
    EXPECT_TRUE(succeeded(l));
    sum += succeeded(l) ? *l : 0.0;
  }
  return sum;
}

/// Compares the accumulated gradient of every instance of `session` with
/// central differences on the elements `pick` chooses (all by default),
/// returning how many were compared.
int64_t checkAgainstDifferences(
    Session &session,
    const std::function<bool(const std::string &, int64_t)> &pick =
        [](const std::string &, int64_t) { return true; }) {
  ReferenceGradient grad(session.module(), session.params());
  for (InstanceOp inst : session.module().getOps<InstanceOp>())
    EXPECT_TRUE(succeeded(grad.accumulate(inst)));
  int64_t compared = 0;
  for (const auto &[name, g] : grad.gradients()) {
    for (int64_t i = 0; i < static_cast<int64_t>(g.size()); ++i) {
      if (!pick(name, i))
        continue;
      grad.nudge(name, i, kStep);
      double up = totalLoss(grad, session.module());
      grad.nudge(name, i, -2 * kStep);
      double down = totalLoss(grad, session.module());
      grad.nudge(name, i, kStep);
      double numeric = (up - down) / (2 * kStep);
      EXPECT_NEAR(g[i], numeric, 1e-6 + 1e-5 * std::abs(numeric))
          << name << "[" << i << "]";
      ++compared;
    }
  }
  return compared;
}

// Every op reverse mode covers, a module called twice, a value with several
// uses (its adjoints summed) and two losses in one instance, one of them
// also used by a later op.
constexpr const char *kEveryOp = R"mlir(
dynb.param @E : tensor<6x4xf32>
dynb.param @W : tensor<8x4xf32>
dynb.param @b : tensor<8xf32>
dynb.param @V : tensor<3x8xf32>
dynb.param @c : tensor<3xf32>
dynb.param @U : tensor<3x4xf32>

func.func @cell(%x: tensor<4xf32>, %h: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = dynb.linear %x weight @W bias @b : tensor<4xf32> -> tensor<8xf32>
  %i = dynb.slice %y [0, 4] : tensor<8xf32> -> tensor<4xf32>
  %u = dynb.slice %y [4, 4] : tensor<8xf32> -> tensor<4xf32>
  %si = dynb.sigmoid %i : tensor<4xf32>
  %tu = dynb.tanh %u : tensor<4xf32>
  %m = dynb.mul %si, %tu : tensor<4xf32>
  %c = dynb.add %m, %h : tensor<4xf32>
  %r = dynb.relu %c : tensor<4xf32>
  %n = dynb.neg %r : tensor<4xf32>
  %o = dynb.mul %n, %c : tensor<4xf32>
  return %o, %c : tensor<4xf32>, tensor<4xf32>
}

dynb.instance {
  %x = dynb.embedding @E [3] : tensor<4xf32>
  %h0 = dynb.embedding @E [1] : tensor<4xf32>
  %a, %ac = dynb.call @cell(%x, %h0) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %b, %bc = dynb.call @cell(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %j = dynb.concat %b, %ac : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %z = dynb.linear %j weight @V bias @c : tensor<8xf32> -> tensor<3xf32>
  %l = dynb.softmax_xent %z label 2 : tensor<3xf32> -> tensor<1xf32>
  %z2 = dynb.linear %bc weight @U : tensor<4xf32> -> tensor<3xf32>
  %z3 = dynb.slice %z [0, 1] : tensor<3xf32> -> tensor<1xf32>
  %z4 = dynb.mul %z3, %l : tensor<1xf32>
  %z5 = dynb.concat %z4, %z4, %z4 : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<3xf32>
  %z6 = dynb.add %z2, %z5 : tensor<3xf32>
  %l2 = dynb.softmax_xent %z6 label 0 : tensor<3xf32> -> tensor<1xf32>
  dynb.output %b : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @E [3] : tensor<4xf32>
  %h0 = dynb.embedding @E [5] : tensor<4xf32>
  %a, %ac = dynb.call @cell(%x, %h0) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %z = dynb.linear %a weight @U : tensor<4xf32> -> tensor<3xf32>
  %l = dynb.softmax_xent %z label 1 : tensor<3xf32> -> tensor<1xf32>
  dynb.output %a : tensor<4xf32>
}
)mlir";

TEST(ReferenceGradient, EveryOpMatchesCentralDifferences) {
  std::string path = writeTemp("every-op.mlir", kEveryOp);
  Session s;
  ASSERT_TRUE(succeeded(s.loadGraphs(path)));
  ASSERT_FALSE(bool(s.seedParams(11)));
  // Every element of every parameter, including rows of @E no instance
  // reads (whose gradient must stay 0).
  EXPECT_EQ(checkAgainstDifferences(s), 6 * 4 + 8 * 4 + 8 + 3 * 8 + 3 + 3 * 4);
  std::remove(path.c_str());
}

TEST(ReferenceGradient, RowsNotReadHaveNoGradient) {
  std::string path = writeTemp("rows.mlir", kEveryOp);
  Session s;
  ASSERT_TRUE(succeeded(s.loadGraphs(path)));
  ASSERT_FALSE(bool(s.seedParams(3)));
  ReferenceGradient grad(s.module(), s.params());
  for (InstanceOp inst : s.module().getOps<InstanceOp>())
    ASSERT_TRUE(succeeded(grad.accumulate(inst)));
  const std::vector<double> &e = grad.gradients().at("E");
  for (int64_t row : {0, 2, 4})
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(e[row * 4 + j], 0.0) << "E row " << row;
  double touched = 0;
  for (int64_t j = 0; j < 4; ++j)
    touched += std::abs(e[3 * 4 + j]);
  EXPECT_GT(touched, 0.0);
  std::remove(path.c_str());
}

TEST(ReferenceGradient, AccumulatesAcrossInstancesAndClears) {
  std::string path = writeTemp("accumulate.mlir", kEveryOp);
  Session s;
  ASSERT_TRUE(succeeded(s.loadGraphs(path)));
  ASSERT_FALSE(bool(s.seedParams(5)));
  ReferenceGradient both(s.module(), s.params());
  ReferenceGradient twice(s.module(), s.params());
  double total = 0;
  for (InstanceOp inst : s.module().getOps<InstanceOp>()) {
    mlir::FailureOr<double> l = both.accumulate(inst);
    ASSERT_TRUE(succeeded(l));
    total += *l;
  }
  EXPECT_NEAR(total, totalLoss(both, s.module()), 1e-12);
  for (int pass = 0; pass < 2; ++pass)
    for (InstanceOp inst : s.module().getOps<InstanceOp>())
      ASSERT_TRUE(succeeded(twice.accumulate(inst)));
  for (const auto &[name, g] : both.gradients())
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_NEAR(twice.gradients().at(name)[i], 2 * g[i], 1e-12) << name;
  twice.clearGradients();
  for (const auto &[name, g] : twice.gradients())
    for (double v : g)
      EXPECT_EQ(v, 0.0) << name;
  std::remove(path.c_str());
}

// The TreeLSTM with a classifier and a loss on every node (sst2dynb
// --labels), on real trees: a sample of elements of every parameter, and
// every element of the embedding rows the trees read.
TEST(ReferenceGradient, SstTreesWithLabelsMatchCentralDifferences) {
  std::string path = sstModel(/*hdim=*/4, /*limit=*/4, /*labels=*/true);
  Session s;
  ASSERT_TRUE(succeeded(s.loadGraphs(path)));
  ASSERT_FALSE(bool(s.seedParams(7)));
  ReferenceGradient probe(s.module(), s.params());
  for (InstanceOp inst : s.module().getOps<InstanceOp>())
    ASSERT_TRUE(succeeded(probe.accumulate(inst)));
  std::mt19937_64 rng(42);
  int64_t embeddingRows = 0;
  auto pick = [&](const std::string &name, int64_t i) {
    const std::vector<double> &g = probe.gradients().at(name);
    if (probe.shapeOf(name).size() == 2 &&
        probe.shapeOf(name)[0] > 100) { // the vocabulary's table
      int64_t cols = probe.shapeOf(name)[1];
      bool read = false;
      for (int64_t j = 0; j < cols; ++j)
        read |= g[(i / cols) * cols + j] != 0.0;
      embeddingRows += read && i % cols == 0;
      return read;
    }
    return rng() % 8 == 0;
  };
  int64_t compared = checkAgainstDifferences(s, pick);
  EXPECT_GT(embeddingRows, 10);
  EXPECT_GT(compared, 100);
  std::remove(path.c_str());
}

TEST(ReferenceGradient, UnsupportedOpIsALocatedError) {
  std::string path = writeTemp("pool.mlir", R"mlir(
dynb.param @F : tensor<2x2x4x4xf32>
dynb.instance {
  %m = dynb.embedding @F [1] : tensor<2x4x4xf32>
  %p = dynb.maxpool2d %m : tensor<2x4x4xf32> -> tensor<2x2x2xf32>
  %f = dynb.flatten %p : tensor<2x2x2xf32> -> tensor<8xf32>
  dynb.output %f : tensor<8xf32>
}
)mlir");
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  Session s(os);
  ASSERT_TRUE(succeeded(s.loadGraphs(path))) << diagnostics;
  ASSERT_FALSE(bool(s.seedParams(1)));
  mlir::ScopedDiagnosticHandler capture(&s.context(), [&](mlir::Diagnostic &d) {
    os << d.getLocation() << ": " << d.str() << "\n";
    return mlir::success();
  });
  ReferenceGradient grad(s.module(), s.params());
  InstanceOp inst = *s.module().getOps<InstanceOp>().begin();
  EXPECT_TRUE(failed(grad.accumulate(inst)));
  EXPECT_NE(diagnostics.find("pool.mlir\":5:"), std::string::npos)
      << diagnostics;
  EXPECT_NE(diagnostics.find("is not supported by reverse mode yet"),
            std::string::npos)
      << diagnostics;
  std::remove(path.c_str());
}

} // namespace
