//===- AdjointModulesTest.cpp - dynb-grad's modules against the oracle ----===//
//
// For every module dynb-grad differentiates: its forward module computes the
// module's results exactly, and its adjoint module, run on the saved values
// and random result adjoints, gives the argument adjoints and (through the
// linears it lists, dzᵀ·s[input] and dz) the parameter gradients of the
// reference gradient's vector-Jacobian product, to float tolerance. On a
// hand-made module using every op the pass differentiates and on the
// TreeLSTM's modules.
//
//===----------------------------------------------------------------------===//
#include "EngineTestUtils.h"

#include "dynb/Reference/ReferenceGradient.h"
#include "dynb/Reference/ReferenceInterpreter.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <random>

using namespace dynb;
using namespace dynb::test;

namespace {

std::vector<float> randomRow(int64_t n, std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

int64_t width(mlir::Type t) {
  return mlir::cast<mlir::RankedTensorType>(t).getShape().back();
}

/// Checks every adjoint module of the session's (differentiated) model on
/// a few random rows; returns how many modules it checked.
int checkAdjoints(Session &s) {
  mlir::ModuleOp module = s.module();
  ReferenceInterpreter interp(module, s.params());
  std::mt19937_64 rng(9);
  int checked = 0;
  for (auto adj : module.getOps<mlir::func::FuncOp>()) {
    auto of =
        adj->getAttrOfType<mlir::FlatSymbolRefAttr>("dynb.grad.adjoint_of");
    if (!of)
      continue;
    auto fn = module.lookupSymbol<mlir::func::FuncOp>(of.getValue());
    auto fwd =
        module.lookupSymbol<mlir::func::FuncOp>((of.getValue() + "_fwd").str());
    EXPECT_TRUE(fn && fwd) << of.getValue().str();
    if (!fn || !fwd)
      continue;
    auto args = adj->getAttrOfType<mlir::DenseI64ArrayAttr>("dynb.grad.args");
    auto linears = adj->getAttrOfType<mlir::ArrayAttr>("dynb.grad.linears");
    EXPECT_TRUE(args && linears) << of.getValue().str();
    if (!args || !linears)
      return checked;
    unsigned numResults = fn.getNumResults();
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<std::vector<float>> x, dy;
      for (mlir::Type t : fn.getArgumentTypes())
        x.push_back(randomRow(width(t), rng));
      for (mlir::Type t : fn.getResultTypes())
        dy.push_back(randomRow(width(t), rng));

      auto plain = interp.callModule(fn, x);
      auto forward = interp.callModule(fwd, x);
      EXPECT_TRUE(succeeded(plain) && succeeded(forward));
      if (failed(plain) || failed(forward))
        return checked;
      for (unsigned i = 0; i < numResults; ++i)
        EXPECT_EQ((*forward)[i], (*plain)[i]) << "result " << i;
      std::vector<std::vector<float>> adjIn(dy);
      adjIn.insert(adjIn.end(), forward->begin() + numResults, forward->end());
      auto adjoint = interp.callModule(adj, adjIn);
      EXPECT_TRUE(succeeded(adjoint));
      if (failed(adjoint))
        return checked;

      ReferenceGradient ref(module, s.params());
      std::vector<std::vector<double>> xd, dyd;
      for (auto &v : x)
        xd.emplace_back(v.begin(), v.end());
      for (auto &v : dy)
        dyd.emplace_back(v.begin(), v.end());
      auto expected = ref.moduleAdjoint(fn, xd, dyd);
      EXPECT_TRUE(succeeded(expected));
      if (failed(expected))
        return checked;

      // Argument adjoints; those not listed must be zero in the oracle.
      std::vector<bool> listed(x.size(), false);
      for (auto [k, a] : llvm::enumerate(args.asArrayRef())) {
        listed[a] = true;
        for (size_t j = 0; j < x[a].size(); ++j)
          EXPECT_NEAR((*adjoint)[k][j], (*expected)[a][j],
                      1e-5 + 1e-4 * std::abs((*expected)[a][j]))
              << of.getValue().str() << " argument " << a << "[" << j << "]";
      }
      for (size_t a = 0; a < x.size(); ++a) {
        if (!listed[a]) {
          for (double v : (*expected)[a])
            EXPECT_EQ(v, 0.0) << "argument " << a << " has an adjoint";
        }
      }

      // Parameter gradients from the linears' output adjoints.
      std::map<std::string, std::vector<double>> grads;
      for (auto [k, entry] : llvm::enumerate(linears)) {
        auto d = mlir::cast<mlir::DictionaryAttr>(entry);
        std::string w = mlir::cast<mlir::FlatSymbolRefAttr>(d.get("weight"))
                            .getValue()
                            .str();
        int64_t input = mlir::cast<mlir::IntegerAttr>(d.get("input")).getInt();
        const std::vector<float> &dz = (*adjoint)[args.size() + k];
        const std::vector<float> &in = (*forward)[numResults + input];
        std::vector<double> &g = grads[w];
        g.resize(dz.size() * in.size(), 0.0);
        for (size_t i = 0; i < dz.size(); ++i)
          for (size_t j = 0; j < in.size(); ++j)
            g[i * in.size() + j] += double(dz[i]) * double(in[j]);
        if (auto bias = d.getAs<mlir::FlatSymbolRefAttr>("bias")) {
          std::vector<double> &gb = grads[bias.getValue().str()];
          gb.resize(dz.size(), 0.0);
          for (size_t i = 0; i < dz.size(); ++i)
            gb[i] += dz[i];
        }
      }
      for (const auto &[name, g] : ref.gradients()) {
        auto it = grads.find(name);
        bool any = false;
        for (double v : g)
          any |= v != 0.0;
        if (it == grads.end()) {
          EXPECT_FALSE(any) << name << " has a gradient no linear gave";
          continue;
        }
        EXPECT_EQ(it->second.size(), g.size()) << name;
        if (it->second.size() != g.size())
          return checked;
        for (size_t i = 0; i < g.size(); ++i)
          EXPECT_NEAR(it->second[i], g[i], 1e-5 + 1e-4 * std::abs(g[i]))
              << of.getValue().str() << ": " << name << "[" << i << "]";
      }
    }
    ++checked;
  }
  return checked;
}

mlir::LogicalResult differentiate(Session &s) {
  mlir::PassManager pm(&s.context());
  pm.addPass(createDifferentiateModules());
  return pm.run(s.module());
}

constexpr const char *kCell = R"mlir(
dynb.param @W : tensor<8x4xf32>
dynb.param @b : tensor<8xf32>
dynb.param @U : tensor<4x8xf32>

func.func @cell(%x: tensor<4xf32>, %h: tensor<4xf32>, %unused: tensor<3xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y = dynb.linear %x weight @W bias @b : tensor<4xf32> -> tensor<8xf32>
  %i = dynb.slice %y [0, 4] : tensor<8xf32> -> tensor<4xf32>
  %u = dynb.slice %y [2, 4] : tensor<8xf32> -> tensor<4xf32>
  %si = dynb.sigmoid %i : tensor<4xf32>
  %tu = dynb.tanh %u : tensor<4xf32>
  %m = dynb.mul %si, %tu : tensor<4xf32>
  %c = dynb.add %m, %h : tensor<4xf32>
  %r = dynb.relu %c : tensor<4xf32>
  %n = dynb.neg %r : tensor<4xf32>
  %o = dynb.mul %n, %c : tensor<4xf32>
  %cc = dynb.concat %o, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %z = dynb.linear %cc weight @U : tensor<8xf32> -> tensor<4xf32>
  %q = dynb.mul %z, %z : tensor<4xf32>
  %dead = dynb.tanh %q : tensor<4xf32>
  return %q, %c, %h : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

dynb.instance {
  %x = dynb.embedding @W [0] : tensor<4xf32>
  %x3 = dynb.slice %x [0, 3] : tensor<4xf32> -> tensor<3xf32>
  %a, %b, %c = dynb.call @cell(%x, %x, %x3) : (tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  dynb.output %a : tensor<4xf32>
}
)mlir";

TEST(AdjointModules, EveryOpMatchesTheReference) {
  std::string path = writeTemp("cell.mlir", kCell);
  Session s;
  ASSERT_TRUE(succeeded(s.loadGraphs(path)));
  ASSERT_FALSE(bool(s.seedParams(4)));
  ASSERT_TRUE(succeeded(differentiate(s)));
  EXPECT_EQ(checkAdjoints(s), 1);
  std::remove(path.c_str());
}

TEST(AdjointModules, TreeLstmModulesMatchTheReference) {
  std::string path = sstModel(/*hdim=*/6, /*limit=*/2);
  Session s;
  ASSERT_TRUE(succeeded(s.loadGraphs(path)));
  ASSERT_FALSE(bool(s.seedParams(8)));
  ASSERT_TRUE(succeeded(differentiate(s)));
  EXPECT_EQ(checkAdjoints(s), 2); // leaf and internal
  std::remove(path.c_str());
}

} // namespace
