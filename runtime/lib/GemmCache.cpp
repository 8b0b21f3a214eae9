//===- GemmCache.cpp - f32 C = A * W^T + bias with cached oneDNN matmuls --===//
//
// Uses oneDNN's C API: it reports failures as status codes, so nothing here
// can throw, and executing through it takes a plain argument array instead of
// the C++ API's per-call std::unordered_map.
//
//===----------------------------------------------------------------------===//
#include "dynb/Runtime/GemmCache.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

using namespace dynb::rt;

namespace {

/// What a primitive is specialised for. M is not part of it: the primitives
/// take M at execution time (DNNL_RUNTIME_DIM_VAL), so their number is
/// bounded by the distinct weight shapes and layouts, not by the batch sizes
/// the schedule produces.
struct MatmulKey {
  int64_t m; // or DNNL_RUNTIME_DIM_VAL (GemmCacheOptions::blockBits 0)
  int64_t k, n, lda, ldc;
  bool hasBias, relu;
  bool packed;   // GemmArgs::packedW given
  bool asStored; // GemmArgs::weightAsStored

  bool operator==(const MatmulKey &other) const {
    return m == other.m && k == other.k && n == other.n && lda == other.lda &&
           ldc == other.ldc && hasBias == other.hasBias && relu == other.relu &&
           packed == other.packed && asStored == other.asStored;
  }
};

struct MatmulKeyHash {
  size_t operator()(const MatmulKey &key) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int64_t field :
         {key.m, key.k, key.n, key.lda, key.ldc,
          static_cast<int64_t>(key.hasBias), static_cast<int64_t>(key.relu),
          static_cast<int64_t>(key.packed),
          static_cast<int64_t>(key.asStored)}) {
      h ^= static_cast<uint64_t>(field) + 0x9e3779b97f4a7c15ull + (h << 6) +
           (h >> 2);
    }
    return static_cast<size_t>(h);
  }
};

/// A primitive, memory objects for its fixed-shape operands (W, bias) and
/// for A and C at the M of the last call; each call swaps the data handles
/// and recreates A and C only when M changes.
struct CachedMatmul {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t a = nullptr;
  dnnl_memory_t w = nullptr;
  dnnl_memory_t bias = nullptr;
  dnnl_memory_t c = nullptr;
  dnnl_memory_t scratchpad = nullptr; // null when it needs none
  size_t scratchpadBytes = 0;
  int64_t m = -1;           // the M of a and c
  bool takesPacked = false; // W is bound to GemmArgs::packedW

  CachedMatmul() = default;
  CachedMatmul(const CachedMatmul &) = delete;
  CachedMatmul &operator=(const CachedMatmul &) = delete;
  ~CachedMatmul() {
    for (dnnl_memory_t memory : {a, w, bias, c, scratchpad})
      if (memory)
        dnnl_memory_destroy(memory);
    if (primitive)
      dnnl_primitive_destroy(primitive);
  }
};

Status dnnlError(const char *what, dnnl_status_t status) {
  return Status::error(
      fmt::format("oneDNN: {} failed: {}", what, dnnl_status2str(status)));
}

/// A [m x cols] row-major matrix with leading dimension ld.
dnnl_status_t rowMajor(dnnl_memory_desc_t &md, int64_t m, int64_t cols,
                       int64_t ld) {
  dnnl_dims_t dims = {m, cols}, strides = {ld, 1};
  return dnnl_memory_desc_init_by_strides(&md, 2, dims, dnnl_f32, strides);
}

dnnl_status_t createMemory(dnnl_engine_t engine, dnnl_memory_t &memory,
                           const dnnl_memory_desc_t &md) {
  dnnl_status_t result =
      dnnl_memory_create(&memory, &md, engine, DNNL_MEMORY_NONE);
  if (result != dnnl_success)
    memory = nullptr;
  return result;
}

} // namespace

struct GemmCache::Impl {
  GemmCacheOptions opts;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  // Engine or stream creation failure, reported by every run().
  Status setupError;
  std::unordered_map<MatmulKey, std::unique_ptr<CachedMatmul>, MatmulKeyHash>
      cache;
  uint64_t created = 0;
  uint64_t packedRuns = 0;
  // One scratchpad for every primitive of this cache (user scratchpad mode):
  // with oneDNN's own, each primitive keeps a buffer of its own.
  std::unique_ptr<char[]> scratchpad;
  size_t scratchpadBytes = 0;

  /// The layout oneDNN picks for a [n x k] weight read as B = W^T, by
  /// (k, n); filled by packedLayout().
  std::unordered_map<uint64_t, dnnl_memory_desc_t> packedLayouts;
  Status packedLayout(int64_t k, int64_t n, dnnl_memory_desc_t &out);

