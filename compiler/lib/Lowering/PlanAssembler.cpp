//===- PlanAssembler.cpp - Batched launches to plan steps (no MLIR) -------===//
#include "dynb/Lowering/PlanAssembler.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace dynb;

rt::BufferId PlanAssembler::paramBuffer(llvm::StringRef name) {
  auto it = params_.find(name);
  if (it != params_.end())
    return it->second;
  auto [rows, cols] = shapeOf_(name);
  rt::BufferId id = plan_.addParameterBuffer(name.str(), rows, cols);
  params_[name] = id;
  return id;
}

rt::BufferId PlanAssembler::gradBuffer(llvm::StringRef name) {
  auto it = grads_.find(name);
  if (it != grads_.end())
    return it->second;
  auto [rows, cols] = shapeOf_(name);
  rt::BufferId id = plan_.addGradientBuffer(name.str(), rows, cols);
  grads_[name] = id;
  return id;
}

void PlanAssembler::linearGrad(const rt::Region &dy, const rt::Region &x,
                               llvm::StringRef weight, llvm::StringRef bias) {
  ++stats_.launches;
  rt::ParamGradStep step;
  step.op = rt::ParamGradStep::Op::Linear;
  step.dy = dy;
  step.x = x;
  step.weightGrad = gradBuffer(weight);
  step.hasBias = !bias.empty();
  if (step.hasBias)
    step.biasGrad = gradBuffer(bias);
  plan_.steps.push_back(std::move(step));
}

void PlanAssembler::embeddingGrad(const rt::Region &dy, llvm::StringRef table,
                                  llvm::ArrayRef<int64_t> rows) {
  ++stats_.launches;
  rt::ParamGradStep step;
  step.op = rt::ParamGradStep::Op::Rows;
  step.dy = dy;
  step.weightGrad = gradBuffer(table);
  step.rows.assign(rows.begin(), rows.end());
  plan_.steps.push_back(std::move(step));
}

rt::Region PlanAssembler::zeros(int64_t rows, int64_t cols) {
  ++stats_.launches;
  rt::Region dst = newValue(rows, cols);
  plan_.steps.push_back(rt::FillStep{dst});
  return dst;
}

rt::Region PlanAssembler::lookup(llvm::StringRef table,
                                 llvm::ArrayRef<int64_t> indices) {
  return lookupRows(paramBuffer(table), indices);
}

rt::Region PlanAssembler::hostLookup(const float *data, int64_t rows,
                                     int64_t cols,
                                     llvm::ArrayRef<int64_t> indices) {
  return lookupRows(plan_.addHostBuffer(data, rows, cols), indices);
}

rt::Region PlanAssembler::lookupRows(rt::BufferId t,
                                     llvm::ArrayRef<int64_t> indices) {
  // It still counts as the batch's launch: the launch counts measure the
  // batching, whatever a launch costs at run time.
  ++stats_.launches;
  // Consecutive rows of the table (a batch of tokens fed in order): read
  // them in place. No step writes a table, so the view is safe.
  int64_t n = indices.size();
  bool consecutive = n > 0;
  for (int64_t i = 1; i < n && consecutive; ++i)
    consecutive = indices[i] == indices[0] + i;
  if (consecutive) {
    ++stats_.gathersAsViews;
    return rt::Region{t, indices[0], n, 0, plan_.buffers[t].cols};
  }
  rt::Region dst = newValue(n, plan_.buffers[t].cols);
  rt::GatherStep step;
  step.dst = dst;
  step.sources.reserve(indices.size());
  for (int64_t i : indices)
    step.sources.push_back({t, i});
  plan_.steps.push_back(std::move(step));
  return dst;
}

rt::Region PlanAssembler::softmaxXent(const rt::Region &logits,
                                      llvm::ArrayRef<int64_t> labels) {
  ++stats_.launches;
  rt::Region loss = newValue(logits.rows, 1);
  rt::SoftmaxXentStep step;
  step.logits = logits;
  step.labels.assign(labels.begin(), labels.end());
  step.loss = loss;
  plan_.steps.push_back(std::move(step));
  plan_.losses.push_back(loss);
  return loss;
}

rt::Region PlanAssembler::softmaxXentGrad(const rt::Region &logits,
                                          llvm::ArrayRef<int64_t> labels) {
  ++stats_.launches;
  rt::Region grad = newValue(logits.rows, logits.cols);
  rt::SoftmaxXentStep step;
  step.logits = logits;
  step.labels.assign(labels.begin(), labels.end());
  step.loss = grad;
  step.gradient = true;
  plan_.steps.push_back(std::move(step));
  return grad;
}

