//===- CompilerTest.cpp - The compiler's libraries on graphs built here ---===//
#include "dynb/Analysis/Signature.h"
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Driver/Session.h"
#include "dynb/Import/GraphImporter.h"
#include "dynb/Import/Safetensors.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

using namespace dynb;

namespace {

/// A TreeLSTM-shaped model (docs/workloads.md §1 at small sizes) and instances
/// over random binary trees, in the JSON interchange form.
struct TreeBatch {
  int hdim = 4, vocab = 20;
  std::string json;
};

std::string treeLstmModel(int h, int vocab) {
  auto shape = [](std::initializer_list<int> dims) {
    std::string s = "[";
    for (int d : dims)
      s += (s.size() > 1 ? "," : "") + std::to_string(d);
    return s + "]";
  };
  std::string m = "{\"params\":[";
  m += "{\"name\":\"E\",\"shape\":" + shape({vocab, h}) + "},";
  m += "{\"name\":\"W_iou\",\"shape\":" + shape({3 * h, h}) + "},";
  m += "{\"name\":\"b_iou\",\"shape\":" + shape({3 * h}) + "},";
  m += "{\"name\":\"U_iou\",\"shape\":" + shape({3 * h, 2 * h}) + "},";
  m += "{\"name\":\"U_f1\",\"shape\":" + shape({h, h}) + "},";
  m += "{\"name\":\"U_f2\",\"shape\":" + shape({h, h}) + "},";
  m += "{\"name\":\"b_f\",\"shape\":" + shape({h}) + "}],\"modules\":[";
  std::string H = std::to_string(h), H2 = std::to_string(2 * h);
  m += "{\"name\":\"leaf\",\"nodes\":[{\"op\":\"arg\",\"shape\":[" + H +
       "]},{\"op\":\"linear\",\"inputs\":[0],\"weight\":\"W_iou\",\"bias\":"
       "\"b_iou\"},{\"op\":\"slice\",\"inputs\":[1],\"offset\":0,\"size\":" +
       H +
       "},{\"op\":\"sigmoid\",\"inputs\":[2]},{\"op\":\"slice\",\"inputs\":"
       "[1],\"offset\":" +
       H + ",\"size\":" + H +
       "},{\"op\":\"sigmoid\",\"inputs\":[4]},{\"op\":\"slice\",\"inputs\":[1]"
       ",\"offset\":" +
       H2 + ",\"size\":" + H +
       "},{\"op\":\"tanh\",\"inputs\":[6]},{\"op\":\"mul\",\"inputs\":[3,7]},"
       "{\"op\":\"tanh\",\"inputs\":[8]},{\"op\":\"mul\",\"inputs\":[5,9]}],"
       "\"outputs\":[10,8]},";
  m += "{\"name\":\"internal\",\"nodes\":[{\"op\":\"arg\",\"shape\":[" + H +
       "]},{\"op\":\"arg\",\"shape\":[" + H + "]},{\"op\":\"arg\",\"shape\":[" +
       H + "]},{\"op\":\"arg\",\"shape\":[" + H +
       "]},{\"op\":\"concat\",\"inputs\":[0,2]},{\"op\":\"linear\",\"inputs\":"
       "[4],\"weight\":\"U_iou\",\"bias\":\"b_iou\"},{\"op\":\"slice\","
       "\"inputs\":[5],\"offset\":0,\"size\":" +
       H +
       "},{\"op\":\"sigmoid\",\"inputs\":[6]},{\"op\":\"slice\",\"inputs\":"
       "[5],\"offset\":" +
       H + ",\"size\":" + H +
       "},{\"op\":\"sigmoid\",\"inputs\":[8]},{\"op\":\"slice\",\"inputs\":[5]"
       ",\"offset\":" +
       H2 + ",\"size\":" + H +
       "},{\"op\":\"tanh\",\"inputs\":[10]},{\"op\":\"linear\",\"inputs\":[0],"
       "\"weight\":\"U_f1\",\"bias\":\"b_f\"},{\"op\":\"sigmoid\",\"inputs\":"
       "[12]},{\"op\":\"linear\",\"inputs\":[2],\"weight\":\"U_f2\",\"bias\":"
       "\"b_f\"},{\"op\":\"sigmoid\",\"inputs\":[14]},{\"op\":\"mul\","
       "\"inputs\":[7,11]},{\"op\":\"mul\",\"inputs\":[13,1]},{\"op\":\"add\","
       "\"inputs\":[16,17]},{\"op\":\"mul\",\"inputs\":[15,3]},{\"op\":\"add\","
       "\"inputs\":[18,19]},{\"op\":\"tanh\",\"inputs\":[20]},{\"op\":\"mul\","
       "\"inputs\":[9,21]}],\"outputs\":[22,20]}]}";
  return m;
}

/// Post-order nodes of a random binary tree with `leaves` leaves, or of a
/// balanced one when `balanced`.
std::string treeInstance(int leaves, std::mt19937 &rng, int vocab,
                         bool balanced) {
  std::string nodes;
  int count = 0;
  auto add = [&](const std::string &n) {
    nodes += (nodes.empty() ? "" : ",") + n;
    return count++;
  };
  // Explicit stack of (leaves, state); results are node ids of call nodes.
  struct Frame {
    int leaves, split, left;
  };
  std::vector<Frame> stack = {{leaves, -1, -1}};
  std::vector<int> done;
  while (!stack.empty()) {
    Frame &f = stack.back();
    if (f.leaves == 1) {
      int e = add("{\"op\":\"embedding\",\"table\":\"E\",\"index\":" +
                  std::to_string(rng() % vocab) + "}");
      done.push_back(add("{\"op\":\"call\",\"module\":\"leaf\",\"inputs\":[" +
                         std::to_string(e) + "]}"));
      stack.pop_back();
      continue;
    }
    if (f.split < 0) {
      f.split = balanced ? f.leaves / 2 : 1 + int(rng() % (f.leaves - 1));
      int l = f.split;
      stack.push_back({l, -1, -1});
      continue;
    }
    if (f.left < 0) {
      f.left = done.back();
      done.pop_back();
      int r = f.leaves - f.split;
      stack.push_back({r, -1, -1});
      continue;
    }
    int right = done.back();
    done.pop_back();
    int left = f.left;
    stack.pop_back();
    done.push_back(add(llvm::formatv("{{\"op\":\"call\",\"module\":"
                                     "\"internal\",\"inputs\":[[{0},0],[{0},"
                                     "1],[{1},0],[{1},1]]}",
                                     left, right)));
  }
  return "{\"nodes\":[" + nodes + "],\"outputs\":[[" +
         std::to_string(done.back()) + ",0]]}";
}

std::string treeDocument(int h, int vocab, const std::vector<int> &leaves,
                         unsigned seed, bool balanced = false) {
  std::mt19937 rng(seed);
  std::string doc =
      "{\"dynb\":1,\"model\":" + treeLstmModel(h, vocab) + ",\"instances\":[";
  for (size_t i = 0; i < leaves.size(); ++i)
    doc += (i ? "," : "") + treeInstance(leaves[i], rng, vocab, balanced);
  return doc + "]}";
}

std::string writeTemp(const std::string &name, const std::string &text) {
  llvm::SmallString<128> path;
  llvm::sys::fs::createUniquePath("dynb-test-%%%%%%-" + name, path,
                                  /*MakeAbsolute=*/true);
  std::ofstream(path.c_str()) << text;
  return path.str().str();
}

/// Imports JSON from memory (named `name`, which picks the form) and returns
/// the diagnostics it produced, empty when it imported.
std::string importErrors(const std::string &json,
                         llvm::StringRef name = "in.json") {
  mlir::MLIRContext ctx;
  std::string errors;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream os(errors);
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  auto module = importJsonGraphs(name, json, ctx);
  if (module)
    return "";
  return errors;
}

TEST(Import, TreeDocumentImportsAndVerifies) {
  mlir::MLIRContext ctx;
  auto module =
      importJsonGraphs("t.json", treeDocument(4, 20, {3, 5, 1}, 1), ctx);
  ASSERT_TRUE(module);
  EXPECT_EQ(llvm::range_size(module->getOps<InstanceOp>()), 3u);
  EXPECT_EQ(llvm::range_size(module->getOps<ParamOp>()), 7u);
}

TEST(Import, ErrorsNameInstanceAndNode) {
  std::string model = treeLstmModel(4, 20);
  auto doc = [&](const std::string &inst) {
    return "{\"dynb\":1,\"model\":" + model + ",\"instances\":[" +
           "{\"nodes\":[{\"op\":\"embedding\",\"table\":\"E\",\"index\":1}],"
           "\"outputs\":[0]}," +
           inst + "]}";
  };
  std::string e = importErrors(
      doc("{\"nodes\":[{\"op\":\"embedding\",\"table\":\"E\",\"index\":1},"
          "{\"op\":\"call\",\"module\":\"nope\",\"inputs\":[0]}],\"outputs\":["
          "1]}"));
  EXPECT_NE(e.find("instance 1, node 1 (call)"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown module 'nope'"), std::string::npos) << e;

  e = importErrors(doc("{\"nodes\":[{\"op\":\"tanh\",\"inputs\":[0]}],"
                       "\"outputs\":[0]}"));
  EXPECT_NE(e.find("instance 1, node 0 (tanh)"), std::string::npos) << e;
  EXPECT_NE(e.find("not an earlier node"), std::string::npos) << e;

  e = importErrors(doc("{\"nodes\":[{\"op\":\"embedding\",\"table\":"
                       "\"E\",\"index\":99}],\"outputs\":[0]}"));
  EXPECT_NE(e.find("index 99 is outside table 'E' of 20 rows"),
            std::string::npos)
      << e;

  e = importErrors("{\"dynb\":2,\"model\":{},\"instances\":[]}");
  EXPECT_NE(e.find("interchange version 2 is not supported"), std::string::npos)
      << e;
  e = importErrors("{\"dynb\":1,\"model\":");
  EXPECT_NE(e.find("invalid JSON"), std::string::npos) << e;
}

TEST(Import, JsonLinesReportsTheLine) {
  std::string text = "{\"dynb\":1,\"model\":" + treeLstmModel(4, 20) +
                     "}\n"
                     "{\"nodes\":[{\"op\":\"embedding\",\"table\":\"E\","
                     "\"index\":1}],\"outputs\":[0]}\n\n"
                     "{\"nodes\":[{\"op\":\"frobnicate\"}],\"outputs\":[]}\n";
  std::string errors = importErrors(text, "b.jsonl");
  EXPECT_NE(errors.find("b.jsonl\":4:1"), std::string::npos) << errors;
  EXPECT_NE(errors.find("instance 1, node 0 (frobnicate)"), std::string::npos)
      << errors;
}

TEST(Signature, EmbeddingRowIsDataNotFunction) {
  mlir::MLIRContext ctx;
  auto module = importJsonGraphs("t.json", treeDocument(4, 20, {2, 2}, 3), ctx);
  ASSERT_TRUE(module);
  SignatureTable table;
  llvm::DenseMap<SignatureId, unsigned> counts;
  for (InstanceOp inst : module->getOps<InstanceOp>())
    for (mlir::Operation &op : inst.getBody().front().without_terminator())
      ++counts[table.intern(&op)];
  // embedding, leaf call, internal call: three signatures whatever the rows.
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(counts[0], 4u);
  EXPECT_NE(table.describe(1).find("call @leaf"), std::string::npos);
}

TEST(Safetensors, RoundTripAndHostileFiles) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8};
  std::string path = writeTemp("p.safetensors", "");
  ASSERT_FALSE(
      bool(writeSafetensors(path, {{"A", {2, 3}, &a}, {"b", {2}, &b}})));
  rt::ParameterStore store;
  ASSERT_FALSE(bool(loadSafetensors(path, store)));
  ASSERT_NE(store.find("A"), nullptr);
  EXPECT_EQ(store.find("A")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(store.find("b")->data, b);

  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  auto loadBytes = [&](const std::string &content) {
    std::string p = writeTemp("bad.safetensors", "");
    std::ofstream(p, std::ios::binary) << content;
    rt::ParameterStore s;
    llvm::Error e = loadSafetensors(p, s);
    std::string msg = e ? llvm::toString(std::move(e)) : "";
    llvm::sys::fs::remove(p);
    return msg;
  };
  EXPECT_NE(loadBytes(bytes.substr(0, bytes.size() - 4)).find("run past"),
            std::string::npos);
  EXPECT_NE(loadBytes(bytes.substr(0, 5)).find("too short"), std::string::npos);
  std::string liar = bytes;
  liar[0] = '\xff';
  liar[1] = '\xff';
  EXPECT_NE(loadBytes(liar).find("exceeds the file"), std::string::npos);
  std::string f16 = bytes;
  size_t pos = f16.find("F32");
  f16.replace(pos, 3, "F16");
  EXPECT_NE(loadBytes(f16).find("dtype F16 is not supported"),
            std::string::npos);
  llvm::sys::fs::remove(path);
}

TEST(Safetensors, EmptyTensorLoads) {
  // Found by fuzz-safetensors: a zero-element tensor must load (nothing to
  // copy), not reach memcpy with a null pointer.
  std::vector<float> none;
  std::string path = writeTemp("empty.safetensors", "");
  ASSERT_FALSE(bool(writeSafetensors(path, {{"z", {0}, &none}})));
  rt::ParameterStore store;
  llvm::Error e = loadSafetensors(path, store);
  EXPECT_FALSE(bool(e)) << (e ? llvm::toString(std::move(e)) : "");
  ASSERT_NE(store.find("z"), nullptr);
  EXPECT_EQ(store.find("z")->shape, (std::vector<int64_t>{0}));
  llvm::sys::fs::remove(path);
}

class TreeSession : public ::testing::Test {
protected:
  void load(const std::string &doc) {
    path = writeTemp("trees.json", doc);
    ASSERT_TRUE(mlir::succeeded(session.loadGraphs(path)));
    ASSERT_FALSE(bool(session.seedParams(7)));
  }
  void TearDown() override { llvm::sys::fs::remove(path); }
  Session session;
  std::string path;
};

TEST_F(TreeSession, EveryStrategyMatchesTheReference) {
  load(treeDocument(8, 30, {1, 2, 5, 9, 3, 17, 4, 4}, 11));
  auto ref = session.runReference();
  ASSERT_TRUE(mlir::succeeded(ref));
  for (auto s : kEveryBatchingStrategy)
    for (int64_t batch : {0, 1, 3}) {
      RunOptions o;
      o.strategy = s;
      o.batchSize = batch;
      auto r = session.run(o);
      ASSERT_TRUE(mlir::succeeded(r));
      Comparison c = compareOutputs(*ref, r->outputs, 1e-5, 1e-4);
      EXPECT_TRUE(c.withinTolerance)
          << toString(s).str() << " batch " << batch << ": " << c.maxAbsError;
      EXPECT_GE(r->launches, r->lowerBound);
    }
}

TEST_F(TreeSession, SecondBatchCompilesNothing) {
  load(treeDocument(8, 30, {3, 7, 2, 12}, 5));
  RunOptions o;
  o.strategy = BatchingStrategy::Depth;
  o.batchSize = 2;
  auto first = session.run(o);
  ASSERT_TRUE(mlir::succeeded(first));
  EXPECT_EQ(first->modulesCompiled, 2u); // leaf and internal
  o.strategy = BatchingStrategy::Agenda;
  o.batchSize = 3; // other group sizes, same signatures
  auto second = session.run(o);
  ASSERT_TRUE(mlir::succeeded(second));
  EXPECT_EQ(second->modulesCompiled, 0u);
}

TEST_F(TreeSession, DepthReachesTheBalancedTreeBound) {
  // 2^k leaves: embeddings (1 launch), leaf cells (1), then k levels.
  for (int k : {0, 1, 3, 6}) {
    Session s;
    std::string p = writeTemp("bal.json", treeDocument(4, 10, {1 << k, 1 << k},
                                                       k, /*balanced=*/true));
    ASSERT_TRUE(mlir::succeeded(s.loadGraphs(p)));
    auto batched = s.batch(BatchingStrategy::Depth, 0);
    ASSERT_TRUE(mlir::succeeded(batched));
    auto sched = *(*batched)->getOps<ScheduleOp>().begin();
    EXPECT_EQ(sched.getLaunches(), uint64_t(k + 2));
    EXPECT_EQ(sched.getLowerBound(), uint64_t(k + 2));
    llvm::sys::fs::remove(p);
  }
}

TEST_F(TreeSession, MissingAndMisshapenParametersAreErrors) {
  load(treeDocument(4, 10, {2}, 1));
  std::vector<float> e(10 * 4, 0.5f);
  std::string p = writeTemp("few.safetensors", "");
  ASSERT_FALSE(bool(writeSafetensors(p, {{"E", {10, 4}, &e}})));
  Session other;
  ASSERT_TRUE(mlir::succeeded(other.loadGraphs(path)));
  llvm::Error err = other.loadParams(p);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("no values for parameter"),
            std::string::npos);
  std::vector<float> wrong(4 * 4, 0.5f);
  ASSERT_FALSE(bool(writeSafetensors(p, {{"E", {4, 4}, &wrong}})));
  Session third;
  ASSERT_TRUE(mlir::succeeded(third.loadGraphs(path)));
  err = third.loadParams(p);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err))
                .find("parameter 'E' has shape [4, 4] but the model declares "
                      "[10, 4]"),
            std::string::npos);
  llvm::sys::fs::remove(p);
}

} // namespace
