// An application built against an installed dynb: it loads a TreeLSTM
// model (sst2dynb's output), batches four two-word trees and prints the
// first component of each root's h.
#include "dynb/Engine/Engine.h"
#include "dynb/Engine/Version.h"

#include "llvm/Support/raw_ostream.h"

#include <cstring>

#define STRINGIFY_(X) #X
#define STRINGIFY(X) STRINGIFY_(X)

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: treelstm-roots MODEL.json\n";
    return 2;
  }
  // The headers this was compiled with and the libdynb it loaded agree.
  const char *headers = STRINGIFY(DYNB_VERSION_MAJOR) "." STRINGIFY(
      DYNB_VERSION_MINOR) "." STRINGIFY(DYNB_VERSION_PATCH);
  if (std::strcmp(headers, dynb::versionString()) != 0) {
    llvm::errs() << "built against dynb " << headers << " but loaded "
                 << dynb::versionString() << "\n";
    return 1;
  }

  dynb::EngineOptions options;
  options.modelPath = argv[1];
  auto engine = dynb::Engine::load(options);
  if (!engine) {
    llvm::errs() << llvm::toString(engine.takeError()) << "\n";
    return 1;
  }
  auto E = (*engine)->param("E");
  auto leaf = (*engine)->module("leaf");
  auto internal = (*engine)->module("internal");
  if (!E || !leaf || !internal) {
    llvm::errs() << "the model is not a TreeLSTM (param E, modules leaf and "
                    "internal)\n";
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
    tree.output(root[0]);
  }
  auto results = (*engine)->run(batch);
  if (!results) {
    llvm::errs() << llvm::toString(results.takeError()) << "\n";
    return 1;
  }
  for (size_t i = 0; i < results->numInstances(); ++i)
    llvm::outs() << "tree " << i << ": h[0] = " << results->output(i, 0)[0]
                 << "\n";
  return 0;
}
