//===- sst2dynb.cpp - Converts SST trees to dynb's interchange JSON -------===//
//
// Writes the binary TreeLSTM of docs/workloads.md §1 (parameters and the `leaf`
// and `internal` modules) and one instance per PTB tree, in the interchange
// format version 1 (one JSON document, or JSON Lines).
//
//===----------------------------------------------------------------------===//
#include "PtbTree.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace llvm;
using namespace dynb::ptb;

static cl::OptionCategory toolCategory("sst2dynb options");

static cl::opt<std::string> inputFilename(cl::Positional, cl::Required,
                                          cl::desc("<TREES.txt>"),
                                          cl::cat(toolCategory));
static cl::opt<std::string>
    outputFilename("o", cl::Required, cl::value_desc("OUT.json|OUT.jsonl"),
                   cl::desc("Output file; a .jsonl name writes JSON Lines "
                            "(the model, then one instance a line), any "
                            "other one JSON document; '-' writes one "
                            "document to stdout"),
                   cl::cat(toolCategory));
static cl::opt<std::string>
    vocabFilename("vocab", cl::value_desc("FILE"),
                  cl::desc("Vocabulary, one word a line: row i of E is line "
                           "i, plus a final row for unknown words. Default: "
                           "the words of the whole input file in order of "
                           "first appearance"),
                  cl::cat(toolCategory));
static cl::opt<std::string>
    writeVocabFilename("write-vocab", cl::value_desc("FILE"),
                       cl::desc("Also write the vocabulary used, one word a "
                                "line (without the unknown-word row)"),
                       cl::cat(toolCategory));
static cl::opt<unsigned> hdim("hdim", cl::init(256), cl::value_desc("N"),
                              cl::desc("Hidden size H (default 256)"),
                              cl::cat(toolCategory));
static cl::opt<unsigned>
    wdim("wdim", cl::value_desc("N"),
         cl::desc("Word embedding size W (default: the hidden size)"),
         cl::cat(toolCategory));
static cl::opt<unsigned>
    limit("limit", cl::value_desc("N"),
          cl::desc("Write instances for the first N trees only (every tree "
                   "is still checked, and the default vocabulary still "
                   "covers the whole file)"),
          cl::cat(toolCategory));

static cl::opt<bool> withLabels(
    "labels",
    cl::desc("Add the sentiment classifier and its losses: W_s [5 x H] and "
             "b_s [5] on every node's h, and a softmax_xent against the "
             "node's label (0-4) on every node of every tree"),
    cl::cat(toolCategory));

/// SST's five sentiment classes, labels 0 (very negative) to 4.
static constexpr int64_t kSentimentClasses = 5;

static constexpr StringLiteral toolName = "sst2dynb";

static void reportError(const Twine &message) {
  WithColor::error(errs(), toolName) << message << "\n";
}

//===----------------------------------------------------------------------===//
// Vocabulary
//===----------------------------------------------------------------------===//

namespace {
/// Words and their rows in E; unknown words map to row size().
class Vocabulary {
public:
  /// Returns the row of `word`, or unknown() if absent.
  uint32_t lookup(StringRef word) const {
    auto it = rows_.find(word);
    return it == rows_.end() ? unknown() : it->second;
  }
  /// Adds `word` at the next row; returns false if it was already present.
  bool add(StringRef word) {
    if (!rows_.try_emplace(word, words_.size()).second)
      return false;
    words_.push_back(word);
    return true;
  }
  uint32_t unknown() const { return words_.size(); }
  ArrayRef<StringRef> words() const { return words_; }

private:
  StringMap<uint32_t> rows_;
  SmallVector<StringRef, 0> words_;
};
} // namespace

