//===- FrontEndParityTest.cpp - Interchange reader vs importer, step by step =//
//
// dynbc plans interchange files two ways: the importer and the dynb-batch
// pass with PlanBuilder (--front-end=mlir), or InterchangeSource's node
// records with the Engine's walk (the default). Both must give the same
// plans: the same buffers, steps, regions, kernels and outputs.
//
//===----------------------------------------------------------------------===//
#include "EngineTestUtils.h"

#include "dynb/Engine/InterchangeSource.h"
#include "dynb/Lowering/PlanBuilder.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>

using namespace dynb;
using namespace dynb::test;

namespace {

void describe(llvm::raw_ostream &os, const rt::Region &r) {
  os << "b" << r.buffer << "[" << r.row << "+" << r.rows << ", " << r.col << "+"
     << r.cols << "]";
}

void describe(llvm::raw_ostream &os, const std::vector<rt::Step> &steps,
              const std::string &indent);

/// A kernel's name without its kernel cache's serial number (`m3_cell_k0`,
/// `op_add_5_k0`): two caches number their entries in the order they
/// compiled them.
std::string kernelName(llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef, 6> parts;
  name.split(parts, '_');
  std::string out;
  for (auto [i, p] : llvm::enumerate(parts)) {
    if (i)
      out += '_';
    bool digits = !p.empty() && llvm::all_of(p, llvm::isDigit);
    if (digits)
      out += '#';
    else if (i == 0 && p.size() > 1 && p[0] == 'm' &&
             llvm::all_of(p.drop_front(), llvm::isDigit))
      out += "m#";
    else
      out += p;
  }
  return out;
}

void describe(llvm::raw_ostream &os, const rt::Step &s,
              const std::string &indent) {
  os << indent;
  switch (s.kind()) {
  case rt::Step::Kind::Gather:
    os << "gather ";
    describe(os, s.gather().dst);
    os << " col " << s.gather().srcCol << " <-";
    for (const rt::RowRef &r : s.gather().sources)
      os << " b" << r.buffer << ":" << r.row;
    break;
  case rt::Step::Kind::Gemm:
    os << "gemm ";
    describe(os, s.gemm().a);
    os << " w b" << s.gemm().weight;
    if (s.gemm().hasBias)
      os << " bias b" << s.gemm().bias;
    os << " -> ";
    describe(os, s.gemm().c);
    os << (s.gemm().relu ? " relu" : "");
    break;
  case rt::Step::Kind::Kernel:
    // The function pointer differs (two kernel caches); the kernel does not.
    os << "kernel " << kernelName(s.kernel().name) << " rows "
       << s.kernel().rows;
    for (const rt::Region &r : s.kernel().args) {
      os << " ";
      describe(os, r);
    }
    break;
  case rt::Step::Kind::Dispatch:
    os << "dispatch ";
    describe(os, s.dispatch().x);
    os << " gate b" << s.dispatch().gateWeight << " top " << s.dispatch().topK
       << " of " << s.dispatch().experts << " logits b" << s.dispatch().logits;
    if (s.dispatch().hasNoise)
      os << " noise b" << s.dispatch().noiseWeight << " seed "
         << s.dispatch().noiseSeed << " logits b" << s.dispatch().noiseLogits;
    os << " routed ";
    describe(os, s.dispatch().routedIn);
    os << " -> ";
    describe(os, s.dispatch().routedOut);
    os << " -> ";
    describe(os, s.dispatch().out);
    os << "\n";
    describe(os, s.dispatch().body, indent + "  ");
    break;
  case rt::Step::Kind::Map:
    os << "map " << int(s.map().op) << " -> ";
    describe(os, s.map().out);
    break;
  case rt::Step::Kind::SoftmaxXent:
    os << "softmax_xent ";
    describe(os, s.softmaxXent().logits);
    os << " labels";
    for (int64_t label : s.softmaxXent().labels)
      os << " " << label;
    os << " -> ";
    describe(os, s.softmaxXent().loss);
    break;
  case rt::Step::Kind::ParamGrad:
    os << "param_grad " << int(s.paramGrad().op) << " ";
    describe(os, s.paramGrad().dy);
    if (s.paramGrad().op == rt::ParamGradStep::Op::Linear) {
      os << " x ";
      describe(os, s.paramGrad().x);
    }
    os << " -> b" << s.paramGrad().weightGrad;
    for (int64_t row : s.paramGrad().rows)
      os << " " << row;
    break;
  case rt::Step::Kind::Fill:
    os << "fill ";
    describe(os, s.fill().dst);
    break;
  }
  os << "\n";
}

void describe(llvm::raw_ostream &os, const std::vector<rt::Step> &steps,
              const std::string &indent) {
  for (const rt::Step &s : steps)
    describe(os, s, indent);
}

std::string describe(const rt::Plan &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "version " << plan.version << ", arena " << plan.arenaBytes << "\n";
  for (auto [i, b] : llvm::enumerate(plan.buffers))
    os << "b" << i << " "
       << (b.kind == rt::BufferDesc::Kind::Arena ? "arena" : b.paramName) << " "
       << b.rows << "x" << b.cols << " @" << b.arenaOffset << "\n";
  describe(os, plan.steps, "");
  for (const rt::Region &r : plan.outputs) {
    os << "output ";
    describe(os, r);
    os << "\n";
  }
  for (const rt::Region &r : plan.losses) {
    os << "loss ";
    describe(os, r);
    os << "\n";
  }
  return text;
}

/// The plans of the MLIR path: the importer, dynb-batch, PlanBuilder.
std::vector<std::string> mlirPlans(const std::string &path,
                                   BatchingStrategy strategy, int64_t batchSize,
                                   PlanStats &stats, uint64_t &launches) {
  std::vector<std::string> out;
  Session session;
  EXPECT_TRUE(succeeded(session.loadGraphs(path)));
  auto schedules = session.addSchedules(strategy, batchSize);
  EXPECT_TRUE(succeeded(schedules));
  if (failed(schedules))
    return out;
  for (ScheduleOp s : *schedules) {
    auto plan = buildPlan(s, session.kernels(), &stats);
    EXPECT_TRUE(succeeded(plan));
    if (succeeded(plan))
      out.push_back(describe(*plan));
    launches += s.getLaunches();
  }
  return out;
}

/// The plans of the records: InterchangeSource and the Engine's walk.
std::vector<std::string> recordPlans(const std::string &path,
                                     BatchingStrategy strategy,
                                     int64_t batchSize, RunResult &result) {
  std::vector<std::string> out;
  std::string whyNot;
  auto source = InterchangeSource::open(path, {}, whyNot);
  EXPECT_TRUE(source) << whyNot;
  if (!source)
    return out;
  if (llvm::Error e = source->readAll(batchSize)) {
    ADD_FAILURE() << llvm::toString(std::move(e));
    return out;
  }
  auto plans = source->plan(strategy, result);
  if (!plans) {
    ADD_FAILURE() << llvm::toString(plans.takeError());
    return out;
  }
  for (const rt::Plan &p : *plans)
    out.push_back(describe(p));
  return out;
}

void expectSamePlans(const std::string &path) {
  for (BatchingStrategy s : kEveryBatchingStrategy)
    for (int64_t batchSize : {int64_t(0), int64_t(64), int64_t(7)}) {
      SCOPED_TRACE(toString(s).str() + ", batch size " +
                   std::to_string(batchSize));
      PlanStats mlirStats;
      uint64_t mlirLaunches = 0;
      std::vector<std::string> want =
          mlirPlans(path, s, batchSize, mlirStats, mlirLaunches);
      RunResult records;
      std::vector<std::string> got = recordPlans(path, s, batchSize, records);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << "plan of batch " << i;
      EXPECT_EQ(records.launches, mlirLaunches);
      EXPECT_EQ(records.plan.launches, mlirStats.launches);
      EXPECT_EQ(records.plan.gathersCopied, mlirStats.gathersCopied);
      EXPECT_EQ(records.plan.gathersAsViews, mlirStats.gathersAsViews);
      EXPECT_EQ(records.plan.concatsPlaced, mlirStats.concatsPlaced);
    }
}

TEST(FrontEndParity, SstDevTreesPlanTheSameSteps) {
  std::string path = sstModel(8, 200);
  expectSamePlans(path);
  llvm::sys::fs::remove(path);
}

TEST(FrontEndParity, SstTreesWithLossesPlanTheSameSteps) {
  // sst2dynb --labels: a classifier linear and a loss on every node, so
  // per-instance linears and loss launches (labels, loss terms) too.
  std::string path = sstModel(8, 120, /*labels=*/true);
  expectSamePlans(path);
  llvm::sys::fs::remove(path);
}

TEST(FrontEndParity, EscapedKeysAndNamesPlanTheSameSteps) {
  // The reader takes keys and names without escapes straight from the
  // text; escaped ones (every other instance here) must still be read as
  // the importer unescapes them.
  std::string plain = sstModel(8, 40);
  std::string path = tempPath("front-end-escaped.jsonl");
  {
    std::ifstream in(plain);
    std::ofstream out(path);
    std::string line;
    for (int i = 0; std::getline(in, line); ++i) {
      if (i > 0 && i % 2 == 0) {
        auto replaceAll = [&](const std::string &from, const std::string &to) {
          for (size_t at = line.find(from); at != std::string::npos;
               at = line.find(from, at + to.size()))
            line.replace(at, from.size(), to);
        };
        replaceAll("\"op\"", "\"o\\u0070\"");
        replaceAll("\"leaf\"", "\"le\\u0061f\"");
        replaceAll("\"table\"", "\"t\\u0061ble\"");
      }
      out << line << "\n";
    }
  }
  expectSamePlans(path);
  llvm::sys::fs::remove(path);
  llvm::sys::fs::remove(plain);
}

TEST(FrontEndParity, PerInstanceOpsAndCallsPlanTheSameSteps) {
  // Every per-instance op beside module calls, in instances of two shapes,
  // with an output that is a slice of a call's result.
  std::string path = tempPath("front-end-ops.jsonl");
  {
    std::ofstream f(path);
    f << R"({"dynb": 1, "model": {"params": [{"name": "E", "shape": [6, 4]},)"
         R"( {"name": "W", "shape": [4, 4]}, {"name": "b", "shape": [4]},)"
         R"( {"name": "U", "shape": [4, 8]}],)"
         R"( "modules": [{"name": "cell", "nodes": [{"op": "arg", "shape": [4]},)"
         R"( {"op": "arg", "shape": [4]}, {"op": "concat", "inputs": [0, 1]},)"
         R"( {"op": "linear", "inputs": [2], "weight": "U"},)"
         R"( {"op": "tanh", "inputs": [3]}], "outputs": [4, 2]}]}})"
      << "\n";
    for (int i = 0; i < 40; ++i) {
      f << R"({"nodes": [{"op": "embedding", "table": "E", "index": )" << i % 6
        << R"(}, {"op": "embedding", "table": "E", "index": )"
        << (i * 5 + 1) % 6
        << R"(}, {"op": "linear", "inputs": [0], "weight": "W", "bias": "b"},)"
           R"( {"op": "add", "inputs": [2, 1]}, {"op": "mul", "inputs": [3, 0]},)"
           R"( {"op": "sigmoid", "inputs": [4]}, {"op": "relu", "inputs": [5]},)"
           R"( {"op": "call", "module": "cell", "inputs": [6, 1]})";
      if (i % 3 == 0)
        f << R"(, {"op": "call", "module": "cell", "inputs": [[7, 0], 0]})"
             R"(, {"op": "slice", "inputs": [[8, 1]], "offset": 2, "size": 4})";
      else
        f << R"(, {"op": "tanh", "inputs": [[7, 0]]})"
             R"(, {"op": "slice", "inputs": [[7, 1]], "offset": 1, "size": 4})";
      f << R"(], "outputs": [9, 8]})"
        << "\n";
    }
  }
  expectSamePlans(path);
  llvm::sys::fs::remove(path);
}

TEST(FrontEndParity, MixtureOfExpertsDispatchesPlanTheSameSteps) {
  // Dispatches of three signatures (top 1; top 2 with noise under two
  // seeds) over embedding rows and over a linear's result, followed by a
  // per-instance op, as a document.
  std::string path = tempPath("front-end-moe.json");
  {
    std::ofstream f(path);
    f << R"({"dynb": 1, "model": {"params": [{"name": "X", "shape": [9, 6]},)"
         R"( {"name": "P", "shape": [6, 6]}, {"name": "G", "shape": [5, 6]},)"
         R"( {"name": "N", "shape": [5, 6]}, {"name": "W1", "shape": [5, 4, 6]},)"
         R"( {"name": "b1", "shape": [5, 4]}, {"name": "W2", "shape": [5, 3, 4]}],)"
         R"( "modules": [{"name": "expert", "experts": 5, "nodes": [)"
         R"({"op": "arg", "shape": [6]},)"
         R"( {"op": "linear", "inputs": [0], "weight": "W1", "bias": "b1"},)"
         R"( {"op": "relu", "inputs": [1]},)"
         R"( {"op": "linear", "inputs": [2], "weight": "W2"}], "outputs": [3]}]},)"
         R"( "instances": [)";
    for (int i = 0; i < 30; ++i) {
      f << (i ? ", " : "")
        << R"({"nodes": [{"op": "embedding", "table": "X", "index": )"
        << (i * 4) % 9 << "}";
      int input = 0;
      if (i % 4 == 1) {
        f << R"(, {"op": "linear", "inputs": [0], "weight": "P"})";
        input = 1;
      }
      f << R"(, {"op": "dispatch", "inputs": [)" << input
        << R"(], "gate": "G", "experts": "expert", )";
      if (i % 3 == 0)
        f << R"("top": 1})";
      else
        f << R"("top": 2, "noise": "N", "noise_seed": )" << (i % 3) << "}";
      f << R"(, {"op": "tanh", "inputs": [)" << input + 1
        << R"(]}], "outputs": [)" << input + 2 << "]}";
    }
    f << "]}\n";
  }
  expectSamePlans(path);
  llvm::sys::fs::remove(path);
}

} // namespace
