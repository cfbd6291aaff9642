// bits_kernel.cuh: the buffered bitonic select kernel (thesis 4.1), included only by the bucket units that
// src/cuda/select/buckets.cmake generates (one per bucket of tuning.hpp's BitsBuckets / BitsGlobalBuckets).
//
// One thread block per block row. Keys are streamed with several 16-byte loads in flight per thread; a key
// that ranks before the current k-th pair (the threshold) is appended to a shared buffer of K slots through
// a warp-aggregated atomicAdd. When the buffer overflows, the buffer and the current top-K are merged by a
// block-wide bitonic network in registers (sort the buffer, reversed separator R_2K, merge steps), which also
// lowers the threshold; candidates that did not fit are re-filtered and retried. A final merge yields the
// sorted top-K, of which the first k are written.
//
// Merge array: M = 2K pairs over MT = min(THREADS, K) threads, T = M / MT slots each (blocked layout,
// bitonic.cuh). Threads t < MT/2 hold the top-K half, threads MT/2 <= t < MT the buffer half. Between merges
// the top-K lives in shared memory (bits) or in global memory (bits_global), stored "by rows"
// (slot i of thread t at i*MT/2 + t) so that loading it back is coalesced and bank-conflict free; the buffer
// uses the same row mapping for its slots.
#pragma once

#include <cstdint>

#include "cuda/common/error.cuh"
#include "cuda/primitives/bitonic.cuh"
#include "cuda/primitives/row_scan.cuh"
#include "cuda/select/bits/bits.cuh"
#include "cuda/select/bits/tuning.hpp"
#include "cuda/select/support.cuh"

