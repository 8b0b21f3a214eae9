//===- EngineModel.h - The loaded model as the fast path sees it ----------===//
//
// Internal to the Engine: the model's modules and parameters as plain
// tables (no MLIR), the signature space of nodes, and a batch's node arena.
// Engine.cpp fills the tables at load (the only MLIR-including file of the
// fast path, apart from compiling a kernel for a new per-instance op);
// Batch.cpp and Run.cpp read them.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_LIB_ENGINE_ENGINEMODEL_H
#define DYNB_LIB_ENGINE_ENGINEMODEL_H

#include "dynb/Batching/BatchingGraph.h"
#include "dynb/Batching/LaunchWalk.h"
#include "dynb/Engine/Engine.h"
#include "dynb/Lowering/LoweredSteps.h"
#include "dynb/Lowering/PlanAssembler.h"
#include "dynb/Runtime/Executor.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Allocator.h"

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dynb {
class ValueRead;
}

namespace dynb::detail {

struct ModuleInfo {
  std::string name;
  /// Expert modules (run only by dispatches): how many experts.
  int64_t experts = 0;
  llvm::SmallVector<int64_t, 4> argWidths, resultWidths;
  const LoweredSteps *lowered = nullptr;
};

struct ParamInfo {
  std::string name;
  llvm::SmallVector<int64_t, 3> shape;
  /// As a plan buffer: [rows x cols].
  int64_t rows = 0, cols = 0;
};

/// The elementwise kinds first, in ElementwiseKind's order, so one converts
/// to the other by value.
enum class OpKind : uint8_t {
#define DYNB_ELEMENTWISE_OP(Name, mnemonic, arity) Name,
#include "dynb/Dialect/ElementwiseOps.def"
  Concat,
  Slice,
  Linear,
  Dispatch,
  /// A loss node: its label is the node's `row`; it runs as a plan step
  /// of its own, with no kernel.
  SoftmaxXent
};
static_assert(unsigned(OpKind::Concat) == kNumElementwiseKinds);
inline OpKind opKindOf(ElementwiseKind kind) { return OpKind(unsigned(kind)); }
/// The op's mnemonic.
const char *opName(OpKind kind);

/// A per-instance op's signature: what it computes on which widths. Ops of
/// equal signature share a launch and a compiled kernel.
struct OpInfo {
  OpKind kind;
  llvm::SmallVector<int64_t, 4> operandWidths;
  int64_t resultWidth = 0;
  /// Slice: offset and size. Linear: weight and bias parameter ids (bias
  /// ~0 when absent). Dispatch: the gate's parameter id and the expert
  /// module's index in EngineModel::experts.
  int64_t a = 0, b = 0;
  /// Dispatch only: experts kept per row, the noise parameter's id (-1:
  /// none) and the noise's seed.
  int64_t topK = 0, noise = -1;
  uint64_t noiseSeed = 0;
  uint32_t signature = 0;
  /// Compiled on first run (under EngineModel::compileMutex); a
  /// dispatch's is its expert module's, set when it is interned.
  const LoweredSteps *lowered = nullptr;
};

/// Carried: a value an earlier run computed, read from the host (a run of
/// the nodes added since, by runTasks).
enum class NodeKind : uint8_t { Embedding, Call, Op, Carried };

/// Values of one width that earlier runs computed, one per row: a Carried
/// node is row `row` of one. Appended to between runs only, so a plan may
/// read the rows in place while it runs.
struct CarriedTable {
  int64_t cols = 0;
  int64_t rows = 0;
  std::vector<float> values;
};

using OperandRef = NodeResult;

/// A node in a batch's arena.
struct Node {
  NodeKind kind;
  uint16_t numOperands;
  uint32_t signature;
  uint32_t instance;
  /// ModuleInfo, ParamInfo (embedding table), OpInfo or CarriedTable.
  const void *info;
  /// Embedding and Carried: the row. SoftmaxXent: the label.
  int64_t row;
  const OperandRef *operands;
};

/// The engine's state. Filled once at load; the op table grows (under
/// opMutex) when a batch uses a per-instance op of a new signature.
struct EngineModel {
  EngineOptions options;
  llvm::SmallVector<ModuleInfo, 0> modules;
  llvm::StringMap<uint32_t> moduleIds;
  /// Expert modules: not callable, so apart from `modules` (whose indices
  /// are call signatures).
  llvm::SmallVector<ModuleInfo, 0> experts;
  llvm::StringMap<uint32_t> expertIds;
  llvm::SmallVector<ParamInfo, 0> params;
  llvm::StringMap<uint32_t> paramIds;