  Status createMatmul(const MatmulKey &key, CachedMatmul &out);
  Status bindRows(const MatmulKey &key, int64_t m, CachedMatmul &matmul);
  /// fixedM: a primitive for args.m itself, else a runtime-M one.
  Status runOneDnn(const GemmArgs &args, bool fixedM);
};

Status GemmCache::Impl::createMatmul(const MatmulKey &key, CachedMatmul &out) {
  // W is [n x k] row-major; read as B = W^T it is [k x n] with strides
  // {1, k}, which oneDNN handles as a transposed operand without a copy.
  // Read as stored, W is [k x n] row-major itself.
  dnnl_dims_t wDims = {key.k, key.n};
  dnnl_dims_t wStrides = {key.asStored ? key.n : 1, key.asStored ? 1 : key.k};
  dnnl_memory_desc_t aMd, wMd, biasMd, cMd;
  dnnl_status_t status;
  if ((status = rowMajor(aMd, key.m, key.k, key.lda)) != dnnl_success ||
      (status = dnnl_memory_desc_init_by_strides(&wMd, 2, wDims, dnnl_f32,
                                                 wStrides)) != dnnl_success ||
      (status = rowMajor(biasMd, 1, key.n, key.n)) != dnnl_success ||
      (status = rowMajor(cMd, key.m, key.n, key.ldc)) != dnnl_success)
    return dnnlError("memory descriptor", status);

  dnnl_matmul_desc_t matmulDesc;
  status = dnnl_matmul_desc_init(&matmulDesc, &aMd, &wMd,
                                 key.hasBias ? &biasMd : nullptr, &cMd);
  if (status != dnnl_success)
    return dnnlError("matmul descriptor", status);

  // A ReLU after the bias runs as an eltwise post-op, on each block of C
  // while it is still in cache. The scratchpad is ours (see Impl).
  dnnl_primitive_attr_t attr = nullptr;
  if ((status = dnnl_primitive_attr_create(&attr)) != dnnl_success)
    return dnnlError("primitive attributes", status);
  status =
      dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (status == dnnl_success && key.relu) {
    dnnl_post_ops_t postOps = nullptr;
    if ((status = dnnl_post_ops_create(&postOps)) == dnnl_success &&
        (status = dnnl_post_ops_append_eltwise(postOps, 1.0f, dnnl_eltwise_relu,
                                               0.0f, 0.0f)) == dnnl_success)
      status = dnnl_primitive_attr_set_post_ops(attr, postOps);
    if (postOps)
      dnnl_post_ops_destroy(postOps);
  }
  if (status != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    return dnnlError("primitive attributes", status);
  }
  dnnl_primitive_desc_t primitiveDesc = nullptr;
  if (key.packed) {
    // Packed weights serve where the primitive, left to choose, takes their
    // layout; otherwise it runs on the plain ones.
    dnnl_memory_desc_t packedMd, anyMd;
    dnnl_matmul_desc_t anyDesc;
    if (packedLayout(key.k, key.n, packedMd) ||
        dnnl_memory_desc_init_by_tag(&anyMd, 2, wDims, dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_matmul_desc_init(&anyDesc, &aMd, &anyMd,
                              key.hasBias ? &biasMd : nullptr,
                              &cMd) != dnnl_success ||
        dnnl_primitive_desc_create(&primitiveDesc, &anyDesc, attr, engine,
                                   nullptr) != dnnl_success) {
      primitiveDesc = nullptr;
    } else if (!dnnl_memory_desc_equal(
                   dnnl_primitive_desc_query_md(primitiveDesc,
                                                dnnl_query_weights_md, 0),
                   &packedMd)) {
      dnnl_primitive_desc_destroy(primitiveDesc);
      primitiveDesc = nullptr;
    } else {
      wMd = packedMd;
      out.takesPacked = true;
    }
  }
  if (!primitiveDesc) {
    status = dnnl_primitive_desc_create(&primitiveDesc, &matmulDesc, attr,
                                        engine, nullptr);
    if (status != dnnl_success) {
      dnnl_primitive_attr_destroy(attr);
      return dnnlError("matmul primitive descriptor", status);
    }
  }
  dnnl_primitive_attr_destroy(attr);
  const dnnl_memory_desc_t *scratchpadMd =
      dnnl_primitive_desc_query_md(primitiveDesc, dnnl_query_scratchpad_md, 0);
  out.scratchpadBytes =
      scratchpadMd ? dnnl_memory_desc_get_size(scratchpadMd) : 0;
  if (out.scratchpadBytes != 0 &&
      (status = createMemory(engine, out.scratchpad, *scratchpadMd)) !=
          dnnl_success) {
    dnnl_primitive_desc_destroy(primitiveDesc);
    return dnnlError("scratchpad memory object", status);
  }
  status = dnnl_primitive_create(&out.primitive, primitiveDesc);
  dnnl_primitive_desc_destroy(primitiveDesc);
  if (status != dnnl_success) {
    out.primitive = nullptr;
    return dnnlError("matmul primitive", status);
  }

  if ((status = createMemory(engine, out.w, wMd)) != dnnl_success ||
      (key.hasBias &&
       (status = createMemory(engine, out.bias, biasMd)) != dnnl_success))
    return dnnlError("memory object", status);
  ++created;
  return Status::ok();
}

Status GemmCache::Impl::bindRows(const MatmulKey &key, int64_t m,
                                 CachedMatmul &matmul) {
  if (matmul.m == m)
    return Status::ok();
  for (dnnl_memory_t *memory : {&matmul.a, &matmul.c})
    if (*memory) {
      dnnl_memory_destroy(*memory);
      *memory = nullptr;
    }
  matmul.m = -1;
  dnnl_memory_desc_t aMd, cMd;
  dnnl_status_t status;
  if ((status = rowMajor(aMd, m, key.k, key.lda)) != dnnl_success ||
      (status = rowMajor(cMd, m, key.n, key.ldc)) != dnnl_success)
    return dnnlError("memory descriptor", status);
  if ((status = createMemory(engine, matmul.a, aMd)) != dnnl_success ||
      (status = createMemory(engine, matmul.c, cMd)) != dnnl_success)
    return dnnlError("memory object", status);
  matmul.m = m;
  return Status::ok();
}

Status GemmCache::Impl::runOneDnn(const GemmArgs &args, bool fixedM) {
  if (setupError)
    return setupError;
  MatmulKey key{fixedM ? args.m : DNNL_RUNTIME_DIM_VAL,
                args.k,
                args.n,
                args.lda,
                args.ldc,
                args.bias != nullptr,
                args.relu,
                args.packedW != nullptr,
                args.weightAsStored};
  auto it = cache.find(key);
  if (it == cache.end()) {
    auto matmul = std::make_unique<CachedMatmul>();
    if (Status status = createMatmul(key, *matmul))
      return status;
    it = cache.emplace(key, std::move(matmul)).first;
  }
  CachedMatmul &matmul = *it->second;
  if (Status status = bindRows(key, args.m, matmul))
    return status;

  if (matmul.scratchpadBytes > scratchpadBytes) {
    // Never shrinks: the largest need of this cache's primitives.
    scratchpad.reset(new char[matmul.scratchpadBytes + 63]);
    scratchpadBytes = matmul.scratchpadBytes;
  }

  dnnl_exec_arg_t execArgs[5];
  int numArgs = 0;
  auto bind = [&](int argIndex, dnnl_memory_t memory, const float *data) {
    // oneDNN only reads inputs; its API has no const handles.
    dnnl_status_t status =
        dnnl_memory_set_data_handle(memory, const_cast<float *>(data));
    execArgs[numArgs++] = {argIndex, memory};
    return status;
  };
  dnnl_status_t status;
  if ((status = bind(DNNL_ARG_SRC, matmul.a, args.a)) != dnnl_success ||
      (status = bind(DNNL_ARG_WEIGHTS, matmul.w,
                     matmul.takesPacked ? args.packedW : args.w)) !=
          dnnl_success ||
      (args.bias && (status = bind(DNNL_ARG_BIAS, matmul.bias, args.bias)) !=
                        dnnl_success) ||
      (status = bind(DNNL_ARG_DST, matmul.c, args.c)) != dnnl_success)
    return dnnlError("setting a data handle", status);
  if (matmul.scratchpad) {
    // 64-byte aligned, as oneDNN's own scratchpads are.
    uintptr_t base = reinterpret_cast<uintptr_t>(scratchpad.get());
    auto *aligned = reinterpret_cast<float *>((base + 63) & ~uintptr_t(63));
    if ((status = bind(DNNL_ARG_SCRATCHPAD, matmul.scratchpad, aligned)) !=
        dnnl_success)
      return dnnlError("setting the scratchpad", status);
  }
  status = dnnl_primitive_execute(matmul.primitive, stream, numArgs, execArgs);
  if (status != dnnl_success)
    return dnnlError("matmul execution", status);
  packedRuns += matmul.takesPacked;
  status = dnnl_stream_wait(stream);
  if (status != dnnl_success)
    return dnnlError("stream wait", status);
  return Status::ok();
}

Status GemmCache::Impl::packedLayout(int64_t k, int64_t n,
                                     dnnl_memory_desc_t &out) {
  if (setupError)
    return setupError;
  uint64_t key = (uint64_t(k) << 32) ^ uint64_t(n);
  if (auto it = packedLayouts.find(key); it != packedLayouts.end()) {
    out = it->second;
    return Status::ok();
  }
  // The layout of a plain primitive of this shape. It does not depend on M,
  // the bias or the ReLU with oneDNN 2.6's brgemm kernels; createMatmul
  // checks that for every primitive that is to read it.
  const int64_t m = 64;
  dnnl_dims_t wDims = {k, n};
  dnnl_memory_desc_t aMd, wMd, cMd;
  dnnl_matmul_desc_t matmulDesc;
  dnnl_primitive_desc_t primitiveDesc = nullptr;
  dnnl_status_t status;
  if ((status = rowMajor(aMd, m, k, k)) != dnnl_success ||
      (status = dnnl_memory_desc_init_by_tag(
           &wMd, 2, wDims, dnnl_f32, dnnl_format_tag_any)) != dnnl_success ||
      (status = rowMajor(cMd, m, n, n)) != dnnl_success ||
      (status = dnnl_matmul_desc_init(&matmulDesc, &aMd, &wMd, nullptr,
                                      &cMd)) != dnnl_success ||
      (status = dnnl_primitive_desc_create(&primitiveDesc, &matmulDesc, nullptr,
                                           engine, nullptr)) != dnnl_success)
    return dnnlError("packed weight layout", status);
  out = *dnnl_primitive_desc_query_md(primitiveDesc, dnnl_query_weights_md, 0);
  dnnl_primitive_desc_destroy(primitiveDesc);
  packedLayouts.emplace(key, out);
  return Status::ok();
}

int64_t GemmCache::packedWeightFloats(int64_t k, int64_t n) {
  dnnl_memory_desc_t md;
  if (impl_->packedLayout(k, n, md))
    return -1;
  constexpr int64_t lineFloats = 64 / sizeof(float);
  int64_t floats = int64_t(dnnl_memory_desc_get_size(&md) / sizeof(float));
  return (floats + lineFloats - 1) / lineFloats * lineFloats;
}

Status GemmCache::packWeights(const float *w, int64_t k, int64_t n,
                              float *dst) {
  dnnl_memory_desc_t packedMd, plainMd;
  if (Status s = impl_->packedLayout(k, n, packedMd))
    return s;
  dnnl_dims_t wDims = {k, n}, wStrides = {1, k};
  dnnl_status_t status =
      dnnl_memory_desc_init_by_strides(&plainMd, 2, wDims, dnnl_f32, wStrides);
  if (status != dnnl_success)
    return dnnlError("memory descriptor", status);
  dnnl_primitive_desc_t reorderDesc = nullptr;
  status = dnnl_reorder_primitive_desc_create(
      &reorderDesc, &plainMd, impl_->engine, &packedMd, impl_->engine, nullptr);
  if (status != dnnl_success)
    return dnnlError("reorder descriptor", status);
  dnnl_primitive_t reorder = nullptr;
  status = dnnl_primitive_create(&reorder, reorderDesc);
  dnnl_primitive_desc_destroy(reorderDesc);
  if (status != dnnl_success)
    return dnnlError("reorder primitive", status);
  dnnl_memory_t from = nullptr, to = nullptr;
  if ((status = createMemory(impl_->engine, from, plainMd)) == dnnl_success &&
      (status = createMemory(impl_->engine, to, packedMd)) == dnnl_success &&
      (status = dnnl_memory_set_data_handle(from, const_cast<float *>(w))) ==
          dnnl_success &&
      (status = dnnl_memory_set_data_handle(to, dst)) == dnnl_success) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    if ((status = dnnl_primitive_execute(reorder, impl_->stream, 2, args)) ==
        dnnl_success)
      status = dnnl_stream_wait(impl_->stream);
  }
  for (dnnl_memory_t memory : {from, to})
    if (memory)
      dnnl_memory_destroy(memory);
  dnnl_primitive_destroy(reorder);
  return status == dnnl_success ? Status::ok()
                                : dnnlError("packing weights", status);
}

