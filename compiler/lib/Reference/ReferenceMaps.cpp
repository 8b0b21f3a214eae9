//===- ReferenceMaps.cpp - The oracle's feature-map ops, plain loops ------===//
//
// Maps are C x H x W row-major (PyTorch's layout), whatever layout the
// batched path picks; sums accumulate in double.
//
//===----------------------------------------------------------------------===//
#include "dynb/Reference/ReferenceInterpreter.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace dynb;

namespace {
/// The last three dimensions of a map value.
struct MapShape {
  int64_t c, h, w;
  int64_t size() const { return c * h * w; }
};

MapShape mapShape(Value v) {
  ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
  return {s[s.size() - 3], s[s.size() - 2], s[s.size() - 1]};
}
} // namespace

FailureOr<bool>
ReferenceInterpreter::evalMapOp(Operation *op,
                                DenseMap<Value, std::vector<float>> &env) {
  if (auto conv = dyn_cast<Conv2DOp>(op)) {
    FailureOr<const rt::ParamTensor *> w = param(op, conv.getWeight());
    if (failed(w))
      return failure();
    const float *bias = nullptr;
    if (auto b = conv.getBias()) {
      FailureOr<const rt::ParamTensor *> bt = param(op, *b);
      if (failed(bt))
        return failure();
      bias = (*bt)->data.data();
    }
    MapShape in = mapShape(conv.getInput()), out = mapShape(conv.getResult());
    int64_t kh = (*w)->shape[2], kw = (*w)->shape[3];
    int64_t pad = conv.getPaddingAttr().getInt();
    const std::vector<float> &x = env[conv.getInput()];
    int64_t rows = x.size() / in.size();
    std::vector<float> y(rows * out.size());
    std::vector<double> acc(out.h * out.w);
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x.data() + r * in.size();
      for (int64_t o = 0; o < out.c; ++o) {
        std::fill(acc.begin(), acc.end(), bias ? double(bias[o]) : 0.0);
        for (int64_t c = 0; c < in.c; ++c)
          for (int64_t u = 0; u < kh; ++u)
            for (int64_t v = 0; v < kw; ++v) {
              double wv = (*w)->data[((o * in.c + c) * kh + u) * kw + v];
              for (int64_t i = 0; i < out.h; ++i) {
                int64_t yi = i + u - pad;
                if (yi < 0 || yi >= in.h)
                  continue;
                const float *xrow = xr + (c * in.h + yi) * in.w;
                double *arow = acc.data() + i * out.w;
                int64_t jLo = std::max<int64_t>(0, pad - v);
                int64_t jHi = std::min<int64_t>(out.w, in.w + pad - v);
                for (int64_t j = jLo; j < jHi; ++j)
                  arow[j] += wv * double(xrow[j + v - pad]);
              }
            }
        float *yr = y.data() + r * out.size() + o * out.h * out.w;
        for (int64_t i = 0; i < out.h * out.w; ++i)
          yr[i] = static_cast<float>(acc[i]);
      }
    }
    env[conv.getResult()] = std::move(y);
    return true;
  }
  if (auto pool = dyn_cast<MaxPool2DOp>(op)) {
    MapShape in = mapShape(pool.getInput()), out = mapShape(pool.getResult());
    const std::vector<float> &x = env[pool.getInput()];
    int64_t rows = x.size() / in.size();
    std::vector<float> y(rows * out.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < in.c; ++c)
        for (int64_t i = 0; i < out.h; ++i)
          for (int64_t j = 0; j < out.w; ++j) {
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t u = 0; u < 2; ++u)
              for (int64_t v = 0; v < 2; ++v)
                m = std::max(m, x[r * in.size() +
                                  (c * in.h + 2 * i + u) * in.w + 2 * j + v]);
            y[r * out.size() + (c * out.h + i) * out.w + j] = m;
          }
    env[pool.getResult()] = std::move(y);
    return true;
  }
  if (auto flatten = dyn_cast<FlattenOp>(op)) {
    // C x H x W row-major is already the flattened order.
    env[flatten.getResult()] = env[flatten.getInput()];
    return true;
  }
  if (auto concat = dyn_cast<ChannelConcatOp>(op)) {
    MapShape out = mapShape(concat.getResult());
    int64_t rows = env[concat.getInputs()[0]].size() /
                   mapShape(concat.getInputs()[0]).size();
    std::vector<float> y(rows * out.size());
    for (int64_t r = 0; r < rows; ++r) {
      float *dst = y.data() + r * out.size();
      for (Value v : concat.getInputs()) {
        int64_t n = mapShape(v).size();
        const std::vector<float> &x = env[v];
        dst = std::copy_n(x.data() + r * n, n, dst);
      }
    }
    env[concat.getResult()] = std::move(y);
    return true;
  }
  return false;
}
