// warp_queue_kernel.cuh: the warp_select and block_select kernels, included only by the bucket units that
// src/cuda/select/buckets.cmake generates (one per bucket of tuning.hpp's WarpQueueBuckets).
//
// warp_select: one warp per row, four rows per block. block_select: one block of four warps per row, each
// warp with its own queues over an interleaved quarter of the row; the four warp queues are then merged
// through shared memory (a two-step tree of warp_merge_keep_smallest).
#pragma once

#include <cstdint>

#include "cuda/common/error.cuh"
#include "cuda/primitives/bitonic.cuh"
#include "cuda/primitives/row_scan.cuh"
#include "cuda/select/support.cuh"
#include "cuda/select/warp_queue/tuning.hpp"
#include "cuda/select/warp_queue/warp_queue.cuh"
#include "cuda/select/warp_queue/warp_select.cuh"

#ifndef GKNN_SELECT_TUNING
#define GKNN_SELECT_TUNING 0
#endif

namespace gknn::detail::cuda {
namespace warp_queue_impl {

using warp_queue::kLoads;
using warp_queue::kWarps;
/// The tuning policy of a kernel (tuning.hpp).
constexpr warp_queue::Policy policy(bool block, int K) { return warp_queue::policy(warp_queue::kPolicyArch, block, K); }

struct Args {
  const float* keys;
  int64_t stride;
  int64_t rows;
  int cols;
  int k;
  float* out_keys;
  int64_t* out_labels;
  int64_t out_stride;
  int64_t label_offset;
};

/// Feeds one row segment to the queue of this warp; g is the thread's rank among the G readers.
/// The keys of a round are offered in order until a vote asks for a merge; the merge then runs at this one
/// place (not once per key position: the network is large) and the round resumes after the key that asked.
template <int G, int K, int NT, class Idx>
__device__ __forceinline__ void consume_row(WarpQueue<K, NT, Idx>& q, const float* row_keys, const Idx* row_labels,
                                            int cols, int g) {
  rowscan::scan_row<G, kLoads>(row_keys, cols, g, false, [&](const rowscan::Round<kLoads>& r) {
    unsigned todo = (1u << (4 * kLoads)) - 1;  // key positions not yet offered: the same in every lane
    while (todo) {
      bool need_merge = false;
#pragma unroll
      for (int e = 0; e < 4 * kLoads; ++e) {
        if (need_merge || !((todo >> e) & 1u)) continue;
        todo &= ~(1u << e);
        const int col = r.col[e / 4] + e % 4;
        auto index_of = [&] { return row_labels ? row_labels[col] : static_cast<Idx>(col); };
        if (((r.valid >> e) & 1u) && q.is_candidate(r.key[e], index_of)) q.insert(r.key[e], index_of());
        need_merge = q.must_merge();
      }
      if (need_merge) q.merge();
    }
  });
  q.merge();  // what is left in the thread queues
}

template <int K, int NT, class Idx>
__device__ __forceinline__ void write_queue(const WarpQueue<K, NT, Idx>& q, const Args& a, int64_t row) {
  q.write([&](int e, float key, Idx idx) {
    a.out_keys[row * a.out_stride + e] = key;
    a.out_labels[row * a.out_stride + e] = selsup::to_label(idx, a.label_offset);
  });
}

template <int K, int NT, class Idx>
__global__ void __launch_bounds__(32 * kWarps, policy(false, K).min_blocks)
    warp_select_kernel(const Args a, const Idx* labels) {
  const int64_t row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= a.rows) return;  // whole warps leave; no block barrier follows
  WarpQueue<K, NT, Idx> q;
  q.init(a.k);
  consume_row<32>(q, a.keys + row * a.stride, labels ? labels + row * a.stride : nullptr, a.cols,
                  bitonic::lane_id());
  write_queue(q, a, row);
}

template <int K, int NT, class Idx>
__global__ void __launch_bounds__(32 * kWarps, policy(true, K).min_blocks)
    block_select_kernel(const Args a, const Idx* labels) {
  constexpr int Q = K / 32;
  extern __shared__ __align__(16) unsigned char smem[];
  float* sk = reinterpret_cast<float*>(smem);
  Idx* sv = reinterpret_cast<Idx*>(smem + sizeof(float) * (kWarps / 2) * K);
  const int64_t row = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = bitonic::lane_id();
  WarpQueue<K, NT, Idx> q;
  q.init(a.k);
  consume_row<32 * kWarps>(q, a.keys + row * a.stride, labels ? labels + row * a.stride : nullptr, a.cols,
                           threadIdx.x);
  // Tree merge: warps [step, 2*step) hand their queues to warps [0, step).
#pragma unroll
  for (int step = kWarps / 2; step >= 1; step /= 2) {
    if (warp >= step && warp < 2 * step) {
      float* rk = sk + (warp - step) * K;
      Idx* rv = sv + (warp - step) * K;
#pragma unroll
      for (int s = 0; s < Q; ++s) rk[s * 32 + lane] = q.wk[s], rv[s * 32 + lane] = q.wv[s];
    }
    __syncthreads();
    if (warp < step) {
      const float* rk = sk + warp * K;
      const Idx* rv = sv + warp * K;
      // keep-smallest against the other sorted queue: a[K-1-j] meets b[j], b read mirrored from shared memory
#pragma unroll
      for (int s = 0; s < Q; ++s)
        bitonic::keep(q.wk[Q - 1 - s], q.wv[Q - 1 - s], rk[s * 32 + 31 - lane], rv[s * 32 + 31 - lane], true);
      bitonic::warp_merge_steps<Q, 16 * Q>(q.wk, q.wv);
    }
    __syncthreads();
  }
  if (warp == 0) write_queue(q, a, row);
}

template <int NT>
constexpr bool always_built() {
  for (int n : warp_queue::kAlwaysBuilt)
    if (n == NT) return true;
  return false;
}

template <bool block, int K, int NT>
constexpr bool built() {
  // 32+ slot queues (K >= 1024) compile slowly: only their default thread-queue length is built.
  return GKNN_SELECT_TUNING || NT == policy(block, K).thread_queue || (K < 1024 && always_built<NT>());
}

template <bool block, int K, int NT, class Idx>
void launch_typed(const RowsLaunch& l) {
  const SelectInput& in = *l.in;
  const Args a{in.keys, in.stride, in.rows, static_cast<int>(in.cols), l.k, l.out->keys, l.out->labels,
               l.out->stride, in.label_offset};
  const Idx* labels = reinterpret_cast<const Idx*>(in.labels);
  const int64_t blocks = block ? in.rows : (in.rows + kWarps - 1) / kWarps;
  GKNN_EXPECT(blocks < (int64_t(1) << 31), ErrorCode::Unsupported, "warp_select: ", in.rows, " rows exceed the grid");
  if constexpr (block) {
    const size_t bytes = size_t(kWarps / 2) * K * (sizeof(float) + sizeof(Idx));
    selsup::allow_shared(block_select_kernel<K, NT, Idx>, bytes);
    block_select_kernel<K, NT, Idx><<<static_cast<unsigned>(blocks), 32 * kWarps, bytes, l.stream>>>(a, labels);
  } else {
    warp_select_kernel<K, NT, Idx><<<static_cast<unsigned>(blocks), 32 * kWarps, 0, l.stream>>>(a, labels);
  }
  GKNN_CUDA_CHECK_LAUNCH();
}

template <bool block, int K, int NT>
void launch_length(const RowsLaunch& l) {
  if constexpr (built<block, K, NT>()) {
    launch_typed<block, K, NT, int32_t>(l);
  } else {
    detail::fail(ErrorCode::Unsupported, block ? "block_select" : "warp_select", ": thread_queue = ", NT,
                 " is not built for the k bucket ", K, " (configure with -DGKNN_SELECT_TUNING=ON)");
  }
}

template <bool block, int K>
void launch(const RowsLaunch& l) {
  if (l.in->labels) {  // int64 labels: the default length only (the choice changes speed, never the result)
    launch_typed<block, K, policy(block, K).thread_queue, int64_t>(l);
    return;
  }
  switch (l.thread_queue) {
    case 2: return launch_length<block, K, 2>(l);
    case 3: return launch_length<block, K, 3>(l);
    case 4: return launch_length<block, K, 4>(l);
    case 5: return launch_length<block, K, 5>(l);
    case 6: return launch_length<block, K, 6>(l);
    case 7: return launch_length<block, K, 7>(l);
    case 8: return launch_length<block, K, 8>(l);
    case 9: return launch_length<block, K, 9>(l);
    case 10: return launch_length<block, K, 10>(l);
  }
  detail::fail(ErrorCode::InvalidArgument, "thread_queue must be 0 (default) or 2..10, got ", l.thread_queue);
}

}  // namespace warp_queue_impl

template <int K>
void warp_select_launch(const RowsLaunch& l) {
  warp_queue_impl::launch<false, K>(l);
}
template <int K>
void block_select_launch(const RowsLaunch& l) {
  warp_queue_impl::launch<true, K>(l);
}

}  // namespace gknn::detail::cuda

/// One bucket: what the generated units warp_select_kNNNN.cu / block_select_kNNNN.cu instantiate (bucket.cu.in).
#define GKNN_WARP_SELECT_BUCKET(K) \
  namespace gknn::detail::cuda { template void warp_select_launch<K>(const RowsLaunch&); }
#define GKNN_BLOCK_SELECT_BUCKET(K) \
  namespace gknn::detail::cuda { template void block_select_launch<K>(const RowsLaunch&); }
