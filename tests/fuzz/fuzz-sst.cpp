//===- fuzz-sst.cpp - Fuzzes the PTB tree parser of examples/treelstm -----===//
//
// Input: treebank text, one bracketed tree a line. Besides not crashing,
// an accepted treebank must be well-formed: in every tree, children come
// before their parent (post-order), the root is last and every node but
// the root is the child of exactly one node.
//
//===----------------------------------------------------------------------===//
#include "FuzzAssert.h"

#include "PtbTree.h"

#include "llvm/ADT/SmallVector.h"

#include <cstddef>
#include <cstdint>

using namespace dynb::ptb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  PtbTreebank trees;
  PtbError error;
  if (!parsePtbTrees(text, trees, error)) {
    // The error points into the text.
    FUZZ_ASSERT_INVARIANT(
        !(error.loc && (error.loc < text.begin() || error.loc > text.end())));
    return 0;
  }
  size_t total = 0;
  llvm::SmallVector<uint8_t, 64> parents;
  for (size_t t = 0; t < trees.numTrees(); ++t) {
    llvm::ArrayRef<PtbNode> nodes = trees.tree(t);
    FUZZ_ASSERT_INVARIANT(!(nodes.empty()));
    total += nodes.size();
    parents.assign(nodes.size(), 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const PtbNode &n = nodes[i];
      FUZZ_ASSERT_INVARIANT(!(n.label.empty()));
      if (n.isPreterminal()) {
        FUZZ_ASSERT_INVARIANT(!(n.right != -1 || n.word.empty()));
        continue;
      }
      FUZZ_ASSERT_INVARIANT(!(!n.word.empty() || n.left < 0 || n.right < 0 ||
                              static_cast<size_t>(n.left) >= i ||
                              static_cast<size_t>(n.right) >= i));
      FUZZ_ASSERT_INVARIANT(!(parents[n.left]++ || parents[n.right]++));
    }
    for (size_t i = 0; i + 1 < nodes.size(); ++i)
      FUZZ_ASSERT_INVARIANT(!(parents[i] != 1));
    FUZZ_ASSERT_INVARIANT(!(parents.back() != 0));
  }
  FUZZ_ASSERT_INVARIANT(!(total != trees.numNodes()));
  return 0;
}
