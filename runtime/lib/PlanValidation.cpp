//===- PlanValidation.cpp - Checks a Plan before it is run ----------------===//
//
// run() trusts the plan and indexes buffers without checks, so everything it
// would read or write out of bounds is caught here first.
//
//===----------------------------------------------------------------------===//
#include "PlanValidation.h"
#include "dynb/Runtime/ElementCount.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

using namespace dynb::rt;

namespace {

const char *kindName(Step::Kind kind) {
  switch (kind) {
  case Step::Kind::Gather:
    return "gather";
  case Step::Kind::Gemm:
    return "gemm";
  case Step::Kind::Kernel:
    return "kernel";
  case Step::Kind::Dispatch:
    return "dispatch";
  case Step::Kind::Map:
    return "map";
  case Step::Kind::SoftmaxXent:
    return "softmax_xent";
  case Step::Kind::ParamGrad:
    return "param_grad";
  case Step::Kind::Fill:
    return "fill";
  }
  return "unknown";
}

class PlanValidator {
public:
  PlanValidator(const Plan &plan, const ParameterStore &params)
      : plan_(plan), params_(params) {}

  Status validate() {
    if (plan_.version != kPlanFormatVersion)
      return Status::error(
          fmt::format("plan format version {} is not the runtime's {}",
                      plan_.version, kPlanFormatVersion));
    for (size_t id = 0; id < plan_.buffers.size(); ++id)
      if (Status status = checkBuffer(static_cast<BufferId>(id)))
        return status;
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      const Step &step = plan_.steps[s];
      context_ = fmt::format("step {} ({}", s, kindName(step.kind()));
      if (step.kind() == Step::Kind::Kernel)
        context_ += fmt::format(" '{}'", step.kernel().name);
      context_ += ")";
      Status status;
      switch (step.kind()) {
      case Step::Kind::Gather:
        status = checkGather(step.gather());
        break;
      case Step::Kind::Gemm:
        status = checkGemm(step.gemm());
        break;
      case Step::Kind::Kernel:
        status = checkKernel(step.kernel());
        break;
      case Step::Kind::Dispatch:
        status = checkDispatch(step.dispatch());
        break;
      case Step::Kind::Map:
        status = checkMap(step.map());
        break;
      case Step::Kind::SoftmaxXent:
        status = checkSoftmaxXent(step.softmaxXent());
        break;
      case Step::Kind::ParamGrad:
        status = checkParamGrad(step.paramGrad());
        break;
      case Step::Kind::Fill:
        status = checkRegion(step.fill().dst, "dst");
        if (!status)
          status = checkWritable(step.fill().dst.buffer, "dst");
        break;
      }
      if (status)
        return status;
    }
    for (size_t p = 0; p < plan_.outputs.size(); ++p) {
      context_ = fmt::format("output {}", p);
      if (Status status = checkRegion(plan_.outputs[p], "region"))
        return status;
    }
    for (size_t l = 0; l < plan_.losses.size(); ++l) {
      context_ = fmt::format("loss {}", l);
      if (Status status = checkRegion(plan_.losses[l], "region"))
        return status;
      if (plan_.losses[l].cols != 1)
        return fail(fmt::format("has {} cols, not 1", plan_.losses[l].cols));
    }
    return Status::ok();
  }

private:
  Status fail(std::string what) const {
    return Status::error(fmt::format("{}: {}", context_, what));
  }