  /// Signature ids: calls [0, M), embeddings [M, M + P), ops after.
  uint32_t callSignature(uint32_t module) const { return module; }
  uint32_t embeddingSignature(uint32_t param) const {
    return modules.size() + param;
  }

  /// The op of this signature, interned (one OpInfo per distinct key).
  const OpInfo *internOp(const OpInfo &key);
  /// Compiles the op's kernel if it has none yet (caller holds
  /// compileMutex). Implemented with MLIR in Engine.cpp.
  llvm::Error compileOp(OpInfo &op);

  std::mutex opMutex;
  std::deque<OpInfo> ops;
  llvm::StringMap<OpInfo *> opByKey;

  /// MLIR and the kernel cache are single-threaded.
  std::mutex compileMutex;
  /// One executor (one arena) for every batch.
  std::mutex runMutex;
  std::unique_ptr<rt::Executor> executor;
  EngineStats stats;

  /// The MLIR side (session, kernel cache); defined in Engine.cpp.
  struct Compiler;
  std::unique_ptr<Compiler> compiler;
  EngineModel();
  ~EngineModel();
};

struct InstanceData {
  uint32_t numNodes = 0;
  bool discarded = false;
  llvm::SmallVector<OperandRef, 1> outputs;
  /// The first misuse in this instance (empty: none).
  std::string error;
};

struct BatchData {
  explicit BatchData(Engine &engine);
  Engine &engine;
  EngineModel &model;
  /// Values carry it; a new one after every clear().
  uint64_t tag;
  /// Nodes and operand lists; 64 KiB slabs, so that a batch of thousands
  /// of nodes takes a few mallocs (Reset keeps the first slab).
  llvm::BumpPtrAllocatorImpl<llvm::MallocAllocator, 65536> arena;
  llvm::SmallVector<Node *, 0> nodes;
  BatchingGraph graph;
  llvm::SmallVector<InstanceData, 0> instances;
  /// Index of the first instance with an error, or ~0u.
  uint32_t firstFailed = ~0u;
  /// Reads registered by suspended builders (runTasks).
  llvm::SmallVector<ValueRead *, 0> pendingReads;

  void reset();
  int64_t resultWidth(const Node &n, uint32_t result) const;
  uint32_t numResults(const Node &n) const;
};

uint64_t newBatchTag();

struct AssembleOptions {
  /// Also compute launchLowerBound (the CLI reports it).
  bool lowerBound = false;
  /// The plan's outputs are output p of every instance stacked in
  /// instance order (as a `dynb.schedule` yields them, what the CLI
  /// writes); otherwise the launches' own regions, rows copied out by
  /// Placement (Engine::run).
  bool stackOutputs = false;
};

/// A batch's plan and where each node's results are in it.
struct AssembledGraph {
  rt::Plan plan;
  uint64_t launches = 0, lowerBound = 0;
  PlanStats planStats;
  double scheduleSeconds = 0, compileSeconds = 0, assembleSeconds = 0;
  llvm::SmallVector<LaunchRow, 0> placement;
  /// Results of group g: groupResults[groupStart[g] ...].
  llvm::SmallVector<rt::Region, 0> groupResults;
  llvm::SmallVector<uint32_t, 0> groupStart;
};

/// Schedules every node of `d` with `strategy` and assembles the plan
/// (leaving the batch as it is): the one walk from a BatchingPlan to plan
/// steps over a node arena, for Engine::run and dynbc's interchange reader.
/// `wanted` and `ends` as for runGraph.
llvm::Error assembleGraph(EngineModel &m, BatchData &d,
                          BatchingStrategy strategy,
                          llvm::ArrayRef<OperandRef> wanted,
                          llvm::ArrayRef<uint32_t> ends,
                          const AssembleOptions &options, AssembledGraph &out);

/// Schedules and runs every node of `d` (leaving the batch as it is) and
/// copies the results `wanted` into `results`: one Results instance per
/// group, group k being wanted[ends[k-1] .. ends[k]).
llvm::Error runGraph(EngineModel &m, BatchData &d, BatchingStrategy strategy,
                     llvm::ArrayRef<OperandRef> wanted,
                     llvm::ArrayRef<uint32_t> ends, Results &results);

} // namespace dynb::detail

#endif // DYNB_LIB_ENGINE_ENGINEMODEL_H