/// Reads a vocabulary file into `vocab` (words point into the buffer, which
/// `sm` keeps). Reports located errors through `sm`.
static bool readVocabulary(SourceMgr &sm, StringRef path, Vocabulary &vocab) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/true);
  if (std::error_code ec = buffer.getError()) {
    reportError("cannot read vocabulary '" + path + "': " + ec.message());
    return false;
  }
  unsigned id = sm.AddNewSourceBuffer(std::move(*buffer), SMLoc());
  StringRef text = sm.getMemoryBuffer(id)->getBuffer();
  // Row i is line i: every line counts, so an empty line (other than after
  // the final newline) would silently shift rows and is an error.
  unsigned lineNumber = 0;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNumber;
    StringRef word = line.rtrim('\r');
    if (word.empty()) {
      sm.PrintMessage(SMLoc::getFromPointer(line.data()), SourceMgr::DK_Error,
                      "empty line " + Twine(lineNumber) +
                          " in the vocabulary (line i is row i of E)");
      return false;
    }
    if (!vocab.add(word)) {
      sm.PrintMessage(SMLoc::getFromPointer(line.data()), SourceMgr::DK_Error,
                      "duplicate word '" + word +
                          "' in the vocabulary (first "
                          "on line " +
                          Twine(vocab.lookup(word) + 1) + ")");
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// Writes a node reference: `i` for result 0, `[i, r]` otherwise.
static void writeRef(json::OStream &j, int64_t node, int64_t result) {
  if (result == 0) {
    j.value(node);
    return;
  }
  j.array([&] {
    j.value(node);
    j.value(result);
  });
}

namespace {
/// Emits one module's nodes in order and hands out their indices, so the
/// cell reads like the equations it implements.
class ModuleWriter {
public:
  explicit ModuleWriter(json::OStream &j) : j(j) {}

  int64_t arg(int64_t size) {
    return node("arg", {},
                [&] { j.attributeArray("shape", [&] { j.value(size); }); });
  }
  int64_t linear(int64_t in, StringRef weight, StringRef bias) {
    return node("linear", {in}, [&] {
      j.attribute("weight", weight);
      j.attribute("bias", bias);
    });
  }
  int64_t slice(int64_t in, int64_t offset, int64_t size) {
    return node("slice", {in}, [&] {
      j.attribute("offset", offset);
      j.attribute("size", size);
    });
  }
  int64_t unary(StringRef op, int64_t in) { return node(op, {in}); }
  int64_t binary(StringRef op, int64_t a, int64_t b) {
    return node(op, {a, b});
  }

private:
  int64_t node(StringRef op, ArrayRef<int64_t> inputs,
               function_ref<void()> attrs = nullptr) {
    j.object([&] {
      j.attribute("op", op);
      if (!inputs.empty())
        j.attributeArray("inputs", [&] {
          for (int64_t in : inputs)
            j.value(in);
        });
      if (attrs)
        attrs();
    });
    return next++;
  }

  json::OStream &j;
  int64_t next = 0;
};
} // namespace

static void writeShape(json::OStream &j, ArrayRef<int64_t> shape) {
  j.array([&] {
    for (int64_t d : shape)
      j.value(d);
  });
}

/// The "model" object: parameters and the two cell modules.
static void writeModel(json::OStream &j, int64_t vocabRows, int64_t h,
                       int64_t w, bool labels) {
  j.object([&] {
    j.attributeArray("params", [&] {
      auto param = [&](StringRef name, ArrayRef<int64_t> shape) {
        j.object([&] {
          j.attribute("name", name);
          j.attributeBegin("shape");
          writeShape(j, shape);
          j.attributeEnd();
        });
      };
      param("E", {vocabRows, w});
      param("W_iou", {3 * h, w});
      param("b_iou", {3 * h});
      param("U_iou", {3 * h, 2 * h});
      param("U_f1", {h, h});
      param("U_f2", {h, h});
      param("b_f", {h});
      if (labels) {
        param("W_s", {kSentimentClasses, h});
        param("b_s", {kSentimentClasses});
      }
    });
    j.attributeArray("modules", [&] {
      // leaf(x) -> (h, c)
      j.object([&] {
        j.attribute("name", "leaf");
        int64_t hOut = 0, cOut = 0;
        j.attributeArray("nodes", [&] {
          ModuleWriter m(j);
          int64_t x = m.arg(w);
          int64_t iou = m.linear(x, "W_iou", "b_iou");
          int64_t i = m.unary("sigmoid", m.slice(iou, 0, h));
          int64_t o = m.unary("sigmoid", m.slice(iou, h, h));
          int64_t u = m.unary("tanh", m.slice(iou, 2 * h, h));
          cOut = m.binary("mul", i, u);
          hOut = m.binary("mul", o, m.unary("tanh", cOut));
        });
        j.attributeArray("outputs", [&] {
          j.value(hOut);
          j.value(cOut);
        });
      });
      // internal(h1, c1, h2, c2) -> (h, c)
      j.object([&] {
        j.attribute("name", "internal");
        int64_t hOut = 0, cOut = 0;
        j.attributeArray("nodes", [&] {
          ModuleWriter m(j);
          int64_t h1 = m.arg(h), c1 = m.arg(h), h2 = m.arg(h), c2 = m.arg(h);
          int64_t cat = m.binary("concat", h1, h2);
          int64_t iou = m.linear(cat, "U_iou", "b_iou");
          int64_t i = m.unary("sigmoid", m.slice(iou, 0, h));
          int64_t o = m.unary("sigmoid", m.slice(iou, h, h));
          int64_t u = m.unary("tanh", m.slice(iou, 2 * h, h));
          int64_t f1 = m.unary("sigmoid", m.linear(h1, "U_f1", "b_f"));
          int64_t f2 = m.unary("sigmoid", m.linear(h2, "U_f2", "b_f"));
          // One statement per node: argument evaluation order is
          // unspecified, and it would decide the node numbering.
          int64_t iu = m.binary("mul", i, u);
          int64_t f1c1 = m.binary("mul", f1, c1);
          int64_t sum = m.binary("add", iu, f1c1);
          int64_t f2c2 = m.binary("mul", f2, c2);
          int64_t c = m.binary("add", sum, f2c2);
          cOut = c;
          hOut = m.binary("mul", o, m.unary("tanh", c));
        });
        j.attributeArray("outputs", [&] {
          j.value(hOut);
          j.value(cOut);
        });
      });
    });
  });
}

/// One instance object: the tree's nodes in post-order, the root's h out;
/// with `labels`, each node's cell is followed by its classifier and loss.
static void writeInstance(json::OStream &j, ArrayRef<PtbNode> tree,
                          const Vocabulary &vocab, bool labels,
                          SmallVectorImpl<int64_t> &callOf) {
  // callOf[k] is the instance node computing tree node k's (h, c).
  callOf.assign(tree.size(), -1);
  j.object([&] {
    j.attributeArray("nodes", [&] {
      int64_t next = 0;
      for (size_t k = 0; k != tree.size(); ++k) {
        const PtbNode &node = tree[k];
        if (node.isPreterminal()) {
          j.object([&] {
            j.attribute("op", "embedding");
            j.attribute("table", "E");
            j.attribute("index", int64_t(vocab.lookup(node.word)));
          });
          int64_t embedding = next++;
          j.object([&] {
            j.attribute("op", "call");
            j.attribute("module", "leaf");
            j.attributeArray("inputs", [&] { writeRef(j, embedding, 0); });
          });
        } else {
          int64_t left = callOf[node.left], right = callOf[node.right];
          j.object([&] {
            j.attribute("op", "call");
            j.attribute("module", "internal");
            // Always pairs here, as in the format's example.
            j.attributeArray("inputs", [&] {
              for (auto [n, r] : {std::pair<int64_t, int64_t>{left, 0},
                                  {left, 1},
                                  {right, 0},
                                  {right, 1}})
                j.array([&] {
                  j.value(n);
                  j.value(r);
                });
            });
          });
        }
        callOf[k] = next++;
        if (labels) {
          int64_t cell = callOf[k];
          j.object([&] {
            j.attribute("op", "linear");
            j.attribute("weight", "W_s");
            j.attribute("bias", "b_s");
            j.attributeArray("inputs", [&] { writeRef(j, cell, 0); });
          });
          int64_t logits = next++;
          j.object([&] {
            j.attribute("op", "softmax_xent");
            j.attribute("label", int64_t(node.label.front() - '0'));
            j.attributeArray("inputs", [&] { writeRef(j, logits, 0); });
          });
          ++next;
        }
      }
    });
    j.attributeArray("outputs", [&] {
      j.array([&] {
        j.value(callOf.back());
        j.value(0);
      });
    });
  });
}

/// Writes the whole conversion to `os`.
static void writeConversion(raw_ostream &os, bool jsonLines,
                            const PtbTreebank &trees, size_t numTrees,
                            const Vocabulary &vocab, int64_t h, int64_t w,
                            bool labels) {
  int64_t vocabRows = int64_t(vocab.words().size()) + 1;
  SmallVector<int64_t, 0> callOf;
  if (jsonLines) {
    {
      json::OStream j(os);
      j.object([&] {
        j.attribute("dynb", 1);
        j.attributeBegin("model");
        writeModel(j, vocabRows, h, w, labels);
        j.attributeEnd();
      });
    }
    os << '\n';
    for (size_t t = 0; t != numTrees; ++t) {
      {
        json::OStream j(os);
        writeInstance(j, trees.tree(t), vocab, labels, callOf);
      }
      os << '\n';
    }
    return;
  }
  json::OStream j(os);
  j.object([&] {
    j.attribute("dynb", 1);
    j.attributeBegin("model");
    writeModel(j, vocabRows, h, w, labels);
    j.attributeEnd();
    j.attributeArray("instances", [&] {
      for (size_t t = 0; t != numTrees; ++t)
        writeInstance(j, trees.tree(t), vocab, labels, callOf);
    });
  });
  os << '\n';
}

/// Writes through a temporary file renamed over `path` at the end, so a
/// failed run never leaves a partial output. `path` "-" is stdout; an
/// existing non-regular file (/dev/null, a pipe) is written in place, since
/// renaming over it would replace the device.
static bool writeFileAtomically(StringRef path,
                                function_ref<void(raw_ostream &)> write) {
  if (path == "-") {
    write(outs());
    outs().flush();
    return true;
  }
  sys::fs::file_status status;
  if (!sys::fs::status(path, status) && sys::fs::exists(status) &&
      !sys::fs::is_regular_file(status)) {
    std::error_code ec;
    raw_fd_ostream os(path, ec);
    if (!ec) {
      write(os);
      os.flush();
      ec = os.error();
      os.clear_error();
    }
    if (ec) {
      reportError("cannot write '" + path + "': " + ec.message());
      return false;
    }
    return true;
  }
  Expected<sys::fs::TempFile> temp =
      sys::fs::TempFile::create(path + ".tmp-%%%%%%");
  if (!temp) {
    reportError("cannot write '" + path + "': " + toString(temp.takeError()));
    return false;
  }
  std::error_code writeError;
  {
    raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    write(os);
    os.flush();
    writeError = os.error();
    os.clear_error();
  }
  if (writeError) {
    reportError("cannot write '" + path + "': " + writeError.message());
    consumeError(temp->discard());
    return false;
  }
  if (Error e = temp->keep(path)) {
    reportError("cannot write '" + path + "': " + toString(std::move(e)));
    consumeError(temp->discard());
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(toolCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "SST trees -> dynb interchange format (version 1)\n\n"
      "Reads binary PTB bracket trees, one a line (blank lines skipped), and "
      "writes\nthe binary TreeLSTM model (parameters E, W_iou, b_iou, U_iou, "
      "U_f1, U_f2, b_f;\nmodules 'leaf' and 'internal') and one instance per "
      "tree: its nodes in\npost-order, an embedding and a 'leaf' call per "
      "word, an 'internal' call per\ninner node; the instance's output is "
      "the root's h.\n\nWith --labels, every node also gets the sentiment "
      "classifier (W_s, b_s) on\nits h and a softmax_xent loss against its "
      "label: the training task.\n");

  if (hdim == 0 || (wdim.getNumOccurrences() && wdim == 0)) {
    reportError("--hdim and --wdim must be positive");
    return 1;
  }
  int64_t h = hdim;
  int64_t w = wdim.getNumOccurrences() ? int64_t(wdim) : h;

  SourceMgr sm;
  ErrorOr<std::unique_ptr<MemoryBuffer>> input =
      MemoryBuffer::getFileOrSTDIN(inputFilename, /*IsText=*/true);
  if (std::error_code ec = input.getError()) {
    reportError("cannot read '" + inputFilename + "': " + ec.message());
    return 1;
  }
  unsigned inputId = sm.AddNewSourceBuffer(std::move(*input), SMLoc());

  PtbTreebank trees;
  PtbError error;
  if (!parsePtbTrees(sm.getMemoryBuffer(inputId)->getBuffer(), trees, error)) {
    sm.PrintMessage(SMLoc::getFromPointer(error.loc), SourceMgr::DK_Error,
                    "tree " + Twine(error.tree) + ": " + error.message);
    return 1;
  }

  Vocabulary vocab;
  if (!vocabFilename.empty()) {
    if (!readVocabulary(sm, vocabFilename, vocab))
      return 1;
  } else {
    for (size_t t = 0; t != trees.numTrees(); ++t)
      for (const PtbNode &node : trees.tree(t))
        if (node.isPreterminal())
          vocab.add(node.word);
  }

  // Every node's label must be a class, checked before anything is written.
  if (withLabels)
    for (size_t t = 0; t != trees.numTrees(); ++t)
      for (const PtbNode &node : trees.tree(t))
        if (node.label.size() != 1 || node.label.front() < '0' ||
            node.label.front() >= char('0' + kSentimentClasses)) {
          sm.PrintMessage(SMLoc::getFromPointer(node.label.data()),
                          SourceMgr::DK_Error,
                          "tree " + Twine(t + 1) + ": label '" + node.label +
                              "' is not a sentiment class 0-4 (--labels)");
          return 1;
        }

  size_t numTrees = trees.numTrees();
  if (limit.getNumOccurrences())
    numTrees = std::min<size_t>(numTrees, limit);
  bool jsonLines = sys::path::extension(outputFilename) == ".jsonl";

  if (!writeVocabFilename.empty() &&
      !writeFileAtomically(writeVocabFilename, [&](raw_ostream &os) {
        for (StringRef word : vocab.words())
          os << word << '\n';
      }))
    return 1;
  if (!writeFileAtomically(outputFilename, [&](raw_ostream &os) {
        writeConversion(os, jsonLines, trees, numTrees, vocab, h, w,
                        withLabels);
      }))
    return 1;
  return 0;
}
