//===- FuzzCommon.h - Shared pieces of dynb's libFuzzer targets -*- C++ -*-===//
//
// One MLIRContext per target, reused across inputs (a fresh context an
// input costs more than most inputs do), with every diagnostic swallowed:
// hostile inputs are supposed to fail with diagnostics, never to crash.
// The context is replaced every kContextReuse inputs so that attributes and
// locations interned by earlier inputs do not pile up over a long run.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_TESTS_FUZZ_FUZZCOMMON_H
#define DYNB_TESTS_FUZZ_FUZZCOMMON_H

#include "FuzzAssert.h"

#include "dynb/Dialect/Registration.h"
#include "dynb/Import/GraphImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdlib>
#include <memory>

namespace dynb::fuzz {

constexpr unsigned kContextReuse = 20000;

class FuzzContext {
public:
  /// The context for the next input (a new one every kContextReuse calls).
  mlir::MLIRContext &next() {
    if (!ctx_ || ++uses_ >= kContextReuse) {
      handler_.reset();
      ctx_.reset();
      ctx_ = std::make_unique<mlir::MLIRContext>(
          mlir::MLIRContext::Threading::DISABLED);
      loadDynbDialects(*ctx_);
      // Keep diagnostics quiet (FUZZ_VERBOSE=1 prints them to stderr).
      if (!std::getenv("FUZZ_VERBOSE"))
        handler_ = std::make_unique<mlir::ScopedDiagnosticHandler>(
            ctx_.get(), [](mlir::Diagnostic &) { return mlir::success(); });
      uses_ = 0;
    }
    return *ctx_;
  }

private:
  std::unique_ptr<mlir::MLIRContext> ctx_;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler_;
  unsigned uses_ = 0;
};

} // namespace dynb::fuzz

#endif // DYNB_TESTS_FUZZ_FUZZCOMMON_H
