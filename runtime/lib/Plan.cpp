//===- Plan.cpp - Plan construction and liveness-based arena planning -----===//
#include "dynb/Runtime/Plan.h"

#include <algorithm>
#include <limits>

using namespace dynb::rt;

BufferId Plan::addArenaBuffer(int64_t rows, int64_t cols) {
  BufferDesc desc;
  desc.kind = BufferDesc::Kind::Arena;
  desc.rows = rows;
  desc.cols = cols;
  buffers.push_back(std::move(desc));
  return static_cast<BufferId>(buffers.size() - 1);
}

BufferId Plan::addParameterBuffer(const std::string &name, int64_t rows,
                                  int64_t cols) {
  BufferDesc desc;
  desc.kind = BufferDesc::Kind::Parameter;
  desc.rows = rows;
  desc.cols = cols;
  desc.paramName = name;
  buffers.push_back(std::move(desc));
  return static_cast<BufferId>(buffers.size() - 1);
}

BufferId Plan::addGradientBuffer(const std::string &name, int64_t rows,
                                 int64_t cols) {
  BufferId id = addParameterBuffer(name, rows, cols);
  buffers[id].kind = BufferDesc::Kind::Gradient;
  return id;
}

BufferId Plan::addHostBuffer(const float *data, int64_t rows, int64_t cols) {
  BufferDesc desc;
  desc.kind = BufferDesc::Kind::Host;
  desc.rows = rows;
  desc.cols = cols;
  desc.hostData = data;
  buffers.push_back(std::move(desc));
  return static_cast<BufferId>(buffers.size() - 1);
}

bool Plan::hasGradients() const {
  return std::any_of(steps.begin(), steps.end(), [](const Step &s) {
    return s.kind() == Step::Kind::ParamGrad;
  });
}