namespace gknn::detail::cuda {
namespace bits_impl {

using namespace bitonic;

/// The tuning policy of a bucket (tuning.hpp): threads per block, 16-byte loads in flight per thread, and the
/// resident blocks per SM the register allocation must allow.
constexpr bits_tuning::Policy policy(int K, bool global) {
  return bits_tuning::policy(bits_tuning::kPolicyArch, global, K);
}
constexpr int block_threads(int K, bool global) { return policy(K, global).threads; }
constexpr int loads_in_flight(int K) { return policy(K, false).loads; }
constexpr int min_blocks(int K, bool global) { return policy(K, global).min_blocks; }

template <class Idx>
struct Params {
  const float* keys;
  const Idx* idx;
  int64_t stride;
  int64_t cols;
  int64_t seg;
  int parts;
  int k;
  float* out_keys;
  int64_t* out_labels;
  Idx* out_idx;
  int64_t out_stride;
  int64_t label_offset;
  float* global_keys;
  Idx* global_idx;
  bool prefetch;
};

template <int K, int THREADS, bool kGlobal>
struct Shape {
  static constexpr int M = 2 * K;
  static constexpr int MT = THREADS < K ? THREADS : K;
  static constexpr int T = M / MT;
  static constexpr int HALF = MT / 2;
  /// Shared pairs: bits keeps top-K + buffer (M); bits_global the buffer, at least the 2*MT of scratch.
  static constexpr int kSharedPairs = kGlobal ? (K > 2 * MT ? K : 2 * MT) : M;
  static_assert(T >= 2 && MT % 32 == 0, "buckets start at 32");
};

template <int K, int THREADS, bool kGlobal, class Idx>
constexpr size_t shared_bytes() {
  return size_t(Shape<K, THREADS, kGlobal>::kSharedPairs) * (sizeof(float) + sizeof(Idx));
}

template <int K, int THREADS, bool kGlobal, class Idx>
__global__ void __launch_bounds__(THREADS, min_blocks(K, kGlobal)) bits_kernel(const Params<Idx> p) {
  using S = Shape<K, THREADS, kGlobal>;
  constexpr int T = S::T, MT = S::MT, HALF = S::HALF;
  extern __shared__ __align__(16) unsigned char smem[];
  float* sh_keys = reinterpret_cast<float*>(smem);
  Idx* sh_idx = reinterpret_cast<Idx*>(smem + sizeof(float) * S::kSharedPairs);
  // Top-K home (pos = i*HALF + t) and buffer slots (slot p at (p % T)*HALF + p / T).
  float* top_keys = kGlobal ? p.global_keys + int64_t(blockIdx.x) * K : sh_keys;
  Idx* top_idx = kGlobal ? p.global_idx + int64_t(blockIdx.x) * K : sh_idx;
  float* buf_keys = kGlobal ? sh_keys : sh_keys + K;
  Idx* buf_idx = kGlobal ? sh_idx : sh_idx + K;
  const Scratch<Idx> scratch{sh_keys, sh_idx};
  __shared__ int s_count;
  __shared__ float s_th_key;
  __shared__ Idx s_th_idx;

  const int t = threadIdx.x;
  const int64_t row = blockIdx.x / p.parts;
  const int part = blockIdx.x % p.parts;
  const int64_t begin = int64_t(part) * p.seg;
  const int len = static_cast<int>(p.cols - begin < p.seg ? p.cols - begin : p.seg);
  const float* row_keys = p.keys + row * p.stride + begin;
  const Idx* row_idx = p.idx ? p.idx + row * p.stride + begin : nullptr;
  const int k = p.k;

  for (int e = t; e < K; e += THREADS) top_keys[e] = sentinel_key(), top_idx[e] = sentinel_index<Idx>();
  if (t == 0) s_count = 0, s_th_key = sentinel_key(), s_th_idx = sentinel_index<Idx>();
  __syncthreads();
  float th_key = sentinel_key();
  Idx th_idx = sentinel_index<Idx>();

  auto index_of = [&](int col) -> Idx { return row_idx ? row_idx[col] : static_cast<Idx>(begin + col); };

  // Merges buffer and top-K; afterwards (when !last) the top-K is home again and the threshold updated.
  float rk[T];
  Idx rv[T];
  auto merge = [&](bool last) {
    const int filled = min(s_count, K);
    if (t < HALF) {
#pragma unroll
      for (int i = 0; i < T; ++i) rk[i] = top_keys[i * HALF + t], rv[i] = top_idx[i * HALF + t];
    } else {
#pragma unroll
      for (int i = 0; i < T; ++i) {
        const int slot = (t - HALF) * T + i;
        const bool ok = t < MT && slot < filled;
        rk[i] = ok ? buf_keys[i * HALF + (t - HALF)] : sentinel_key();
        rv[i] = ok ? buf_idx[i * HALF + (t - HALF)] : sentinel_index<Idx>();
      }
    }
    __syncthreads();  // the scratch overlays the buffer (and the shared top-K)
    block_sort<T, MT, K>(rk, rv, scratch);
    block_reversed_separator<T, MT, K>(rk, rv, scratch);
    block_merge_steps<T, MT, K / 2>(rk, rv, scratch);
    if (last) return;
    __syncthreads();
    if (t < HALF) {
#pragma unroll
      for (int i = 0; i < T; ++i) {
        top_keys[i * HALF + t] = rk[i], top_idx[i * HALF + t] = rv[i];
        if (t * T + i == k - 1) s_th_key = rk[i], s_th_idx = rv[i];
      }
    }
    if (t == 0) s_count = 0;
    __syncthreads();
    th_key = s_th_key;
    th_idx = s_th_idx;
  };

  auto is_candidate = [&](float key, int col) {
    return key < th_key || (key == th_key && before(key, index_of(col), th_key, th_idx));
  };

  const int lane = t & 31;
  constexpr int kLoads = loads_in_flight(K);
  rowscan::scan_row<THREADS, kLoads>(row_keys, len, t, p.prefetch, [&](const rowscan::Round<kLoads>& r) {
    unsigned pending = 0;
#pragma unroll
    for (int e = 0; e < 4 * kLoads; ++e)
      if (((r.valid >> e) & 1u) && is_candidate(r.key[e], r.col[e / 4] + e % 4)) pending |= 1u << e;
    while (true) {
      if (__any_sync(kFullMask, pending != 0)) {
#pragma unroll
        for (int e = 0; e < 4 * kLoads; ++e) {
          const bool want = (pending >> e) & 1u;
          const unsigned ballot = __ballot_sync(kFullMask, want);
          if (ballot == 0) continue;
          int base = 0;
          if (lane == __ffs(ballot) - 1) base = atomicAdd(&s_count, __popc(ballot));
          base = __shfl_sync(kFullMask, base, __ffs(ballot) - 1);
          const int slot = base + __popc(ballot & ((1u << lane) - 1));
          if (want && slot < K) {
            const int pos = (slot % T) * HALF + slot / T;
            buf_keys[pos] = r.key[e];
            buf_idx[pos] = index_of(r.col[e / 4] + e % 4);
            pending &= ~(1u << e);
          }
        }
      }
      if (!__syncthreads_or(pending != 0)) break;
      merge(false);  // the buffer overflowed: make room, lower the threshold, retry what is still a candidate
#pragma unroll
      for (int e = 0; e < 4 * kLoads; ++e)
        if (((pending >> e) & 1u) && !is_candidate(r.key[e], r.col[e / 4] + e % 4)) pending &= ~(1u << e);
    }
  });

  __syncthreads();
  merge(true);
  if (t < HALF) {
    const int64_t out_row = blockIdx.x;
#pragma unroll
    for (int i = 0; i < T; ++i) {
      const int e = t * T + i;
      if (e < k) {
        p.out_keys[out_row * p.out_stride + e] = rk[i];
        if (p.out_labels) p.out_labels[out_row * p.out_stride + e] = selsup::to_label(rv[i], p.label_offset);
        else p.out_idx[out_row * p.out_stride + e] = rv[i];
      }
    }
  }
}

template <int K, bool kGlobal, class Idx>
void launch_typed(const BitsLaunch& l) {
  constexpr int kThreads = block_threads(K, kGlobal);
  const Params<Idx> p{l.keys,       static_cast<const Idx*>(l.idx),       l.stride,     l.cols,
                      l.seg,        l.parts,                              l.k,          l.out_keys,
                      l.out_labels, static_cast<Idx*>(l.out_idx),         l.out_stride, l.label_offset,
                      l.global_keys, static_cast<Idx*>(l.global_idx),     l.prefetch};
  constexpr size_t bytes = shared_bytes<K, kThreads, kGlobal, Idx>();
  auto kernel = bits_kernel<K, kThreads, kGlobal, Idx>;
  selsup::allow_shared(kernel, bytes);
  const int64_t blocks = l.rows * l.parts;
  GKNN_EXPECT(blocks < (int64_t(1) << 31), ErrorCode::Unsupported, "bits: ", blocks, " block rows exceed the grid");
  kernel<<<static_cast<unsigned>(blocks), kThreads, bytes, l.stream>>>(p);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace bits_impl

template <int K, bool kGlobal>
void bits_launch(const BitsLaunch& l) {
  if (l.idx64) bits_impl::launch_typed<K, kGlobal, int64_t>(l);
  else bits_impl::launch_typed<K, kGlobal, int32_t>(l);
}

}  // namespace gknn::detail::cuda

/// One bucket of bits / bits_global: what the generated units bits_kNNNN.cu / bits_global_kNNNN.cu instantiate.
#define GKNN_BITS_BUCKET(K) \
  namespace gknn::detail::cuda { template void bits_launch<K, false>(const BitsLaunch&); }
#define GKNN_BITS_GLOBAL_BUCKET(K) \
  namespace gknn::detail::cuda { template void bits_launch<K, true>(const BitsLaunch&); }