  Status checkBuffer(BufferId id) const {
    const BufferDesc &buffer = plan_.buffers[id];
    if (buffer.rows < 0 || buffer.cols < 0)
      return Status::error(fmt::format("buffer {}: negative shape [{} x {}]",
                                       id, buffer.rows, buffer.cols));
    // Every later product of a buffer's rows and columns stays in range.
    if (!dynb::checkedElementCount(buffer.rows, buffer.cols))
      return Status::error(
          fmt::format("buffer {}: [{} x {}] has more than 2^34 elements", id,
                      buffer.rows, buffer.cols));
    if (buffer.kind == BufferDesc::Kind::Arena)
      return Status::ok();
    if (buffer.kind == BufferDesc::Kind::Host) {
      if (!buffer.hostData && buffer.rows * buffer.cols > 0)
        return Status::error(
            fmt::format("buffer {}: host buffer without data", id));
      return Status::ok();
    }
    // A gradient has its parameter's shape.
    const ParamTensor *tensor = params_.find(buffer.paramName);
    if (!tensor)
      return Status::error(fmt::format("buffer {}: unknown parameter '{}'", id,
                                       buffer.paramName));
    // Ranks 1 and 2 have one natural matrix view, which must be the one
    // asked for; other ranks are viewed as any matrix of the same size.
    const std::vector<int64_t> &shape = tensor->shape;
    bool matches = dynb::checkedElementCount(buffer.rows, buffer.cols) ==
                   tensor->numElements();
    if (shape.size() == 1)
      matches &= buffer.rows == 1 && buffer.cols == shape[0];
    else if (shape.size() == 2)
      matches &= buffer.rows == shape[0] && buffer.cols == shape[1];
    if (!matches)
      return Status::error(fmt::format(
          "buffer {}: parameter '{}' has shape [{}], not [{} x {}]", id,
          buffer.paramName, fmt::join(shape, ", "), buffer.rows, buffer.cols));
    return Status::ok();
  }

  Status checkBufferId(BufferId id, const char *role) const {
    if (id >= plan_.buffers.size())
      return fail(fmt::format("{} names buffer {} but the plan has {}", role,
                              id, plan_.buffers.size()));
    return Status::ok();
  }

  Status checkWritable(BufferId id, const char *role) const {
    if (plan_.buffers[id].kind == BufferDesc::Kind::Parameter)
      return fail(fmt::format("{} writes parameter buffer {} ('{}')", role, id,
                              plan_.buffers[id].paramName));
    if (plan_.buffers[id].kind == BufferDesc::Kind::Host)
      return fail(fmt::format("{} writes host buffer {}", role, id));
    // Only parameter-gradient steps add to gradients; anything else would
    // overwrite what earlier plans accumulated.
    if (plan_.buffers[id].kind == BufferDesc::Kind::Gradient)
      return fail(fmt::format("{} writes gradient buffer {} ('{}')", role, id,
                              plan_.buffers[id].paramName));
    return Status::ok();
  }

  Status checkGradientBuffer(BufferId id, const char *role) const {
    if (Status status = checkBufferId(id, role))
      return status;
    if (plan_.buffers[id].kind != BufferDesc::Kind::Gradient)
      return fail(
          fmt::format("{} buffer {} is not a gradient buffer", role, id));
    return Status::ok();
  }

  Status checkParamGrad(const ParamGradStep &step) const {
    if (Status status = checkRegion(step.dy, "dy"))
      return status;
    if (Status status = checkGradientBuffer(step.weightGrad, "gradient"))
      return status;
    const BufferDesc &grad = plan_.buffers[step.weightGrad];
    if (plan_.buffers[step.dy.buffer].kind == BufferDesc::Kind::Gradient)
      return fail("reads a gradient buffer as its operand");
    if (step.op == ParamGradStep::Op::Rows) {
      if (step.dy.cols != grad.cols)
        return fail(fmt::format("dy has {} cols but table gradient {} is "
                                "[{} x {}]",
                                step.dy.cols, step.weightGrad, grad.rows,
                                grad.cols));
      if (static_cast<int64_t>(step.rows.size()) != step.dy.rows)
        return fail(fmt::format("{} rows for {} rows of dy", step.rows.size(),
                                step.dy.rows));
      for (size_t i = 0; i < step.rows.size(); ++i)
        if (step.rows[i] < 0 || step.rows[i] >= grad.rows)
          return fail(fmt::format("row {} names table row {} of {}", i,
                                  step.rows[i], grad.rows));
      return Status::ok();
    }
    if (Status status = checkRegion(step.x, "x"))
      return status;
    if (step.dy.rows != step.x.rows)
      return fail(fmt::format("dy has {} rows but x has {}", step.dy.rows,
                              step.x.rows));
    if (step.dy.cols != grad.rows || step.x.cols != grad.cols)
      return fail(fmt::format("dy [.. x {}] and x [.. x {}] do not make the "
                              "[{} x {}] weight gradient {}",
                              step.dy.cols, step.x.cols, grad.rows, grad.cols,
                              step.weightGrad));
    if (plan_.buffers[step.x.buffer].kind == BufferDesc::Kind::Gradient)
      return fail("reads a gradient buffer as its operand");
    if (step.hasBias) {
      if (Status status = checkGradientBuffer(step.biasGrad, "bias gradient"))
        return status;
      const BufferDesc &bias = plan_.buffers[step.biasGrad];
      if (bias.rows * bias.cols != grad.rows)
        return fail(fmt::format("bias gradient {} has {} elements, not {}",
                                step.biasGrad, bias.rows * bias.cols,
                                grad.rows));
      if (step.biasGrad == step.weightGrad)
        return fail("the bias and weight gradients are one buffer");
    }
    return Status::ok();
  }

