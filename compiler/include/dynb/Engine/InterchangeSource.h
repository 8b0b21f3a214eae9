//===- InterchangeSource.h - Interchange files read into node records -*- C++
//-*-===//
//
// dynbc's front end for the JSON interchange (docs/interchange.md): the
// instances of a `.json` document or a `.jsonl` file are parsed with
// simdjson straight into an Engine's node arena (the records the batching
// library and PlanAssembler read), with no MLIR per node and no DOM or
// index of the file: a line, or a document's element (found by following
// strings and brackets), is indexed by itself. The model still goes through the
// importer, once, and its modules through the kernel cache. Plans come from the
// same walk as Engine::run (detail::assembleGraph), in the order the dynb-batch
// pass would make them, so they are the pass's plans step for step (tested).
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_ENGINE_INTERCHANGESOURCE_H
#define DYNB_ENGINE_INTERCHANGESOURCE_H

#include "dynb/Driver/Session.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace dynb {

class InterchangeSource : public BatchPlanner {
public:
  /// Opens `path` (`.jsonl`: JSON Lines; `.json`: a document) and loads
  /// its model into a planning Engine. Null, with the reason in `whyNot`,
  /// when this reader does not take the file: another suffix, a CLEVR
  /// question file, anything amiss at the top level or in the model (the
  /// importer then reports it), or a model the records cannot plan
  /// (feature maps).
  static std::unique_ptr<InterchangeSource>
  open(llvm::StringRef path, const SessionLimits &limits, std::string &whyNot,
       const KernelCacheOptions &kernelCache = {});
  /// The same over text in memory; `name` (ending in .json or .jsonl)
  /// decides the form and names it in messages.
  static std::unique_ptr<InterchangeSource>
  openText(llvm::StringRef name, llvm::StringRef text,
           const SessionLimits &limits, std::string &whyNot,
           const KernelCacheOptions &kernelCache = {});
  ~InterchangeSource() override;

  /// The model (and the file's version member) as an interchange text of
  /// its own, for Session::loadJsonGraphs under the file's name.
  llvm::StringRef modelJson() const;

  uint64_t numInstances() const override;
  llvm::Error readAll(int64_t batchSize) override;
  llvm::Error rewind() override;
  llvm::Expected<bool> readNext(size_t n) override;
  uint64_t instancesHeld() const override;
  double indexSeconds() const override;
  llvm::Expected<std::vector<rt::Plan>> plan(BatchingStrategy strategy,
                                             RunResult &result) override;

  struct Impl;

private:
  explicit InterchangeSource(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace dynb

#endif // DYNB_ENGINE_INTERCHANGESOURCE_H
