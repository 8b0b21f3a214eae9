// The README's API example, compiled by the build (tests check the two
// stay identical): a TreeLSTM model built in C++, then trees over words.
#include "dynb/Engine/Engine.h"

#include "llvm/Support/raw_ostream.h"

// The binary TreeLSTM cell of examples/treelstm (sst2dynb's model).
static dynb::ModelBuilder treeLstm(int64_t vocab, int64_t h) {
  dynb::ModelBuilder model("treelstm");
  model.param("E", {vocab, h});
  model.param("W_iou", {3 * h, h});
  model.param("b_iou", {3 * h});
  model.param("U_iou", {3 * h, 2 * h});
  model.param("U_f1", {h, h});
  model.param("U_f2", {h, h});
  model.param("b_f", {h});
  // i, o, u from the gates' pre-activations, c = i * u plus the children's
  // gated memories; returns o * tanh(c) and c.
  auto cell = [h](dynb::ModuleBuilder &m, dynb::ModuleValue iou,
                  llvm::ArrayRef<dynb::ModuleValue> fc) {
    auto i = m.sigmoid(m.slice(iou, 0, h));
    auto o = m.sigmoid(m.slice(iou, h, h));
    auto u = m.tanh(m.slice(iou, 2 * h, h));
    auto c = m.mul(i, u);
    for (dynb::ModuleValue f : fc)
      c = m.add(c, f);
    m.output(m.mul(o, m.tanh(c)));
    m.output(c);
  };
  dynb::ModuleBuilder leaf = model.module("leaf");
  cell(leaf, leaf.linear(leaf.arg({h}), "W_iou", "b_iou"), {});
  dynb::ModuleBuilder in = model.module("internal");
  auto h1 = in.arg({h}), c1 = in.arg({h}), h2 = in.arg({h}), c2 = in.arg({h});
  auto iou = in.linear(in.concat({h1, h2}), "U_iou", "b_iou");
  auto f1 = in.sigmoid(in.linear(h1, "U_f1", "b_f"));
  auto f2 = in.sigmoid(in.linear(h2, "U_f2", "b_f"));
  cell(in, iou, {in.mul(f1, c1), in.mul(f2, c2)});
  return model;
}

int main() {
  dynb::EngineOptions options;
  options.model = std::make_shared<dynb::ModelBuilder>(treeLstm(10, 8));
  options.seed = 1; // or options.paramsPath = "weights.safetensors"
  auto engine = dynb::Engine::load(options); // compiles every module once
  if (!engine) {
    llvm::errs() << llvm::toString(engine.takeError()) << "\n";
    return 1;
  }
  // The names are the model's own, so looking them up cannot fail.
  dynb::Param E = llvm::cantFail((*engine)->param("E"));
  dynb::Module leaf = llvm::cantFail((*engine)->module("leaf"));
  dynb::Module internal = llvm::cantFail((*engine)->module("internal"));

  dynb::Batch batch(**engine);
  for (int64_t word = 0; word < 4; ++word) {
    dynb::Instance tree = batch.addInstance();
    auto a = tree.call(leaf, {tree.embedding(E, word)});
    auto b = tree.call(leaf, {tree.embedding(E, word + 1)});
    auto root = tree.call(internal, {a[0], a[1], b[0], b[1]});
    tree.output(root[0]); // h of the root
  }
  auto results = (*engine)->run(batch); // 20 nodes in 3 launches
  if (!results) {
    llvm::errs() << llvm::toString(results.takeError()) << "\n";
    return 1;
  }
  for (size_t i = 0; i < results->numInstances(); ++i)
    llvm::outs() << "tree " << i << ": h[0] = " << results->output(i, 0)[0]
                 << "\n";
  return 0;
}
