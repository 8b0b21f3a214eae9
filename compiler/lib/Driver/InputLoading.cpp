//===- InputLoading.cpp - A command's input into the Session --------------===//
#include "dynb/Driver/Commands.h"
#include "dynb/Engine/InterchangeSource.h"

using namespace mlir;
using namespace dynb;

LogicalResult dynb::openInput(Session &session, const InputOptions &options) {
  session.setLimits(options.limits);
  session.kernels().setObjectStore(
      KernelObjectStore::open(options.kernelCache));
  llvm::StringRef path = options.path;
  std::unique_ptr<InterchangeSource> source;
  std::string notRecords;
  // --stream of a document is openStream's error to report.
  if (options.recordFrontEnd && !(options.stream && path.ends_with(".json")))
    source = InterchangeSource::open(path, options.limits, notRecords,
                                     options.kernelCache);
  if (options.stream) {
    if (failed(session.openStream(path)))
      return failure();
  } else if (source) {
    if (failed(session.loadJsonGraphs(path, source->modelJson())))
      return failure();
  } else if (failed(session.loadGraphs(path))) {
    return failure();
  }
  if (source)
    session.setPlanner(std::move(source), path);
  return success();
}
