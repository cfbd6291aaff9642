// partial_bitonic_kernel.cuh: the kernel of partial_bitonic.cuh, included only by the bucket units that
// src/cuda/select/buckets.cmake generates (one per bucket of tuning.hpp's PartialBitonicBuckets).
#pragma once

#include "cuda/common/error.cuh"
#include "cuda/primitives/bitonic.cuh"
#include "cuda/select/partial_bitonic/partial_bitonic.cuh"
#include "cuda/select/partial_bitonic/tuning.hpp"
#include "cuda/select/support.cuh"

namespace gknn::detail::cuda {
namespace partial_bitonic_impl {

using namespace bitonic;

template <int K>
struct Shape {
  static constexpr int M = 2 * K;
  static constexpr int MT = partial_bitonic_tuning::policy(partial_bitonic_tuning::kPolicyArch, K).threads;
  static constexpr int T = M / MT;
  static constexpr int HALF = MT / 2;
};

template <int K, class Idx>
__global__ void __launch_bounds__(Shape<K>::MT) partial_bitonic_kernel(const float* keys, const Idx* labels,
                                                                      int64_t stride, int cols, int k,
                                                                      float* out_keys, int64_t* out_labels,
                                                                      int64_t out_stride, int64_t label_offset) {
  constexpr int T = Shape<K>::T, MT = Shape<K>::MT, HALF = Shape<K>::HALF;
  __shared__ float sc_keys[2 * MT];
  __shared__ Idx sc_idx[2 * MT];
  const Scratch<Idx> scratch{sc_keys, sc_idx};
  const int t = threadIdx.x;
  const int64_t row = blockIdx.x;
  const float* row_keys = keys + row * stride;
  const Idx* row_labels = labels ? labels + row * stride : nullptr;

  float rk[T];
  Idx rv[T];
#pragma unroll
  for (int i = 0; i < T; ++i) rk[i] = sentinel_key(), rv[i] = sentinel_index<Idx>();
  for (int start = 0; start < cols; start += K) {
    if (t >= HALF) {
      // The new segment is unsorted, so any element-to-slot mapping will do: pick the coalesced one.
#pragma unroll
      for (int i = 0; i < T; ++i) {
        const int col = start + i * HALF + (t - HALF);
        const bool ok = col < cols;
        rk[i] = ok ? row_keys[col] : sentinel_key();
        rv[i] = ok ? (row_labels ? row_labels[col] : static_cast<Idx>(col)) : sentinel_index<Idx>();
      }
    }
    block_sort<T, MT, K>(rk, rv, scratch);
    block_reversed_separator<T, MT, K>(rk, rv, scratch);
    block_merge_steps<T, MT, K / 2>(rk, rv, scratch);
  }
  if (t < HALF) {
#pragma unroll
    for (int i = 0; i < T; ++i) {
      const int e = t * T + i;
      if (e < k) {
        out_keys[row * out_stride + e] = rk[i];
        out_labels[row * out_stride + e] = selsup::to_label(rv[i], label_offset);
      }
    }
  }
}

template <int K, class Idx>
void launch_typed(const RowsLaunch& l) {
  const SelectInput& in = *l.in;
  GKNN_EXPECT(in.rows < (int64_t(1) << 31), ErrorCode::Unsupported, "partial_bitonic: ", in.rows,
              " rows exceed the grid");
  partial_bitonic_kernel<K, Idx><<<static_cast<unsigned>(in.rows), Shape<K>::MT, 0, l.stream>>>(
      in.keys, reinterpret_cast<const Idx*>(in.labels), in.stride, static_cast<int>(in.cols), l.k, l.out->keys,
      l.out->labels, l.out->stride, in.label_offset);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace partial_bitonic_impl

template <int K>
void partial_bitonic_launch(const RowsLaunch& l) {
  if (l.in->labels) partial_bitonic_impl::launch_typed<K, int64_t>(l);
  else partial_bitonic_impl::launch_typed<K, int32_t>(l);
}

}  // namespace gknn::detail::cuda

/// One bucket of partial_bitonic: what the generated unit partial_bitonic_kNNNN.cu instantiates (bucket.cu.in).
#define GKNN_PARTIAL_BITONIC_BUCKET(K) \
  namespace gknn::detail::cuda { template void partial_bitonic_launch<K>(const RowsLaunch&); }
