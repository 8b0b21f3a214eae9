//===- SstTreeLstm.h - SST trees built through the embedded API -*- C++ -*-===//
//
// Shared by the embed example, the API benchmark and the engine tests: SST
// trees (PTB brackets) with the vocabulary `sst2dynb` uses by default
// (words in first-appearance order over the whole file, unknown words on
// the last row of E), and the binary TreeLSTM of docs/workloads.md §1 built
// through Instance handles: the same graphs `sst2dynb` writes.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_EXAMPLES_EMBED_SSTTREELSTM_H
#define DYNB_EXAMPLES_EMBED_SSTTREELSTM_H

#include "../treelstm/PtbTree.h"
#include "dynb/Engine/Engine.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace dynb::sst {

/// The trees of one file and their vocabulary.
struct SstFile {
  std::unique_ptr<llvm::MemoryBuffer> text;
  ptb::PtbTreebank trees;
  llvm::StringMap<uint32_t> vocab;
  /// rows[treeStart[t] + k]: the row of E of node k of tree t (words are
  /// looked up once here, as an application holds token ids).
  llvm::SmallVector<uint32_t, 0> rows;
  llvm::SmallVector<uint32_t, 0> treeStart;

  /// The row of E for `word` (the last row for unknown words).
  uint32_t row(llvm::StringRef word) const {
    auto it = vocab.find(word);
    return it == vocab.end() ? vocab.size() : it->second;
  }
};

inline llvm::Expected<std::unique_ptr<SstFile>> readSst(llvm::StringRef path) {
  auto file = std::make_unique<SstFile>();
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read '" + path + "'");
  file->text = std::move(*buffer);
  ptb::PtbError error;
  if (!ptb::parsePtbTrees(file->text->getBuffer(), file->trees, error))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": tree " + llvm::Twine(error.tree) +
                                       ": " + error.message);
  for (size_t t = 0; t < file->trees.numTrees(); ++t)
    for (const ptb::PtbNode &n : file->trees.tree(t))
      if (n.isPreterminal())
        file->vocab.try_emplace(n.word, file->vocab.size());
  for (size_t t = 0; t < file->trees.numTrees(); ++t) {
    file->treeStart.push_back(file->rows.size());
    for (const ptb::PtbNode &n : file->trees.tree(t))
      file->rows.push_back(n.isPreterminal() ? file->row(n.word) : 0);
  }
  return std::move(file);
}

/// The model's handles, resolved once.
struct TreeLstmHandles {
  Param E;
  Module leaf, internal;

  static llvm::Expected<TreeLstmHandles> resolve(const Engine &engine) {
    TreeLstmHandles h;
    auto E = engine.param("E");
    auto leaf = engine.module("leaf");
    auto internal = engine.module("internal");
    if (!E)
      return E.takeError();
    if (!leaf)
      return leaf.takeError();
    if (!internal)
      return internal.takeError();
    h.E = *E;
    h.leaf = *leaf;
    h.internal = *internal;
    return h;
  }
};

/// Builds tree `t` as one instance whose output is the root's h. Nodes are
/// in post-order, so children come first; `hc` is scratch.
inline void buildTree(Instance &inst, const SstFile &file, size_t t,
                      const TreeLstmHandles &h,
                      llvm::SmallVectorImpl<std::pair<Value, Value>> &hc) {
  llvm::ArrayRef<ptb::PtbNode> tree = file.trees.tree(t);
  const uint32_t *rows = file.rows.data() + file.treeStart[t];
  hc.resize(tree.size());
  for (size_t k = 0; k < tree.size(); ++k) {
    const ptb::PtbNode &n = tree[k];
    llvm::SmallVector<Value, 2> r;
    if (n.isPreterminal()) {
      Value x = inst.embedding(h.E, rows[k]);
      r = inst.call(h.leaf, {x});
    } else {
      auto [h1, c1] = hc[n.left];
      auto [h2, c2] = hc[n.right];
      r = inst.call(h.internal, {h1, c1, h2, c2});
    }
    hc[k] = {r[0], r[1]};
  }
  inst.output(hc.back().first);
}

} // namespace dynb::sst

#endif // DYNB_EXAMPLES_EMBED_SSTTREELSTM_H
