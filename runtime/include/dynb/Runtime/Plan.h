//===- Plan.h - The launch plan the compiler hands to the runtime ---------===//
//
// A Plan is the versioned contract between compiler and runtime (see
// docs/runtime-plan.md). It names buffers (row-major [rows x cols] f32
// matrices living either in the arena or in the parameter store) and an
// ordered list of steps over them. The runtime knows nothing of MLIR: kernels
// arrive as plain function pointers with the ABI described at KernelFn.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_RUNTIME_PLAN_H
#define DYNB_RUNTIME_PLAN_H

#include <cassert>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace dynb::rt {

/// 2: dispatch steps (mixture of experts). 3: map steps (feature maps).
/// 4: a step holds exactly one kind (Step is a variant). 5: softmax
/// cross-entropy steps and the plan's loss regions. 7: gradient buffers,
/// parameter-gradient and fill steps (the batched backward pass). 8: host
/// buffers (values of earlier runs, read in place).
constexpr uint32_t kPlanFormatVersion = 8;

using BufferId = uint32_t;

/// The descriptor of a 2-D strided f32 memref, laid out as MLIR's LLVM lowering
/// lays it out. Kernels receive one per argument.
struct MemRefDesc2D {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
};

/// A JIT-compiled elementwise kernel, called through MLIR's packed C
/// interface: args[i] points to a `MemRefDesc2D *` for argument i. Kernels
/// are elementwise over rows, so the runtime may split rows across threads.
using KernelFn = void (*)(void **args);

struct BufferDesc {
  /// Gradient buffers hold the gradient of the parameter `paramName`, in a
  /// store of the caller's (Executor::setGradients) that outlives the run:
  /// parameter-gradient steps add to them, so the gradients of several
  /// plans run one after another are their sum. Host buffers are read-only
  /// memory of the caller's, valid for the run: a builder's values from
  /// earlier runs (dynb::runTasks), so a later run need not compute them
  /// again.
  enum class Kind : uint8_t { Arena, Parameter, Gradient, Host };
  Kind kind = Kind::Arena;
  int64_t rows = 0;
  int64_t cols = 0;
  /// Parameter and gradient buffers: the name in the ParameterStore. A 1-D
  /// parameter of n elements is the buffer [1 x n].
  std::string paramName;
  /// Arena buffers: byte offset, assigned by planArena().
  int64_t arenaOffset = -1;
  /// Host buffers: the rows (rows x cols, row-major), not owned.
  const float *hostData = nullptr;
};

/// A rectangular window of a buffer; its leading dimension is the buffer's
/// column count.
struct Region {
  BufferId buffer = 0;
  int64_t row = 0;
  int64_t rows = 0;
  int64_t col = 0;
  int64_t cols = 0;
};

struct RowRef {
  BufferId buffer;
  int64_t row;
};

/// dst row i (columns [dst.col, dst.col + dst.cols)) = columns
/// [srcCol, srcCol + dst.cols) of sources[i]. Also serves embedding lookups:
/// the source is then a parameter buffer.
struct GatherStep {
  Region dst;
  int64_t srcCol = 0;
  std::vector<RowRef> sources;
};

/// c = a * weight^T (+ bias broadcast over rows). weight is [n x k] row-major
/// (PyTorch's nn.Linear layout), a is [m x k], c is [m x n].
struct GemmStep {
  Region a;
  BufferId weight;
  bool hasBias = false;
  BufferId bias = 0;
  Region c;
  /// c = max(c, 0) after the bias, in the GEMM (oneDNN post-op).
  bool relu = false;
  /// c = a * weight, the weight read as stored (no bias, no ReLU): a
  /// linear's input adjoint (dynb.linear_transpose).
  bool weightAsStored = false;
};

/// Calls a kernel on `rows` rows; every argument region has that many rows.
struct KernelStep {
  KernelFn fn = nullptr;
  std::string name; // for traces and errors
  int64_t rows = 0;
  std::vector<Region> args;
};

/// The softmax cross-entropy of each row of `logits` against its label:
/// row i of `loss` ([rows x 1]) is logsumexp(logits row i) minus
/// logits[i][labels[i]], evaluated in double and stored as float. Labels
/// are data of the launch (one per row), as an embedding's rows are.
struct SoftmaxXentStep {
  Region logits;
  std::vector<int64_t> labels;
  Region loss;
  /// Instead of the loss, row i of `loss` ([rows x classes]) gets the
  /// logits' adjoint, softmax(logits row i) minus the one-hot of labels[i]
  /// (dynb.softmax_xent_grad); such a step is not a loss term.
  bool gradient = false;
};

