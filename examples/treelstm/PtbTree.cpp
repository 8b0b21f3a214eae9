//===- PtbTree.cpp - Binary PTB bracket trees (SST), parsed iteratively ---===//
//
// A hand-written scanner with an explicit stack of open nodes: no recursion,
// so a 100,000-deep tree parses like a shallow one.
//
//===----------------------------------------------------------------------===//
#include "PtbTree.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

using namespace dynb::ptb;

namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

bool isAtomChar(char c) { return !isSpace(c) && c != '(' && c != ')'; }

/// A node whose ')' has not been seen yet.
struct OpenNode {
  const char *open;
  llvm::StringRef label;
  llvm::StringRef word;
  int32_t children[2] = {-1, -1};
  unsigned numChildren = 0;
};

/// Parses one non-blank line; appends its nodes in post-order to `nodes`.
bool parseTree(llvm::StringRef line, unsigned treeNumber,
               llvm::SmallVectorImpl<PtbNode> &nodes,
               llvm::SmallVectorImpl<OpenNode> &stack, PtbError &error) {
  auto fail = [&](const char *loc, const llvm::Twine &message) {
    error.loc = loc;
    error.tree = treeNumber;
    error.message = message.str();
    return false;
  };
  const size_t base = nodes.size();
  const size_t end = line.size();
  stack.clear();
  bool done = false;
  size_t i = 0;
  while (i != end && isSpace(line[i]))
    ++i;
  if (line[i] != '(')
    return fail(line.data() + i, "expected '(' to start a tree");

  while (i != end) {
    char c = line[i];
    const char *loc = line.data() + i;
    if (isSpace(c)) {
      ++i;
      continue;
    }
    if (done) {
      if (c == ')')
        return fail(loc, "unbalanced parentheses: ')' closes nothing");
      return fail(loc, "unexpected text after the end of the tree");
    }

    if (c == '(') {
      if (!stack.empty()) {
        OpenNode &parent = stack.back();
        if (!parent.word.empty())
          return fail(loc, "a node has both a word and a subtree (a "
                           "preterminal has one word, any other node two "
                           "subtrees)");
        if (parent.numChildren == 2)
          return fail(loc, "a node has more than two children (a binary "
                           "tree node has exactly two)");
      }
      ++i;
      size_t labelStart = i;
      while (i != end && isAtomChar(line[i]))
        ++i;
      if (i == labelStart)
        return fail(line.data() + labelStart, "expected a label after '('");
      OpenNode node;
      node.open = loc;
      node.label = line.slice(labelStart, i);
      stack.push_back(node);
      continue;
    }

    if (c == ')') {
      OpenNode node = stack.pop_back_val();
      PtbNode closed;
      closed.label = node.label;
      if (!node.word.empty()) {
        closed.word = node.word;
      } else if (node.numChildren == 2) {
        closed.left = node.children[0];
        closed.right = node.children[1];
      } else if (node.numChildren == 1) {
        return fail(node.open, "a node has one child (a binary tree node "
                               "has exactly two)");
      } else {
        return fail(node.open, "a node has neither a word nor children");
      }
      int32_t index = static_cast<int32_t>(nodes.size() - base);
      nodes.push_back(closed);
      if (stack.empty())
        done = true;
      else
        stack.back().children[stack.back().numChildren++] = index;
      ++i;
      continue;
    }

    // A word.
    size_t wordStart = i;
    while (i != end && isAtomChar(line[i]))
      ++i;
    OpenNode &node = stack.back();
    if (!node.word.empty())
      return fail(loc, "a preterminal has more than one word");
    if (node.numChildren != 0)
      return fail(loc, "a node has both subtrees and a word (a preterminal "
                       "has one word, any other node two subtrees)");
    node.word = line.slice(wordStart, i);
  }
  if (!done)
    return fail(line.data() + end,
                "unbalanced parentheses: " + llvm::Twine(stack.size()) +
                    " '(' still open at the end of the line");
  return true;
}

} // namespace

bool dynb::ptb::parsePtbTrees(llvm::StringRef text, PtbTreebank &trees,
                              PtbError &error) {
  llvm::SmallVector<OpenNode, 64> stack;
  unsigned lineNumber = 0, treeNumber = trees.numTrees();
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNumber;
    if (llvm::all_of(line, isSpace))
      continue;
    ++treeNumber;
    size_t before = trees.nodes_.size();
    if (!parseTree(line, treeNumber, trees.nodes_, stack, error)) {
      trees.nodes_.truncate(before);
      return false;
    }
    trees.treeStart_.push_back(trees.nodes_.size());
    trees.lines_.push_back(lineNumber);
  }
  return true;
}