  Status checkRegion(const Region &region, const char *role) const {
    if (Status status = checkBufferId(region.buffer, role))
      return status;
    const BufferDesc &buffer = plan_.buffers[region.buffer];
    if (region.row < 0 || region.rows < 0 || region.col < 0 ||
        region.cols < 0 || region.row + region.rows > buffer.rows ||
        region.col + region.cols > buffer.cols)
      return fail(fmt::format(
          "{} rows [{}, {}) cols [{}, {}) is outside buffer {} [{} x {}]", role,
          region.row, region.row + region.rows, region.col,
          region.col + region.cols, region.buffer, buffer.rows, buffer.cols));
    return Status::ok();
  }

  Status checkGather(const GatherStep &gather) const {
    if (Status status = checkRegion(gather.dst, "dst"))
      return status;
    if (Status status = checkWritable(gather.dst.buffer, "dst"))
      return status;
    if (static_cast<int64_t>(gather.sources.size()) != gather.dst.rows)
      return fail(fmt::format("{} sources for {} dst rows",
                              gather.sources.size(), gather.dst.rows));
    if (gather.srcCol < 0)
      return fail(fmt::format("negative srcCol {}", gather.srcCol));
    for (size_t i = 0; i < gather.sources.size(); ++i) {
      const RowRef &source = gather.sources[i];
      if (Status status = checkBufferId(source.buffer, "source"))
        return status;
      const BufferDesc &buffer = plan_.buffers[source.buffer];
      if (source.row < 0 || source.row >= buffer.rows ||
          gather.srcCol + gather.dst.cols > buffer.cols)
        return fail(fmt::format("source {} reads row {} cols [{}, {}) of "
                                "buffer {} [{} x {}]",
                                i, source.row, gather.srcCol,
                                gather.srcCol + gather.dst.cols, source.buffer,
                                buffer.rows, buffer.cols));
    }
    return Status::ok();
  }

  Status checkSoftmaxXent(const SoftmaxXentStep &step) const {
    if (Status status = checkRegion(step.logits, "logits"))
      return status;
    if (Status status = checkRegion(step.loss, "loss"))
      return status;
    if (Status status = checkWritable(step.loss.buffer, "loss"))
      return status;
    if (step.gradient) {
      if (step.loss.rows != step.logits.rows ||
          step.loss.cols != step.logits.cols)
        return fail(fmt::format("gradient is [{} x {}] for [{} x {}] logits",
                                step.loss.rows, step.loss.cols,
                                step.logits.rows, step.logits.cols));
    } else if (step.loss.rows != step.logits.rows || step.loss.cols != 1)
      return fail(fmt::format("loss is [{} x {}] for {} rows of logits",
                              step.loss.rows, step.loss.cols,
                              step.logits.rows));
    if (step.logits.cols < 1)
      return fail("logits have no columns");
    if (static_cast<int64_t>(step.labels.size()) != step.logits.rows)
      return fail(fmt::format("{} labels for {} rows", step.labels.size(),
                              step.logits.rows));
    for (size_t i = 0; i < step.labels.size(); ++i)
      if (step.labels[i] < 0 || step.labels[i] >= step.logits.cols)
        return fail(fmt::format("label {} of row {} is outside [0, {})",
                                step.labels[i], i, step.logits.cols));
    return Status::ok();
  }