/// Adds a launch's contribution to parameter gradients, the one kind of
/// step that writes gradient buffers. Rows are summed in order and each
/// gradient element by one thread, so the result does not depend on the
/// thread count.
struct ParamGradStep {
  enum class Op : uint8_t {
    /// A linear's weight [n x k] gradient += dyᵀ x over the rows of `dy`
    /// [m x n] and `x` [m x k]; its bias [1 x n] gradient, when hasBias,
    /// += the column sums of `dy`.
    Linear,
    /// Row rows[i] of a table's gradient += row i of `dy` (an embedding's
    /// adjoint: only the rows read are touched).
    Rows,
  };
  Op op = Op::Linear;
  Region dy;
  Region x;
  BufferId weightGrad = 0;
  bool hasBias = false;
  BufferId biasGrad = 0;
  std::vector<int64_t> rows;
};

/// dst = zeros: the adjoint of a module result nothing downstream read.
struct FillStep {
  Region dst;
};

class Step;

/// A sparsely gated mixture of experts over the rows ("tokens") of `x`
/// (docs/moe.md): logits = x gate^T, plus N(0,1) * softplus(x noise^T) when
/// hasNoise (the draw: gatingNoise() in Routing.h); per row the topK largest
/// logits (ties: the lower expert), the softmax over them, the rows grouped
/// by expert with a counting sort, `body` run once per used expert on that
/// expert's rows, and out[t] = sum_j gate[t, j] * expert_j(x[t]).
///
/// The body works on the routed rows, tokens * topK of them in expert order:
/// its regions span all of them. A Gemm step of the body runs once per used
/// expert on that expert's rows, reading its weight [n x k] at row e * n of
/// a stacked [experts * n x k] weight buffer and its bias at element e * n
/// of a [experts x n] bias buffer. A Kernel step runs once over every routed
/// row: kernels are elementwise and read no parameters.
struct DispatchStep {
  Region x;                // [tokens x d]
  Region out;              // [tokens x outCols], written
  BufferId gateWeight = 0; // [experts x d]
  bool hasNoise = false;
  BufferId noiseWeight = 0; // [experts x d]
  uint64_t noiseSeed = 0;
  int64_t experts = 0;
  int64_t topK = 1;
  /// Arena scratch: [tokens x experts] gate logits, and the noise logits.
  BufferId logits = 0;
  BufferId noiseLogits = 0;
  /// [tokens * topK x d]: x's rows copied in expert order.
  Region routedIn;
  std::vector<Step> body;
  /// [tokens * topK x outCols]: the body's result, in expert order.
  Region routedOut;
};

/// An operation on feature maps (docs/clevr.md). Each row of a map region
/// is one instance's C x H x W map, stored in the runtime's map layout:
/// blocked by 16 channels (oneDNN's nChw16c) on AVX-512 machines when C is
/// a multiple of 16, else by 8 (nChw8c) when C is a multiple of 8, else
/// channels-last (nhwc). The layout follows from C and the machine alone,
/// so every producer and consumer of a map agrees on it without reorders;
/// elementwise kernels treat a map row as a flat vector. Map regions span
/// whole buffer rows (cols == the buffer's cols == C * H * W).
struct MapStep {
  enum class Op : uint8_t {
    /// out = conv(in[0], weight [O x C x kh x kw] (OIHW), stride 1,
    /// `padding` on every side) + bias, then ReLU when `relu`.
    Conv,
    /// out = 2 x 2 max pooling with stride 2 (floor) of in[0].
    MaxPool,
    /// out = in[0] (plain C x H x W, row-major) in the map layout.
    ToMapLayout,
    /// out = in[0] (map layout) as plain C x H x W: what flatten and
    /// instance outputs read.
    FromMapLayout,
    /// out = the channels of in[0], in[1], ... one after another.
    ChannelConcat,
  };
  Op op = Op::Conv;
  /// The input map (for ChannelConcat: the output's H and W, and
  /// inChannels[i] per input).
  int64_t channels = 0, height = 0, width = 0;
  std::vector<int64_t> inChannels;
  /// Conv: output channels and the window.
  int64_t outChannels = 0, kernelH = 1, kernelW = 1, padding = 0;
  bool relu = false;
  BufferId weight = 0;
  bool hasBias = false;
  BufferId bias = 0;
  std::vector<Region> inputs;
  Region out;
};