rt::Region PlanAssembler::compact(const rt::Region &r) {
  rt::Region dst = newValue(r.rows, r.cols);
  rt::GatherStep step;
  step.dst = dst;
  step.srcCol = r.col;
  for (int64_t i = 0; i < r.rows; ++i)
    step.sources.push_back({r.buffer, r.row + i});
  plan_.steps.push_back(std::move(step));
  return dst;
}

rt::Region PlanAssembler::wholeRows(const rt::Region &r) {
  return r.col == 0 && r.cols == plan_.buffers[r.buffer].cols ? r : compact(r);
}

rt::MapStep PlanAssembler::mapStep(const LoweredStep &s,
                                   llvm::ArrayRef<rt::Region> inputs,
                                   const rt::Region &out) {
  rt::MapStep step = s.map;
  for (const rt::Region &r : inputs)
    step.inputs.push_back(wholeRows(r));
  step.out = out;
  if (s.map.op == rt::MapStep::Op::Conv) {
    step.weight = paramBuffer(s.weight);
    step.hasBias = !s.bias.empty();
    if (step.hasBias)
      step.bias = paramBuffer(s.bias);
  }
  return step;
}

rt::Region PlanAssembler::relayoutMaps(const rt::Region &r, int64_t channels,
                                       int64_t height, int64_t width,
                                       bool toMapLayout) {
  rt::MapStep m;
  m.op = toMapLayout ? rt::MapStep::Op::ToMapLayout
                     : rt::MapStep::Op::FromMapLayout;
  m.channels = channels;
  m.height = height;
  m.width = width;
  m.inputs.push_back(wholeRows(r));
  m.out = newValue(r.rows, r.cols);
  rt::Region out = m.out;
  plan_.steps.push_back(std::move(m));
  return out;
}

AssembledValue PlanAssembler::gather(llvm::ArrayRef<rt::Region> sources,
                                     llvm::ArrayRef<int64_t> pairs,
                                     int64_t cols) {
  int64_t n = pairs.size() / 2;
  // Consecutive rows of one value: a view, no copy.
  bool consecutive = true;
  for (int64_t i = 1; i < n && consecutive; ++i)
    consecutive = pairs[2 * i] == pairs[0] && pairs[2 * i + 1] == pairs[1] + i;
  if (consecutive) {
    rt::Region src = sources[pairs[0]];
    src.row += pairs[1];
    src.rows = n;
    ++stats_.gathersAsViews;
    return {src, -1};
  }
  // One copy step reads every source at one column offset; sources that
  // are column windows at other offsets are compacted first (rare: only
  // modules that return slices produce them).
  llvm::SmallVector<rt::Region, 8> srcs(sources.begin(), sources.end());
  bool mixed = llvm::any_of(
      srcs, [&](const rt::Region &r) { return r.col != srcs.front().col; });
  if (mixed)
    for (rt::Region &r : srcs)
      if (r.col != 0)
        r = compact(r);

  rt::Region dst = newValue(n, cols);
  rt::GatherStep step;
  step.dst = dst;
  step.srcCol = srcs.front().col;
  step.sources.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    const rt::Region &src = srcs[pairs[2 * i]];
    step.sources.push_back({src.buffer, src.row + pairs[2 * i + 1]});
  }
  int64_t index = plan_.steps.size();
  plan_.steps.push_back(std::move(step));
  ++stats_.gathersCopied;
  return {dst, index};
}

bool PlanAssembler::placeConcatArgs(const LoweredStep &s,
                                    llvm::MutableArrayRef<AssembledValue> args,
                                    rt::BufferId dst, int64_t n) {
  if (s.concatArgs.empty())
    return false;
  for (unsigned arg : s.concatArgs)
    if (args[arg].copyStep < 0)
      return false;
  unsigned inputs = s.concatArgs.size();
  for (unsigned i = 0; i < inputs; ++i) {
    const SlotRef &window = s.args[inputs + i];
    rt::Region into{dst, 0, n, window.col, window.cols};
    AssembledValue &a = args[s.concatArgs[i]];
    plan_.steps[a.copyStep].gather().dst = into;
    a.region = into;
    // The copy now belongs to this concat: nobody else may move it.
    a.copyStep = -1;
  }
  ++stats_.concatsPlaced;
  return true;
}