  Status checkGemm(const GemmStep &gemm) const {
    if (Status status = checkRegion(gemm.a, "a"))
      return status;
    if (Status status = checkRegion(gemm.c, "c"))
      return status;
    if (Status status = checkWritable(gemm.c.buffer, "c"))
      return status;
    if (Status status = checkBufferId(gemm.weight, "weight"))
      return status;
    const BufferDesc &weight = plan_.buffers[gemm.weight];
    if (gemm.weightAsStored) {
      if (gemm.hasBias || gemm.relu)
        return fail("a weight read as stored takes no bias or ReLU");
      if (gemm.a.cols != weight.rows || gemm.c.cols != weight.cols)
        return fail(fmt::format("a has {} cols and c {}, but weight {} read "
                                "as stored is [{} x {}]",
                                gemm.a.cols, gemm.c.cols, gemm.weight,
                                weight.rows, weight.cols));
    } else if (gemm.a.cols != weight.cols)
      return fail(fmt::format("a has {} cols but weight {} is [{} x {}]",
                              gemm.a.cols, gemm.weight, weight.rows,
                              weight.cols));
    if (!gemm.weightAsStored && gemm.c.cols != weight.rows)
      return fail(fmt::format("c has {} cols but weight {} is [{} x {}]",
                              gemm.c.cols, gemm.weight, weight.rows,
                              weight.cols));
    if (gemm.a.rows != gemm.c.rows)
      return fail(
          fmt::format("a has {} rows but c has {}", gemm.a.rows, gemm.c.rows));
    if (gemm.hasBias) {
      if (Status status = checkBufferId(gemm.bias, "bias"))
        return status;
      const BufferDesc &bias = plan_.buffers[gemm.bias];
      if (bias.rows * bias.cols != weight.rows)
        return fail(fmt::format("bias buffer {} has {} elements, not {}",
                                gemm.bias, bias.rows * bias.cols, weight.rows));
    }
    // oneDNN does not allow its output to alias an input.
    if (gemm.a.buffer == gemm.c.buffer && overlaps(gemm.a, gemm.c))
      return fail("a and c overlap");
    return Status::ok();
  }

  Status checkKernel(const KernelStep &kernel) const {
    if (!kernel.fn)
      return fail("no kernel function");
    if (kernel.rows < 0)
      return fail(fmt::format("negative row count {}", kernel.rows));
    for (size_t i = 0; i < kernel.args.size(); ++i) {
      std::string role = fmt::format("arg {}", i);
      if (Status status = checkRegion(kernel.args[i], role.c_str()))
        return status;
      if (kernel.args[i].rows != kernel.rows)
        return fail(fmt::format("arg {} has {} rows, the step {}", i,
                                kernel.args[i].rows, kernel.rows));
    }
    return Status::ok();
  }

  /// Map regions hold whole rows of `elements` floats, one map a row.
  Status checkMapRegion(const Region &region, int64_t elements,
                        const char *role) const {
    if (Status status = checkRegion(region, role))
      return status;
    const BufferDesc &buffer = plan_.buffers[region.buffer];
    if (region.col != 0 || region.cols != elements || buffer.cols != elements)
      return fail(fmt::format("{} must span whole rows of {} elements (a map "
                              "a row), got cols [{}, {}) of buffer {} [{} x "
                              "{}]",
                              role, elements, region.col,
                              region.col + region.cols, region.buffer,
                              buffer.rows, buffer.cols));
    return Status::ok();
  }