/// One step of a plan: exactly one of its kinds, so a step cannot carry the
/// fields of another kind. kind() names the alternative held; the accessors
/// assert that the step is of the kind asked for.
class Step {
public:
  /// In the order of the alternatives of Payload (kind() is its index).
  enum class Kind : uint8_t {
    Gather,
    Gemm,
    Kernel,
    Dispatch,
    Map,
    SoftmaxXent,
    ParamGrad,
    Fill
  };
  using Payload =
      std::variant<GatherStep, GemmStep, KernelStep, DispatchStep, MapStep,
                   SoftmaxXentStep, ParamGradStep, FillStep>;

  Step(GatherStep step) : payload_(std::move(step)) {}
  Step(GemmStep step) : payload_(std::move(step)) {}
  Step(KernelStep step) : payload_(std::move(step)) {}
  Step(DispatchStep step) : payload_(std::move(step)) {}
  Step(MapStep step) : payload_(std::move(step)) {}
  Step(SoftmaxXentStep step) : payload_(std::move(step)) {}
  Step(ParamGradStep step) : payload_(std::move(step)) {}
  Step(FillStep step) : payload_(std::move(step)) {}

  Kind kind() const { return static_cast<Kind>(payload_.index()); }
  const Payload &payload() const { return payload_; }

  GatherStep &gather() { return get<GatherStep>(); }
  const GatherStep &gather() const { return get<GatherStep>(); }
  GemmStep &gemm() { return get<GemmStep>(); }
  const GemmStep &gemm() const { return get<GemmStep>(); }
  KernelStep &kernel() { return get<KernelStep>(); }
  const KernelStep &kernel() const { return get<KernelStep>(); }
  DispatchStep &dispatch() { return get<DispatchStep>(); }
  const DispatchStep &dispatch() const { return get<DispatchStep>(); }
  MapStep &map() { return get<MapStep>(); }
  const MapStep &map() const { return get<MapStep>(); }
  SoftmaxXentStep &softmaxXent() { return get<SoftmaxXentStep>(); }
  const SoftmaxXentStep &softmaxXent() const { return get<SoftmaxXentStep>(); }
  ParamGradStep &paramGrad() { return get<ParamGradStep>(); }
  const ParamGradStep &paramGrad() const { return get<ParamGradStep>(); }
  FillStep &fill() { return get<FillStep>(); }
  const FillStep &fill() const { return get<FillStep>(); }

private:
  template <typename T> T &get() {
    T *step = std::get_if<T>(&payload_);
    assert(step && "step of another kind");
    return *step;
  }
  template <typename T> const T &get() const {
    const T *step = std::get_if<T>(&payload_);
    assert(step && "step of another kind");
    return *step;
  }

  Payload payload_;
};

static_assert(
    std::is_same_v<
        std::variant_alternative_t<size_t(Step::Kind::Fill), Step::Payload>,
        FillStep>,
    "Step::Kind follows the order of Step::Payload");

/// The output map shape (channels, height, width) of a map step.
void mapOutputShape(const MapStep &step, int64_t &c, int64_t &h, int64_t &w);

struct Plan {
  uint32_t version = kPlanFormatVersion;
  std::vector<BufferDesc> buffers;
  std::vector<Step> steps;
  /// outputs[p] is the [numInstances x width] result for output position p.
  std::vector<Region> outputs;
  /// The loss terms of the batch, [rows x 1] each (the `loss` regions of
  /// its softmax cross-entropy steps): the batch's loss is the sum of their
  /// rows in this order (Executor::loss). Live to the end, as outputs are, and
  /// so are the logits they were computed from (their predictions).
  std::vector<Region> losses;
  /// Total arena bytes, set by planArena().
  int64_t arenaBytes = 0;

  BufferId addArenaBuffer(int64_t rows, int64_t cols);
  BufferId addParameterBuffer(const std::string &name, int64_t rows,
                              int64_t cols);
  BufferId addGradientBuffer(const std::string &name, int64_t rows,
                             int64_t cols);
  BufferId addHostBuffer(const float *data, int64_t rows, int64_t cols);
  /// Whether a step adds to gradient buffers (the plan has a backward pass).
  bool hasGradients() const;
};

/// Assigns arena offsets so that buffers whose lifetimes (first to last step
/// that touches them, outputs live to the end) do not overlap may share
/// memory. Offsets are 64-byte aligned.
void planArena(Plan &plan);

/// The most bytes of arena buffers (unaligned) that are live at one step:
/// what this schedule needs at least, however well the arena packs them.
int64_t peakLiveBytes(const Plan &plan);

} // namespace dynb::rt

#endif // DYNB_RUNTIME_PLAN_H
