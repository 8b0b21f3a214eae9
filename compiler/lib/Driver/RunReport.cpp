//===- RunReport.cpp - The JSON report of dynbc run --report --------------===//
#include "dynb/Driver/RunReport.h"
#include "dynb/Driver/MemoryProbes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace dynb;

template <typename T> static llvm::json::Array jsonArray(const T &values) {
  return llvm::json::Array(
      std::vector<llvm::json::Value>(values.begin(), values.end()));
}

llvm::json::Object dynb::reportEntry(BatchingStrategy strategy,
                                     uint64_t instances, const RunResult &r,
                                     const CheckSummary &check, bool streamed,
                                     const MemoryBaseline &memory) {
  const Comparison &cmp = check.comparison;
  return llvm::json::Object{
      {"strategy", toString(strategy)},
      {"instances", int64_t(instances)},
      {"nodes", int64_t(r.nodes)},
      {"batches", int64_t(r.batches)},
      {"launches", int64_t(r.launches)},
      {"lower_bound", int64_t(r.lowerBound)},
      {"gathers_copied", int64_t(r.plan.gathersCopied)},
      {"gathers_as_views", int64_t(r.plan.gathersAsViews)},
      {"concats_placed", int64_t(r.plan.concatsPlaced)},
      {"jit_seconds", r.jitSeconds},
      {"modules_compiled", int64_t(r.modulesCompiled)},
      {"modules_loaded", int64_t(r.modulesLoaded)},
      {"schedule_seconds", r.scheduleSeconds},
      {"plan_seconds", r.planSeconds},
      {"run_seconds", jsonArray(r.passSeconds)},
      {"run_seconds_median", r.medianPassSeconds()},
      {"arena_bytes", r.arenaBytes},
      {"gemm_seconds", r.profile.gemm},
      {"kernel_seconds", r.profile.kernel},
      {"gather_seconds", r.profile.gather},
      {"gemm_flops", int64_t(r.profile.gemmFlops)},
      {"map_seconds", r.profile.map},
      {"dispatch_seconds", r.profile.dispatch},
      {"dispatch_gate_seconds", r.profile.dispatchGate},
      {"dispatch_expert_seconds", r.profile.dispatchExperts},
      {"dispatch_combine_seconds", r.profile.dispatchCombine},
      {"conv_flops", int64_t(r.profile.convFlops)},
      {"dispatch_gemm_flops", int64_t(r.dispatchGemmFlops)},
      {"dispatch_param_bytes", int64_t(r.dispatchParamBytes)},
      {"peak_rss_bytes", peakResidentBytes()},
      {"rss_start_bytes", memory.residentAtStart},
      {"rss_after_load_bytes", memory.residentAfterLoad},
      {"rss_anon_start_bytes", memory.anonymousAtStart},
      {"rss_anon_peak_sampled_bytes", r.peakAnonymousSampled},
      {"rss_after_plans_bytes", r.residentAfterPlans},
      {"param_bytes", r.paramBytes},
      {"peak_live_bytes", r.peakLiveBytes},
      {"output_bytes", r.outputBytes},
      {"rss_after_batch_bytes", jsonArray(r.residentAfterBatch)},
      {"max_abs_error", check.checked ? cmp.maxAbsError : -1.0},
      {"max_rel_error", check.checked ? cmp.maxRelError : -1.0},
      {"check", check.checked ? (cmp.withinTolerance ? "ok" : "fail") : "off"},
      {"streamed", streamed},
      {"front_end", r.frontEnd},
      {"planning_overlapped", r.planningOverlapped},
      {"read_seconds", r.readSeconds},
      {"parse_seconds", r.parseSeconds},
      {"reference_seconds", check.referenceSeconds},
      // null when the model has no loss nodes.
      {"loss", r.outputs.hasLoss ? llvm::json::Value(r.outputs.loss) : nullptr},
      {"loss_abs_error", check.checked && r.outputs.hasLoss
                             ? llvm::json::Value(cmp.lossAbsError)
                             : nullptr},
  };
}

llvm::Error dynb::writeRunReport(llvm::StringRef path,
                                 llvm::StringRef inputPath,
                                 llvm::json::Array entries) {
  return llvm::writeToOutput(path, [&](llvm::raw_ostream &os) -> llvm::Error {
    os << llvm::formatv(
        "{0:2}", llvm::json::Value(llvm::json::Object{
                     {"input", inputPath}, {"results", std::move(entries)}}));
    return llvm::Error::success();
  });
}
