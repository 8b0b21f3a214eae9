//===- Gather.cpp - Copies scattered source rows into a destination window ===//
#include "StepRunners.h"

#include <cstring>

using namespace dynb::rt;

void dynb::rt::runGather(const GatherStep &step,
                         const ResolvedBuffers &resolved, ThreadPool &pool,
                         int64_t parallelMinBytes) {
  const Region &dst = step.dst;
  size_t rowBytes = static_cast<size_t>(dst.cols) * sizeof(float);
  int64_t numRows = static_cast<int64_t>(step.sources.size());
  if (numRows == 0 || rowBytes == 0)
    return;

  // A gather that reads its own destination buffer may have overlapping
  // rows: memmove and one thread keep it well defined.
  bool readsDestination = false;
  for (const RowRef &source : step.sources)
    readsDestination |= source.buffer == dst.buffer;

  auto copyRows = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const RowRef &source = step.sources[i];
      float *to = resolved.at(dst.buffer, dst.row + i, dst.col);
      const float *from = resolved.at(source.buffer, source.row, step.srcCol);
      if (readsDestination)
        std::memmove(to, from, rowBytes);
      else
        std::memcpy(to, from, rowBytes);
    }
  };
  int64_t totalBytes = numRows * static_cast<int64_t>(rowBytes);
  if (readsDestination || totalBytes <= parallelMinBytes ||
      pool.numThreads() == 1)
    copyRows(0, numRows);
  else
    pool.parallelFor(numRows, copyRows);
}