void PlanAssembler::appendSteps(
    const LoweredSteps &m, int64_t rows,
    llvm::function_ref<rt::Region(const SlotRef &)> resolve,
    llvm::ArrayRef<bool> skip, std::vector<rt::Step> &out) {
  for (auto [i, s] : llvm::enumerate(m.steps)) {
    if (!skip.empty() && skip[i])
      continue;
    if (s.kind == LoweredStep::Kind::Map) {
      llvm::SmallVector<rt::Region, 2> inputs;
      for (const SlotRef &a : s.args)
        inputs.push_back(resolve(a));
      out.push_back(mapStep(s, inputs, resolve(s.c)));
    } else if (s.kind == LoweredStep::Kind::Gemm) {
      rt::GemmStep step;
      step.a = resolve(s.a);
      step.c = resolve(s.c);
      step.weight = paramBuffer(s.weight);
      step.hasBias = !s.bias.empty();
      step.relu = s.relu;
      step.weightAsStored = s.weightAsStored;
      if (step.hasBias)
        step.bias = paramBuffer(s.bias);
      out.push_back(std::move(step));
    } else {
      rt::KernelStep step;
      step.fn = m.kernelFns[s.kernel];
      step.name = m.kernelNames[s.kernel];
      step.rows = rows;
      step.args.reserve(s.args.size());
      for (const SlotRef &a : s.args)
        step.args.push_back(resolve(a));
      out.push_back(std::move(step));
    }
  }
}

void PlanAssembler::launch(const LoweredSteps &m, int64_t n,
                           llvm::MutableArrayRef<AssembledValue> args,
                           llvm::SmallVectorImpl<rt::Region> &results) {
  llvm::SmallVector<rt::BufferId, 8> locals;
  for (int64_t cols : m.localCols)
    locals.push_back(plan_.addArenaBuffer(n, cols));
  auto resolve = [&](const SlotRef &s) {
    rt::Region base = s.kind == SlotRef::Kind::Arg
                          ? args[s.index].region
                          : rt::Region{locals[s.index], 0, n, 0, 0};
    return rt::Region{base.buffer, base.row, n, base.col + s.col, s.cols};
  };
  // Placement first: it changes where the arguments live for every step.
  llvm::SmallVector<bool, 16> placed(m.steps.size(), false);
  for (auto [i, s] : llvm::enumerate(m.steps))
    if (!s.concatArgs.empty())
      placed[i] = placeConcatArgs(s, args, locals[s.args.back().index], n);
  appendSteps(m, n, resolve, placed, plan_.steps);
  for (const SlotRef &r : m.results)
    results.push_back(resolve(r));
  ++stats_.launches;
}

rt::Region PlanAssembler::dispatch(const DispatchLaunch &launch,
                                   const LoweredSteps &experts) {
  int64_t tokens = launch.x.rows;
  int64_t routed = tokens * launch.topK;
  rt::DispatchStep d;
  d.x = launch.x;
  d.gateWeight = paramBuffer(launch.gate);
  d.experts = plan_.buffers[d.gateWeight].rows;
  d.topK = launch.topK;
  d.logits = plan_.addArenaBuffer(tokens, d.experts);
  if (launch.noise) {
    d.hasNoise = true;
    d.noiseWeight = paramBuffer(*launch.noise);
    d.noiseSeed = launch.noiseSeed;
    d.noiseLogits = plan_.addArenaBuffer(tokens, d.experts);
  }
  // The expert module's buffers hold every routed row; the runtime runs its
  // GEMMs on each expert's window of them.
  d.routedIn = newValue(routed, experts.argCols.front());
  llvm::SmallVector<rt::BufferId, 8> locals;
  for (int64_t cols : experts.localCols)
    locals.push_back(plan_.addArenaBuffer(routed, cols));
  auto resolve = [&](const SlotRef &s) {
    rt::BufferId buffer =
        s.kind == SlotRef::Kind::Arg ? d.routedIn.buffer : locals[s.index];
    return rt::Region{buffer, 0, routed, s.col, s.cols};
  };
  appendSteps(experts, routed, resolve, {}, d.body);
  d.routedOut = resolve(experts.results.front());
  d.out = newValue(tokens, launch.outCols);
  rt::Region out = d.out;
  plan_.steps.push_back(std::move(d));
  ++stats_.launches;
  return out;
}

rt::Plan PlanAssembler::finish() {
  rt::planArena(plan_);
  params_.clear();
  grads_.clear();
  return std::move(plan_);
}