GemmCache::GemmCache(GemmCacheOptions opts) : impl_(std::make_unique<Impl>()) {
  impl_->opts = opts;
  dnnl_status_t status = dnnl_engine_create(&impl_->engine, dnnl_cpu, 0);
  if (status != dnnl_success) {
    impl_->engine = nullptr;
    impl_->setupError = dnnlError("CPU engine creation", status);
    return;
  }
  status = dnnl_stream_create(&impl_->stream, impl_->engine,
                              dnnl_stream_default_flags);
  if (status != dnnl_success) {
    impl_->stream = nullptr;
    impl_->setupError = dnnlError("stream creation", status);
  }
}

GemmCache::~GemmCache() {
  // Primitives and memory objects hold the engine, so they go first.
  impl_->cache.clear();
  if (impl_->stream)
    dnnl_stream_destroy(impl_->stream);
  if (impl_->engine)
    dnnl_engine_destroy(impl_->engine);
}

Status GemmCache::run(const GemmArgs &args) {
  if (args.m < 0 || args.k < 0 || args.n < 0 || args.lda < args.k ||
      args.ldc < args.n)
    return Status::error(
        fmt::format("gemm: bad shape m={} k={} n={} lda={} ldc={}", args.m,
                    args.k, args.n, args.lda, args.ldc));
  if (args.weightAsStored && (args.bias || args.relu || args.packedW))
    return Status::error("gemm: a weight read as stored takes no bias, ReLU "
                         "or packed copy");
  // A problem without multiply-adds (some dimension is 0) never reaches
  // oneDNN, which would need a primitive just to write the bias.
  int64_t macs = args.m * args.n * args.k;
  if (macs <= impl_->opts.smallProblemMaxMacs || macs == 0) {
    smallGemm(args);
    return Status::ok();
  }
  try {
    const int64_t fixedMaxM = impl_->opts.fixedMaxM;
    const int blockBits = impl_->opts.blockBits;
    if (args.m <= fixedMaxM || blockBits <= 0)
      return impl_->runOneDnn(args, args.m <= fixedMaxM);
    GemmArgs block = args;
    for (int64_t done = 0; done < args.m; done += block.m) {
      int64_t rest = args.m - done;
      block.m = rest;
      if (rest > fixedMaxM) {
        // rest rounded down to its blockBits leading binary digits.
        int shift =
            std::max(0, 63 - __builtin_clzll(uint64_t(rest)) - blockBits + 1);
        block.m = (rest >> shift) << shift;
      }
      block.a = args.a + done * args.lda;
      block.c = args.c + done * args.ldc;
      // A bounded set of block sizes (see GemmCacheOptions::blockBits).
      if (Status status = impl_->runOneDnn(block, /*fixedM=*/true))
        return status;
    }
    return Status::ok();
  } catch (const std::exception &e) {
    // Only the cache's own allocations can throw; oneDNN's C API does not.
    return Status::error(fmt::format("gemm: {}", e.what()));
  }
}

