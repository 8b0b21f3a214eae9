//===- MapRunner.cpp - Convolution, pooling, reorders and concat on maps --===//
//
// Uses oneDNN's C++ API for its memory descriptors and primitive
// descriptors, which would take several times the code in the C API; its
// exceptions are caught at run() and returned as a Status.
//
//===----------------------------------------------------------------------===//
#include "MapRunner.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>

using namespace dynb::rt;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

void dynb::rt::mapOutputShape(const MapStep &step, int64_t &c, int64_t &h,
                              int64_t &w) {
  c = step.channels;
  h = step.height;
  w = step.width;
  switch (step.op) {
  case MapStep::Op::Conv:
    c = step.outChannels;
    h = step.height + 2 * step.padding - step.kernelH + 1;
    w = step.width + 2 * step.padding - step.kernelW + 1;
    break;
  case MapStep::Op::MaxPool:
    h = step.height / 2;
    w = step.width / 2;
    break;
  case MapStep::Op::ChannelConcat:
    c = 0;
    for (int64_t ci : step.inChannels)
      c += ci;
    break;
  case MapStep::Op::ToMapLayout:
  case MapStep::Op::FromMapLayout:
    break;
  }
}

uint64_t dynb::rt::mapStepMacs(const MapStep &step) {
  if (step.op != MapStep::Op::Conv)
    return 0;
  int64_t c, h, w;
  mapOutputShape(step, c, h, w);
  return uint64_t(step.out.rows) * uint64_t(c * h * w) *
         uint64_t(step.channels * step.kernelH * step.kernelW);
}

namespace {

/// The runtime's layout of a map of C channels (see MapStep): blocks of
/// the machine's vector width, which oneDNN's direct convolutions want.
tag mapLayout(int64_t channels) {
  static const bool avx512 = [] {
    unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  }();
  if (avx512 && channels % 16 == 0)
    return tag::nChw16c;
  return channels % 8 == 0 ? tag::nChw8c : tag::nhwc;
}

dnnl::memory::desc mapDesc(int64_t n, int64_t c, int64_t h, int64_t w,
                           tag layout) {
  return dnnl::memory::desc({n, c, h, w}, dt::f32, layout);
}

/// Everything that selects a primitive: the op and every size.
using PrimitiveKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t,
                                int64_t, int64_t, int64_t, int64_t, bool, bool>;

struct CachedConv {
  dnnl::convolution_forward primitive;
  dnnl::memory::desc weightsDesc;
};

} // namespace

struct MapRunner::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<PrimitiveKey, CachedConv> convs;
  std::map<PrimitiveKey, dnnl::pooling_forward> pools;
  std::map<PrimitiveKey, dnnl::reorder> reorders;
  std::map<std::string, dnnl::concat> concats;
  /// Weights in the primitive's layout, by (parameter address, layout).
  std::map<std::pair<const float *, std::string>, dnnl::memory> weights;
  uint64_t created = 0;

  void conv(const MapStep &s, float *in, float *out, const float *w,
            const float *b);
  void pool(const MapStep &s, float *in, float *out);
  void reorder(const MapStep &s, float *in, float *out);
  void concat(const MapStep &s, const ResolvedBuffers &resolved, float *out);
};

void MapRunner::Impl::conv(const MapStep &s, float *in, float *out,
                           const float *w, const float *b) {
  int64_t n = s.out.rows, oc, oh, ow;
  mapOutputShape(s, oc, oh, ow);
  PrimitiveKey key{0,         n,         s.channels, s.height, s.width,  oc,
                   s.kernelH, s.kernelW, s.padding,  s.relu,   s.hasBias};
  auto it = convs.find(key);
  if (it == convs.end()) {
    auto src = mapDesc(n, s.channels, s.height, s.width, mapLayout(s.channels));
    auto dst = mapDesc(n, oc, oh, ow, mapLayout(oc));
    dnnl::memory::desc wAny({oc, s.channels, s.kernelH, s.kernelW}, dt::f32,
                            tag::any);
    dnnl::memory::dims strides{1, 1}, pad{s.padding, s.padding};
    auto desc = s.hasBias ? dnnl::convolution_forward::desc(
                                dnnl::prop_kind::forward_inference,
                                dnnl::algorithm::convolution_direct, src, wAny,
                                dnnl::memory::desc({oc}, dt::f32, tag::x), dst,
                                strides, pad, pad)
                          : dnnl::convolution_forward::desc(
                                dnnl::prop_kind::forward_inference,
                                dnnl::algorithm::convolution_direct, src, wAny,
                                dst, strides, pad, pad);
    dnnl::primitive_attr attr;
    if (s.relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
    it = convs
             .emplace(key, CachedConv{dnnl::convolution_forward(pd),
                                      pd.weights_desc()})
             .first;
    ++created;
  }
  CachedConv &c = it->second;
  // The weights in the primitive's layout, reordered once.
  dnnl::memory::desc plainW({oc, s.channels, s.kernelH, s.kernelW}, dt::f32,
                            tag::oihw);
  std::string layoutKey(reinterpret_cast<const char *>(&c.weightsDesc.data),
                        sizeof(c.weightsDesc.data));
  auto wKey = std::make_pair(w, layoutKey);
  auto wIt = weights.find(wKey);
  if (wIt == weights.end()) {
    dnnl::memory plain(plainW, engine, const_cast<float *>(w));
    dnnl::memory packed(c.weightsDesc, engine);
    dnnl::reorder(plain, packed).execute(stream, plain, packed);
    stream.wait();
    wIt = weights.emplace(wKey, packed).first;
  }
  auto src = mapDesc(n, s.channels, s.height, s.width, mapLayout(s.channels));
  auto dst = mapDesc(n, oc, oh, ow, mapLayout(oc));
  dnnl::memory srcMem(src, engine, in), dstMem(dst, engine, out);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, srcMem},
                                             {DNNL_ARG_WEIGHTS, wIt->second},
                                             {DNNL_ARG_DST, dstMem}};
  if (s.hasBias)
    args.emplace(DNNL_ARG_BIAS,
                 dnnl::memory(dnnl::memory::desc({oc}, dt::f32, tag::x), engine,
                              const_cast<float *>(b)));
  c.primitive.execute(stream, args);
  stream.wait();
}

