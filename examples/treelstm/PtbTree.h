//===- PtbTree.h - Binary PTB bracket trees (SST), parsed iteratively -----===//
//
// Reads the Stanford Sentiment Treebank's bracketed trees, one a line:
// `(label word)` for a preterminal, `(label left right)` for every other
// node. Nodes are stored flat in post-order, so a consumer can walk a tree
// children-first without recursion (trees can be very deep).
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_EXAMPLES_TREELSTM_PTBTREE_H
#define DYNB_EXAMPLES_TREELSTM_PTBTREE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace dynb::ptb {

/// One node of a tree. Strings point into the parsed text.
struct PtbNode {
  /// Post-order indices (within the tree) of the children; -1 for a
  /// preterminal.
  int32_t left = -1;
  int32_t right = -1;
  llvm::StringRef label;
  /// The word of a preterminal; empty otherwise.
  llvm::StringRef word;

  bool isPreterminal() const { return left < 0; }
};

struct PtbError;

/// All trees of a file, nodes of each in post-order (the root last).
class PtbTreebank {
public:
  size_t numTrees() const { return treeStart_.size() - 1; }
  llvm::ArrayRef<PtbNode> tree(size_t t) const {
    return llvm::ArrayRef<PtbNode>(nodes_).slice(
        treeStart_[t], treeStart_[t + 1] - treeStart_[t]);
  }
  /// 1-based line of the tree in the text.
  unsigned line(size_t t) const { return lines_[t]; }
  size_t numNodes() const { return nodes_.size(); }

private:
  friend bool parsePtbTrees(llvm::StringRef, PtbTreebank &, PtbError &);
  llvm::SmallVector<PtbNode, 0> nodes_;
  llvm::SmallVector<uint32_t, 0> treeStart_ = {0};
  llvm::SmallVector<unsigned, 0> lines_;
};

/// Where and why a tree is malformed.
struct PtbError {
  /// Points into the parsed text (for llvm::SourceMgr diagnostics).
  const char *loc = nullptr;
  /// 1-based number of the tree, counting non-blank lines.
  unsigned tree = 0;
  std::string message;
};

/// Parses every non-blank line of `text` as one binary tree, appending to
/// `trees`. Stops at the first malformed tree: returns false and fills
/// `error`.
bool parsePtbTrees(llvm::StringRef text, PtbTreebank &trees, PtbError &error);

} // namespace dynb::ptb

#endif // DYNB_EXAMPLES_TREELSTM_PTBTREE_H