  Status checkMap(const MapStep &m) const {
    if (m.channels <= 0 || m.height <= 0 || m.width <= 0)
      return fail(
          fmt::format("empty map {} x {} x {}", m.channels, m.height, m.width));
    bool concat = m.op == MapStep::Op::ChannelConcat;
    size_t wantInputs = concat ? m.inChannels.size() : 1;
    if (m.inputs.size() != wantInputs || (concat && wantInputs < 2))
      return fail(fmt::format("{} inputs", m.inputs.size()));
    int64_t oc = 0, oh = 0, ow = 0;
    mapOutputShape(m, oc, oh, ow);
    if (oc <= 0 || oh <= 0 || ow <= 0)
      return fail(fmt::format("empty output map {} x {} x {}", oc, oh, ow));
    int64_t rows = m.out.rows;
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      int64_t c = concat ? m.inChannels[i] : m.channels;
      if (c <= 0)
        return fail(fmt::format("input {} has {} channels", i, c));
      std::string role = fmt::format("input {}", i);
      if (Status status =
              checkMapRegion(m.inputs[i], c * m.height * m.width, role.c_str()))
        return status;
      if (m.inputs[i].rows != rows)
        return fail(fmt::format("input {} has {} rows, out {}", i,
                                m.inputs[i].rows, rows));
      if (m.inputs[i].buffer == m.out.buffer)
        return fail(
            fmt::format("input {} and out share buffer {}", i, m.out.buffer));
    }
    if (Status status = checkMapRegion(m.out, oc * oh * ow, "out"))
      return status;
    if (Status status = checkWritable(m.out.buffer, "out"))
      return status;
    if (m.op != MapStep::Op::Conv)
      return Status::ok();
    if (m.kernelH <= 0 || m.kernelW <= 0 || m.padding < 0)
      return fail(fmt::format("window {} x {} padding {}", m.kernelH, m.kernelW,
                              m.padding));
    if (Status status = checkBufferId(m.weight, "weight"))
      return status;
    const BufferDesc &w = plan_.buffers[m.weight];
    int64_t window[] = {m.outChannels, m.channels, m.kernelH, m.kernelW};
    if (w.rows * w.cols != dynb::checkedElementCount(window))
      return fail(fmt::format("weight buffer {} has {} elements, not {} x {} "
                              "x {} x {}",
                              m.weight, w.rows * w.cols, m.outChannels,
                              m.channels, m.kernelH, m.kernelW));
    if (m.hasBias) {
      if (Status status = checkBufferId(m.bias, "bias"))
        return status;
      const BufferDesc &b = plan_.buffers[m.bias];
      if (b.rows * b.cols != m.outChannels)
        return fail(fmt::format("bias buffer {} has {} elements, not {}",
                                m.bias, b.rows * b.cols, m.outChannels));
    }
    return Status::ok();
  }

  /// A region of rows [0, rows) and cols columns of an arena buffer.
  Status checkScratch(const Region &region, int64_t rows, int64_t cols,
                      const char *role) const {
    if (Status status = checkRegion(region, role))
      return status;
    if (Status status = checkWritable(region.buffer, role))
      return status;
    if (region.rows != rows || region.cols != cols)
      return fail(fmt::format("{} is [{} x {}], not [{} x {}]", role,
                              region.rows, region.cols, rows, cols));
    return Status::ok();
  }

  Status checkDispatch(const DispatchStep &d) const {
    if (d.experts < 1 || d.topK < 1 || d.topK > d.experts)
      return fail(fmt::format("top {} of {} experts", d.topK, d.experts));
    if (Status status = checkRegion(d.x, "x"))
      return status;
    const int64_t tokens = d.x.rows, routed = tokens * d.topK;
    if (Status status = checkScratch(d.out, tokens, d.out.cols, "out"))
      return status;
    auto checkGateWeight = [&](BufferId id, const char *role) {
      if (Status status = checkBufferId(id, role))
        return status;
      const BufferDesc &w = plan_.buffers[id];
      if (w.rows != d.experts || w.cols != d.x.cols)
        return fail(fmt::format("{} weight buffer {} is [{} x {}], not "
                                "[{} x {}]",
                                role, id, w.rows, w.cols, d.experts, d.x.cols));
      return Status::ok();
    };
    if (Status status = checkGateWeight(d.gateWeight, "gate"))
      return status;
    if (d.hasNoise)
      if (Status status = checkGateWeight(d.noiseWeight, "noise"))
        return status;
    Region logits{d.logits, 0, tokens, 0, d.experts};
    if (Status status = checkScratch(logits, tokens, d.experts, "logits"))
      return status;
    if (d.hasNoise) {
      Region noise{d.noiseLogits, 0, tokens, 0, d.experts};
      if (Status status = checkScratch(noise, tokens, d.experts, "noise"))
        return status;
    }
    if (Status status = checkScratch(d.routedIn, routed, d.x.cols, "routedIn"))
      return status;
    if (Status status =
            checkScratch(d.routedOut, routed, d.out.cols, "routedOut"))
      return status;
    for (size_t i = 0; i < d.body.size(); ++i) {
      const Step &inner = d.body[i];
      Status status;
      if (inner.kind() == Step::Kind::Kernel) {
        status = checkKernel(inner.kernel());
        if (!status && inner.kernel().rows != routed)
          status = fail(fmt::format("kernel on {} rows, not the {} routed",
                                    inner.kernel().rows, routed));
      } else if (inner.kind() == Step::Kind::Gemm) {
        status = checkExpertGemm(inner.gemm(), d.experts, routed);
      } else {
        status = fail("only GEMM and kernel steps run inside a dispatch");
      }
      if (status)
        return Status::error(
            fmt::format("{} (body step {})", status.message(), i));
    }
    return Status::ok();
  }

  /// A GEMM of the expert body: per-expert slices of stacked parameters.
  Status checkExpertGemm(const GemmStep &gemm, int64_t experts,
                         int64_t routed) const {
    if (Status status = checkScratch(gemm.c, routed, gemm.c.cols, "c"))
      return status;
    if (Status status = checkRegion(gemm.a, "a"))
      return status;
    if (gemm.a.rows != routed)
      return fail(
          fmt::format("a has {} rows, not the {} routed", gemm.a.rows, routed));
    if (Status status = checkBufferId(gemm.weight, "weight"))
      return status;
    const BufferDesc &w = plan_.buffers[gemm.weight];
    if (w.rows != experts * gemm.c.cols || w.cols != gemm.a.cols)
      return fail(fmt::format("weight buffer {} is [{} x {}], not {} experts "
                              "of [{} x {}]",
                              gemm.weight, w.rows, w.cols, experts, gemm.c.cols,
                              gemm.a.cols));
    if (gemm.hasBias) {
      if (Status status = checkBufferId(gemm.bias, "bias"))
        return status;
      const BufferDesc &b = plan_.buffers[gemm.bias];
      if (b.rows * b.cols != experts * gemm.c.cols)
        return fail(fmt::format("bias buffer {} has {} elements, not {}",
                                gemm.bias, b.rows * b.cols,
                                experts * gemm.c.cols));
    }
    if (gemm.a.buffer == gemm.c.buffer && overlaps(gemm.a, gemm.c))
      return fail("a and c overlap");
    return Status::ok();
  }

  static bool overlaps(const Region &lhs, const Region &rhs) {
    return lhs.rows > 0 && lhs.cols > 0 && rhs.rows > 0 && rhs.cols > 0 &&
           lhs.row < rhs.row + rhs.rows && rhs.row < lhs.row + lhs.rows &&
           lhs.col < rhs.col + rhs.cols && rhs.col < lhs.col + lhs.cols;
  }

  const Plan &plan_;
  const ParameterStore &params_;
  std::string context_; // names the step being checked in every message
};

} // namespace

Status dynb::rt::validatePlan(const Plan &plan, const ParameterStore &params) {
  return PlanValidator(plan, params).validate();
}