void MapRunner::Impl::pool(const MapStep &s, float *in, float *out) {
  int64_t n = s.out.rows, oc, oh, ow;
  mapOutputShape(s, oc, oh, ow);
  PrimitiveKey key{1, n, s.channels, s.height, s.width, 0, 0, 0, 0, 0, 0};
  tag layout = mapLayout(s.channels);
  auto src = mapDesc(n, s.channels, s.height, s.width, layout);
  auto dst = mapDesc(n, oc, oh, ow, layout);
  auto it = pools.find(key);
  if (it == pools.end()) {
    // Floor mode: the right and bottom padding are whatever makes the
    // window count oh (negative padding drops an odd last row).
    dnnl::memory::dims kernel{2, 2}, strides{2, 2}, padL{0, 0},
        padR{(oh - 1) * 2 + 2 - s.height, (ow - 1) * 2 + 2 - s.width};
    dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference,
                                     dnnl::algorithm::pooling_max, src, dst,
                                     strides, kernel, padL, padR);
    dnnl::pooling_forward::primitive_desc pd(desc, engine);
    it = pools.emplace(key, dnnl::pooling_forward(pd)).first;
    ++created;
  }
  dnnl::memory srcMem(src, engine, in), dstMem(dst, engine, out);
  it->second.execute(stream, {{DNNL_ARG_SRC, srcMem}, {DNNL_ARG_DST, dstMem}});
  stream.wait();
}

void MapRunner::Impl::reorder(const MapStep &s, float *in, float *out) {
  int64_t n = s.out.rows;
  bool toMap = s.op == MapStep::Op::ToMapLayout;
  tag from = toMap ? tag::nchw : mapLayout(s.channels);
  tag to = toMap ? mapLayout(s.channels) : tag::nchw;
  auto src = mapDesc(n, s.channels, s.height, s.width, from);
  auto dst = mapDesc(n, s.channels, s.height, s.width, to);
  dnnl::memory srcMem(src, engine, in), dstMem(dst, engine, out);
  if (from == to) {
    std::memcpy(out, in, src.get_size());
    return;
  }
  PrimitiveKey key{2, n, s.channels, s.height, s.width, toMap, 0, 0, 0, 0, 0};
  auto it = reorders.find(key);
  if (it == reorders.end()) {
    it = reorders.emplace(key, dnnl::reorder(srcMem, dstMem)).first;
    ++created;
  }
  it->second.execute(stream, srcMem, dstMem);
  stream.wait();
}

void MapRunner::Impl::concat(const MapStep &s, const ResolvedBuffers &resolved,
                             float *out) {
  int64_t n = s.out.rows, oc, oh, ow;
  mapOutputShape(s, oc, oh, ow);
  std::vector<dnnl::memory::desc> srcs;
  std::string key = fmt::format("{} {} {}", n, s.height, s.width);
  for (int64_t c : s.inChannels) {
    srcs.push_back(mapDesc(n, c, s.height, s.width, mapLayout(c)));
    key += fmt::format(" {}", c);
  }
  auto dst = mapDesc(n, oc, oh, ow, mapLayout(oc));
  auto it = concats.find(key);
  if (it == concats.end()) {
    dnnl::concat::primitive_desc pd(dst, /*concat_dimension=*/1, srcs, engine);
    it = concats.emplace(key, dnnl::concat(pd)).first;
    ++created;
  }
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_DST, dnnl::memory(dst, engine, out)}};
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const Region &r = s.inputs[i];
    args.emplace(
        DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i),
        dnnl::memory(srcs[i], engine, resolved.at(r.buffer, r.row, 0)));
  }
  it->second.execute(stream, args);
  stream.wait();
}

MapRunner::MapRunner() : impl_(std::make_unique<Impl>()) {}
MapRunner::~MapRunner() = default;

uint64_t MapRunner::primitivesCreated() const { return impl_->created; }

Status MapRunner::run(const MapStep &step, const ResolvedBuffers &resolved) {
  if (step.out.rows == 0)
    return Status::ok();
  float *out = resolved.at(step.out.buffer, step.out.row, 0);
  const Region &in0 = step.inputs.front();
  float *in = resolved.at(in0.buffer, in0.row, 0);
  try {
    switch (step.op) {
    case MapStep::Op::Conv:
      impl_->conv(step, in, out, resolved.bases[step.weight],
                  step.hasBias ? resolved.bases[step.bias] : nullptr);
      break;
    case MapStep::Op::MaxPool:
      impl_->pool(step, in, out);
      break;
    case MapStep::Op::ToMapLayout:
    case MapStep::Op::FromMapLayout:
      impl_->reorder(step, in, out);
      break;
    case MapStep::Op::ChannelConcat:
      impl_->concat(step, resolved, out);
      break;
    }
  } catch (const dnnl::error &e) {
    return Status::error(
        fmt::format("oneDNN: {} ({})", e.what(), static_cast<int>(e.status)));
  }
  return Status::ok();
}
