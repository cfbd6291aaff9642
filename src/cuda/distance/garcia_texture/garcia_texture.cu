// garcia_texture.cu: knn_cuda_texture (document 002): the base rows are read through a texture object, queries
// from global memory. One thread per (query, base row) pair in 16x16 blocks, as in the document.
//
// FALLBACK: a linear texture addresses at most DeviceProps::max_texture_1d_linear elements and needs a base
// pointer aligned to DeviceProps::texture_alignment. A base tile beyond either limit is computed by
// garcia_global instead (same keys, same summation order), counted in DistanceContext::fallbacks. The pipeline
// keeps tiles of a resident base at multiples of 128 rows, so tile pointers stay 512-byte aligned.
//
// Texture objects are cached per thread by (device, pointer, elements): the pipeline reuses the same few tile
// pointers for every query tile, so steady state creates none. An evicted object is destroyed only after the
// event recorded at its last use has completed (destroying one that a queued kernel still reads is undefined).
#include <vector>

#include "cuda/common/device.cuh"
#include "cuda/distance/key_ops.cuh"
#include "cuda/distance/kernels.cuh"
#include "cuda/distance/query_launch.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kTile = 16;
const QueryGrid kTileGrid{dim3(kTile, kTile), kTile, kTile};

template <Metric M>
__global__ void __launch_bounds__(kTile * kTile)
    garcia_texture_kernel(const float* __restrict__ queries, int64_t query_stride, int64_t nq, cudaTextureObject_t base,
                          int64_t base_stride, int64_t nb, int64_t dim, float p, float* __restrict__ out,
                          int64_t out_stride) {
  const int64_t j = int64_t(blockIdx.x) * kTile + threadIdx.x;
  const int64_t qi = int64_t(blockIdx.y) * kTile + threadIdx.y;
  if (qi >= nq || j >= nb) return;
  const float* q = queries + qi * query_stride;
  const int first = static_cast<int>(j * base_stride);  // fits: the launcher checked the texture limit
  float acc = 0.f;
  for (int d = 0; d < dim; ++d)
    acc = KeyOp<M>::combine(acc, KeyOp<M>::term(q[d], tex1Dfetch<float>(base, first + d), p));
  out[qi * out_stride + j] = acc;
}

struct CachedTexture {
  int device;
  const float* ptr;
  int64_t elements;
  cudaTextureObject_t tex;
  cudaEvent_t last_use;
};

/// Per-thread cache; objects left at thread exit are reclaimed with the CUDA context (no CUDA calls at exit).
class TextureCache {
 public:
  CachedTexture& get(int device, const float* ptr, int64_t elements) {
    for (CachedTexture& c : items_)
      if (c.device == device && c.ptr == ptr && c.elements == elements) return c;
    if (items_.size() >= kCapacity) evict_oldest();
    CachedTexture c{device, ptr, elements, 0, nullptr};
    cudaResourceDesc res{};
    res.resType = cudaResourceTypeLinear;
    res.res.linear.devPtr = const_cast<float*>(ptr);
    res.res.linear.desc = cudaCreateChannelDesc<float>();
    res.res.linear.sizeInBytes = static_cast<size_t>(elements) * sizeof(float);
    cudaTextureDesc desc{};
    desc.readMode = cudaReadModeElementType;
    GKNN_CUDA_TRY(cudaCreateTextureObject(&c.tex, &res, &desc, nullptr));
    GKNN_CUDA_TRY(cudaEventCreateWithFlags(&c.last_use, cudaEventDisableTiming));
    items_.push_back(c);
    return items_.back();
  }

 private:
  static constexpr size_t kCapacity = 64;
  void evict_oldest() {
    CachedTexture& old = items_.front();
    GKNN_CUDA_TRY(cudaEventSynchronize(old.last_use));
    GKNN_CUDA_TRY(cudaDestroyTextureObject(old.tex));
    GKNN_CUDA_TRY(cudaEventDestroy(old.last_use));
    items_.erase(items_.begin());
  }
  std::vector<CachedTexture> items_;
};

thread_local TextureCache t_cache;

bool fits_texture(const DistanceInput& in, int64_t elements, int device) {
  const DeviceProps& props = device_props(device);
  const int64_t limit = in.texture_limit > 0 ? in.texture_limit : props.max_texture_1d_linear;
  const size_t align = props.texture_alignment > 0 ? props.texture_alignment : 1;
  return elements <= limit && reinterpret_cast<uintptr_t>(in.base) % align == 0;
}

}  // namespace


void garcia_texture_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  const int64_t elements = (in.nb - 1) * in.base_stride + in.dim;  // last element read + 1
  if (!fits_texture(in, elements, ctx.device)) {
    if (ctx.fallbacks) ++*ctx.fallbacks;
    garcia_global_distance(in, out, ctx);
    return;
  }
  CachedTexture& cached = t_cache.get(ctx.device, in.base, elements);
  launch_over_queries(in, out, ctx.stream, kTileGrid, cached.tex,
                      [](auto tag) { return &garcia_texture_kernel<decltype(tag)::value>; });
  GKNN_CUDA_TRY(cudaEventRecord(cached.last_use, ctx.stream));
}

}  // namespace gknn::detail::cuda