namespace {

constexpr int64_t kArenaAlignment = 64;

int64_t alignedBytes(const BufferDesc &buffer) {
  int64_t bytes = std::max<int64_t>(buffer.rows, 0) *
                  std::max<int64_t>(buffer.cols, 0) *
                  static_cast<int64_t>(sizeof(float));
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

/// Live range of each buffer in step indices; the index one past the last
/// step stands for "after the run", where outputs are read.
struct Lifetimes {
  std::vector<int64_t> first;
  std::vector<int64_t> last;

  explicit Lifetimes(const Plan &plan)
      : first(plan.buffers.size(), std::numeric_limits<int64_t>::max()),
        last(plan.buffers.size(), -1) {
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      const Step &step = plan.steps[s];
      int64_t time = static_cast<int64_t>(s);
      switch (step.kind()) {
      case Step::Kind::Gather:
        touch(step.gather().dst.buffer, time);
        for (const RowRef &source : step.gather().sources)
          touch(source.buffer, time);
        break;
      case Step::Kind::Gemm:
        touch(step.gemm().a.buffer, time);
        touch(step.gemm().weight, time);
        if (step.gemm().hasBias)
          touch(step.gemm().bias, time);
        touch(step.gemm().c.buffer, time);
        break;
      case Step::Kind::Kernel:
        for (const Region &arg : step.kernel().args)
          touch(arg.buffer, time);
        break;
      case Step::Kind::Dispatch:
        touchDispatch(step.dispatch(), time);
        break;
      case Step::Kind::Map:
        for (const Region &in : step.map().inputs)
          touch(in.buffer, time);
        touch(step.map().out.buffer, time);
        if (step.map().op == MapStep::Op::Conv) {
          touch(step.map().weight, time);
          if (step.map().hasBias)
            touch(step.map().bias, time);
        }
        break;
      case Step::Kind::SoftmaxXent:
        touch(step.softmaxXent().logits.buffer, time);
        touch(step.softmaxXent().loss.buffer, time);
        break;
      case Step::Kind::ParamGrad:
        touch(step.paramGrad().dy.buffer, time);
        if (step.paramGrad().op == ParamGradStep::Op::Linear)
          touch(step.paramGrad().x.buffer, time);
        break;
      case Step::Kind::Fill:
        touch(step.fill().dst.buffer, time);
        break;
      }
    }
    for (const Region &output : plan.outputs)
      touch(output.buffer, static_cast<int64_t>(plan.steps.size()));
    for (const Region &loss : plan.losses)
      touch(loss.buffer, static_cast<int64_t>(plan.steps.size()));
    // A loss's logits too: they are a few columns wide, and a caller reads
    // its predictions from them after the run (BatchedGradient).
    for (const Step &step : plan.steps)
      if (step.kind() == Step::Kind::SoftmaxXent &&
          !step.softmaxXent().gradient)
        touch(step.softmaxXent().logits.buffer,
              static_cast<int64_t>(plan.steps.size()));
  }

  /// Every buffer of a dispatch step lives for the whole step: its scratch
  /// buffers must not share memory with each other or with its operands.
  void touchDispatch(const DispatchStep &d, int64_t time) {
    for (BufferId id : {d.x.buffer, d.out.buffer, d.gateWeight, d.logits,
                        d.routedIn.buffer, d.routedOut.buffer})
      touch(id, time);
    if (d.hasNoise) {
      touch(d.noiseWeight, time);
      touch(d.noiseLogits, time);
    }
    for (const Step &inner : d.body) {
      if (inner.kind() == Step::Kind::Gemm) {
        touch(inner.gemm().a.buffer, time);
        touch(inner.gemm().c.buffer, time);
        touch(inner.gemm().weight, time);
        if (inner.gemm().hasBias)
          touch(inner.gemm().bias, time);
      } else if (inner.kind() == Step::Kind::Kernel) {
        for (const Region &arg : inner.kernel().args)
          touch(arg.buffer, time);
      }
    }
  }

  void touch(BufferId buffer, int64_t time) {
    // Out-of-range ids are validate()'s to report; planning skips them.
    if (buffer >= first.size())
      return;
    first[buffer] = std::min(first[buffer], time);
    last[buffer] = std::max(last[buffer], time);
  }
};

/// Finds already placed buffers whose live ranges overlap a query range in
/// time proportional to the number of buffers, placed or not, that overlap
/// it, after a binary search; planning thus costs O(n log n) plus sorting
/// each buffer's overlapping neighbours. A range [l, r] overlaps [s, e] iff
/// either s <= l <= e (a stabbing query on a segment tree of placed ranges)
/// or l < s <= r (a scan of all candidates sorted by start, skipping those
/// not placed yet); the two cases are disjoint.
class LiveRangeIndex {
public:
  LiveRangeIndex(int64_t numTimes, const std::vector<uint32_t> &candidates,
                 const Lifetimes &lifetimes, size_t numBuffers)
      : lifetimes_(lifetimes), placed_(numBuffers, false) {
    leafBase_ = 1;
    while (leafBase_ < numTimes)
      leafBase_ *= 2;
    nodes_.resize(2 * static_cast<size_t>(leafBase_));
    // Start times sit beside the ids: the scan reads them in order instead
    // of chasing each id into the lifetime table.
    byStart_.reserve(candidates.size());
    for (uint32_t id : candidates)
      byStart_.emplace_back(lifetimes.first[id], id);
    std::sort(byStart_.begin(), byStart_.end());
  }

  void insert(uint32_t id) {
    // Store the id in the canonical nodes covering its range.
    for (int64_t lo = lifetimes_.first[id] + leafBase_,
                 hi = lifetimes_.last[id] + leafBase_ + 1;
         lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1)
        nodes_[lo++].push_back(id);
      if (hi & 1)
        nodes_[--hi].push_back(id);
    }
    placed_[id] = true;
  }

  template <typename Fn>
  void forEachOverlapping(int64_t start, int64_t end, Fn &&fn) const {
    for (int64_t node = start + leafBase_; node >= 1; node /= 2)
      for (uint32_t id : nodes_[node])
        fn(id);
    auto it = std::upper_bound(
        byStart_.begin(), byStart_.end(), start,
        [](int64_t time, const std::pair<int64_t, uint32_t> &entry) {
          return time < entry.first;
        });
    for (; it != byStart_.end() && it->first <= end; ++it)
      if (placed_[it->second])
        fn(it->second);
  }

private:
  const Lifetimes &lifetimes_;
  int64_t leafBase_;
  std::vector<std::vector<uint32_t>> nodes_;
  std::vector<std::pair<int64_t, uint32_t>> byStart_; // start, id
  std::vector<bool> placed_;
};

} // namespace