uint64_t GemmCache::primitivesCreated() const { return impl_->created; }

uint64_t GemmCache::packedWeightRuns() const { return impl_->packedRuns; }

size_t GemmCache::size() const { return impl_->cache.size(); }

void dynb::rt::smallGemm(const GemmArgs &args) {
  // Eight independent partial sums let the compiler vectorise the dot
  // product without reassociating floating-point adds itself.
  constexpr int64_t kLanes = 8;
  if (args.weightAsStored) {
    // c row i = sum over p of a[i][p] * w row p: rows of w, scaled, added.
    for (int64_t i = 0; i < args.m; ++i) {
      const float *aRow = args.a + i * args.lda;
      float *cRow = args.c + i * args.ldc;
      std::fill(cRow, cRow + args.n, 0.0f);
      for (int64_t p = 0; p < args.k; ++p) {
        const float *wRow = args.w + p * args.n;
        for (int64_t j = 0; j < args.n; ++j)
          cRow[j] += aRow[p] * wRow[j];
      }
    }
    return;
  }
  for (int64_t i = 0; i < args.m; ++i) {
    const float *aRow = args.a + i * args.lda;
    float *cRow = args.c + i * args.ldc;
    for (int64_t j = 0; j < args.n; ++j) {
      const float *wRow = args.w + j * args.k;
      float partial[kLanes] = {};
      int64_t p = 0;
      for (; p + kLanes <= args.k; p += kLanes)
        for (int64_t lane = 0; lane < kLanes; ++lane)
          partial[lane] += aRow[p + lane] * wRow[p + lane];
      float sum = 0.0f;
      for (; p < args.k; ++p)
        sum += aRow[p] * wRow[p];
      for (int64_t lane = 0; lane < kLanes; ++lane)
        sum += partial[lane];
      if (args.bias)
        sum += args.bias[j];
      cRow[j] = args.relu && sum < 0.0f ? 0.0f : sum;
    }
  }
}
