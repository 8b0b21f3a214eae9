// The README's API example, compiled by the build (tests check the two
// stay identical): a TreeLSTM leaf and an internal node over two words.
#include "dynb/Engine/Engine.h"

#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  dynb::EngineOptions options;
  options.modelPath = argv[1]; // e.g. sst2dynb's output: modules + params
  auto engine = dynb::Engine::load(options); // compiles every module once
  if (!engine) {
    llvm::errs() << llvm::toString(engine.takeError()) << "\n";
    return 1;
  }
  auto E = (*engine)->param("E");
  auto leaf = (*engine)->module("leaf");
  auto internal = (*engine)->module("internal");
  if (!E || !leaf || !internal) {
    llvm::consumeError(E.takeError());
    llvm::consumeError(leaf.takeError());
    llvm::consumeError(internal.takeError());
    return 1;
  }

  dynb::Batch batch(**engine);
  for (int64_t word = 0; word < 4; ++word) {
    dynb::Instance tree = batch.addInstance();
    auto a = tree.call(*leaf, {tree.embedding(*E, word)});
    auto b = tree.call(*leaf, {tree.embedding(*E, word + 1)});
    auto root = tree.call(*internal, {a[0], a[1], b[0], b[1]});
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