void dynb::rt::planArena(Plan &plan) {
  Lifetimes lifetimes(plan);
  std::vector<int64_t> bytes(plan.buffers.size());
  std::vector<uint32_t> order;
  int64_t arenaBytes = 0;
  for (uint32_t id = 0; id < plan.buffers.size(); ++id) {
    BufferDesc &buffer = plan.buffers[id];
    if (buffer.kind != BufferDesc::Kind::Arena) {
      buffer.arenaOffset = -1;
      continue;
    }
    bytes[id] = alignedBytes(buffer);
    buffer.arenaOffset = 0;
    if (lifetimes.last[id] < 0) {
      // Nothing reads or writes it, but a pointer to it must still lie
      // inside the arena.
      arenaBytes = std::max(arenaBytes, bytes[id]);
      continue;
    }
    if (bytes[id] > 0)
      order.push_back(id);
  }
  // Largest first: big buffers placed early leave gaps small ones can fill.
  // Ties break on first use, then id, so the layout is deterministic.
  std::sort(order.begin(), order.end(), [&](uint32_t lhs, uint32_t rhs) {
    if (bytes[lhs] != bytes[rhs])
      return bytes[lhs] > bytes[rhs];
    if (lifetimes.first[lhs] != lifetimes.first[rhs])
      return lifetimes.first[lhs] < lifetimes.first[rhs];
    return lhs < rhs;
  });

  LiveRangeIndex placed(static_cast<int64_t>(plan.steps.size()) + 1, order,
                        lifetimes, plan.buffers.size());
  // [offset, end) of each placed buffer, packed so that the conflict scan
  // reads one 16-byte entry per buffer rather than a whole BufferDesc.
  std::vector<std::pair<int64_t, int64_t>> extents(plan.buffers.size());
  std::vector<std::pair<int64_t, int64_t>> conflicts;
  for (uint32_t id : order) {
    int64_t start = lifetimes.first[id], end = lifetimes.last[id];
    conflicts.clear();
    placed.forEachOverlapping(start, end, [&](uint32_t other) {
      conflicts.push_back(extents[other]);
    });
    std::sort(conflicts.begin(), conflicts.end());
    // First fit: the lowest offset whose gap up to the next conflicting
    // buffer holds this one. Sizes are multiples of the alignment, so every
    // offset found is aligned too.
    int64_t offset = 0;
    for (const auto &[conflictOffset, conflictEnd] : conflicts) {
      if (offset + bytes[id] <= conflictOffset)
        break;
      offset = std::max(offset, conflictEnd);
    }
    plan.buffers[id].arenaOffset = offset;
    extents[id] = {offset, offset + bytes[id]};
    arenaBytes = std::max(arenaBytes, offset + bytes[id]);
    placed.insert(id);
  }
  plan.arenaBytes = arenaBytes;
}

int64_t dynb::rt::peakLiveBytes(const Plan &plan) {
  Lifetimes lifetimes(plan);
  // +bytes where a buffer's life begins, -bytes one step after it ends; the
  // running sum's maximum is the most that must be held at once.
  std::vector<int64_t> delta(plan.steps.size() + 2, 0);
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    const BufferDesc &buffer = plan.buffers[id];
    if (buffer.kind != BufferDesc::Kind::Arena || lifetimes.last[id] < 0)
      continue;
    int64_t bytes = std::max<int64_t>(buffer.rows, 0) *
                    std::max<int64_t>(buffer.cols, 0) *
                    static_cast<int64_t>(sizeof(float));
    delta[lifetimes.first[id]] += bytes;
    delta[lifetimes.last[id] + 1] -= bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return peak;
}
