//===- RunReport.h - The JSON report of dynbc run --report -------*- C++
//-*-===//
//
// One object per strategy run, with every figure the table prints and the
// ones it does not (memory probes, profile split, plan statistics): the
// schema the benchmarks read (bench/README.md).
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DRIVER_RUNREPORT_H
#define DYNB_DRIVER_RUNREPORT_H

#include "dynb/Driver/Commands.h"
#include "dynb/Driver/Outputs.h"
#include "dynb/Driver/Session.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace dynb {

/// What a run was compared with, for the report's error fields.
struct CheckSummary {
  bool checked = false;
  Comparison comparison;
  double referenceSeconds = 0;
};

/// The report entry of strategy `strategy`'s run `r` over `instances`.
llvm::json::Object reportEntry(BatchingStrategy strategy, uint64_t instances,
                               const RunResult &r, const CheckSummary &check,
                               bool streamed, const MemoryBaseline &memory);

/// Writes {"input": inputPath, "results": entries} to `path` (atomically).
llvm::Error writeRunReport(llvm::StringRef path, llvm::StringRef inputPath,
                           llvm::json::Array entries);

} // namespace dynb

#endif // DYNB_DRIVER_RUNREPORT_H
