//===- PlanAssembler.h - Batched launches as runtime plan steps -*- C++ -*-===//
//
// The one place that turns a schedule (embedding lookups, gathers, module
// and per-instance-op launches, dispatches, outputs) into rt::Plan steps
// and buffers. It knows nothing of MLIR: PlanBuilder feeds it from a
// `dynb.schedule` (the CLI path), the embedded Engine from its node arena
// (the fast path), so both produce plans the same way.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_LOWERING_PLANASSEMBLER_H
#define DYNB_LOWERING_PLANASSEMBLER_H

#include "dynb/Lowering/LoweredSteps.h"
#include "dynb/Runtime/Plan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <optional>
#include <utility>

namespace dynb {

struct PlanStats {
  uint64_t launches = 0;       // batched ops of the schedule
  uint64_t gathersCopied = 0;  // gathers that copy rows
  uint64_t gathersAsViews = 0; // gathers that became views (no copy)
  uint64_t concatsPlaced = 0;  // concats whose inputs were gathered in place
};

/// A batched value during assembly: a window of a buffer, and when a
/// row-copying gather made it for a single use, that gather's step (so a
/// concat of module arguments may redirect the copy into its own buffer).
struct AssembledValue {
  rt::Region region;
  int64_t copyStep = -1;
};

/// A `dynb.dispatch` launch (a mixture of experts over x's rows).
struct DispatchLaunch {
  rt::Region x;
  llvm::StringRef gate;
  std::optional<llvm::StringRef> noise;
  uint64_t noiseSeed = 0;
  int64_t topK = 1;
  int64_t outCols = 0;
};

class PlanAssembler {
public:
  /// The [rows x cols] buffer shape of a parameter, by name.
  /// Called once per parameter and plan.
  using ParamShapeFn =
      std::function<std::pair<int64_t, int64_t>(llvm::StringRef)>;

  PlanAssembler(ParamShapeFn shapeOf, PlanStats &stats)
      : shapeOf_(std::move(shapeOf)), stats_(stats) {}

  /// The parameter's buffer (one per name and plan).
  rt::BufferId paramBuffer(llvm::StringRef name);
  /// A batched embedding: rows `indices` of `table`. One launch; a view of
  /// the table (no copy) when the rows are consecutive.
  rt::Region lookup(llvm::StringRef table, llvm::ArrayRef<int64_t> indices);
  /// Likewise from rows of the caller's memory ([rows x cols], read-only
  /// and valid while the plan runs): values an earlier run computed.
  rt::Region hostLookup(const float *data, int64_t rows, int64_t cols,
                        llvm::ArrayRef<int64_t> indices);
  /// The softmax cross-entropy of each row of `logits` against its label:
  /// a [rows x 1] value that is also one of the plan's loss terms. One
  /// launch.
  rt::Region softmaxXent(const rt::Region &logits,
                         llvm::ArrayRef<int64_t> labels);
  /// Its logits' adjoint, row by row: softmax minus the one-hot label, a
  /// value the size of `logits` and no loss term. One launch.
  rt::Region softmaxXentGrad(const rt::Region &logits,
                             llvm::ArrayRef<int64_t> labels);
  /// Stacks rows of earlier values: row i is row pairs[2i+1] of
  /// sources[pairs[2i]]. Consecutive rows of one value become a view; any
  /// other gather copies rows into a new buffer of `cols` columns.
  AssembledValue gather(llvm::ArrayRef<rt::Region> sources,
                        llvm::ArrayRef<int64_t> pairs, int64_t cols);
  /// Runs module `m` on `n` rows of `args` (one per module argument) and
  /// appends its results' regions to `results`. One launch. May redirect
  /// the arguments' copying gathers into a concat buffer.
  void launch(const LoweredSteps &m, int64_t n,
              llvm::MutableArrayRef<AssembledValue> args,
              llvm::SmallVectorImpl<rt::Region> &results);
  /// A mixture-of-experts dispatch running `experts` per chosen expert;
  /// returns its output. One launch.
  rt::Region dispatch(const DispatchLaunch &d, const LoweredSteps &experts);
  /// A copy of batched feature maps `r` ([rows x channels*height*width])
  /// between PyTorch's plain C x H x W order and the runtime's map layout,
  /// in a fresh buffer.
  rt::Region relayoutMaps(const rt::Region &r, int64_t channels, int64_t height,
                          int64_t width, bool toMapLayout);
  /// The gradient buffer of a parameter (one per name and plan).
  rt::BufferId gradBuffer(llvm::StringRef name);
  /// Adds a linear launch's weight (and bias) gradients, dyᵀ x over the
  /// rows. One launch.
  void linearGrad(const rt::Region &dy, const rt::Region &x,
                  llvm::StringRef weight, llvm::StringRef bias);
  /// Adds row i of `dy` to row rows[i] of the table's gradient. One launch.
  void embeddingGrad(const rt::Region &dy, llvm::StringRef table,
                     llvm::ArrayRef<int64_t> rows);
  /// A [rows x cols] value of zeros. One launch.
  rt::Region zeros(int64_t rows, int64_t cols);
  /// Marks a region as an output: live to the end of the plan.
  void addOutput(const rt::Region &r) { plan_.outputs.push_back(r); }
  /// Plans the arena and hands the plan over.
  rt::Plan finish();

private:
  rt::Region fullRegion(rt::BufferId id) const {
    const rt::BufferDesc &d = plan_.buffers[id];
    return {id, 0, d.rows, 0, d.cols};
  }
  /// Rows `indices` of table buffer `t`, which no step writes.
  rt::Region lookupRows(rt::BufferId t, llvm::ArrayRef<int64_t> indices);
  rt::Region newValue(int64_t rows, int64_t cols) {
    return fullRegion(plan_.addArenaBuffer(rows, cols));
  }
  /// A copy of `r` into a fresh buffer whose columns start at 0.
  rt::Region compact(const rt::Region &r);
  /// `r` itself when it spans whole rows of its buffer (map steps read whole
  /// rows), else a compact copy.
  rt::Region wholeRows(const rt::Region &r);
  /// A module's map step (MapLowering.cpp's form) on resolved regions.
  rt::MapStep mapStep(const LoweredStep &s, llvm::ArrayRef<rt::Region> inputs,
                      const rt::Region &out);
  /// Gathers the concat's arguments straight into its buffer when every
  /// one of them is a row copy made for this use alone.
  bool placeConcatArgs(const LoweredStep &s,
                       llvm::MutableArrayRef<AssembledValue> args,
                       rt::BufferId dst, int64_t n);
  void appendSteps(const LoweredSteps &m, int64_t rows,
                   llvm::function_ref<rt::Region(const SlotRef &)> resolve,
                   llvm::ArrayRef<bool> skip, std::vector<rt::Step> &out);

  ParamShapeFn shapeOf_;
  PlanStats &stats_;
  rt::Plan plan_;
  llvm::StringMap<rt::BufferId> params_;
  llvm::StringMap<rt::BufferId> grads_;
};

} // namespace dynb

#endif // DYNB_LOWERING_PLANASSEMBLER_H
