// warp_queue.cuh: FAISS' WarpSelect state (thesis 3.6.3) for one warp, shared by warp_select and block_select.
//
// The warp queue holds the best K pairs seen so far (K = bucket >= k, strided over the lanes, ascending);
// every lane also owns a thread queue of NT pairs (ascending, its last slot the largest). Invariants:
//  1. a key is offered to a thread queue only if it ranks before the warp queue's k-th pair (the threshold);
//  2. a thread queue whose largest pair ranks before the threshold is full of candidates: the warp merges
//     before that lane inserts again (checked by a vote after every key), so insertion only ever drops a pair
//     that cannot be in the top-k;
//  3. every processed pair of the top-k is in the warp queue or in a thread queue.
// Merge: the 32*NT thread-queue pairs are sorted as one warp-wide array, the warp queue keeps the K smallest
// of both (warp_merge_keep_smallest), the thread queues restart empty (whatever they held beyond the warp
// queue ranks after K pairs), and the threshold is re-read.
#pragma once

#include <cstdint>

#include "cuda/primitives/bitonic.cuh"

namespace gknn::detail::cuda {

template <int K, int NT, class Idx>
struct WarpQueue {
  static constexpr int Q = K / 32;
  static_assert(K >= 32 && bitonic::is_pow2(K) && NT >= 1, "K a power of two >= 32");

  float wk[Q];
  Idx wv[Q];
  float tk[NT];
  Idx tv[NT];
  float th_key;
  Idx th_idx;
  int k;

  __device__ __forceinline__ void init(int k_) {
    k = k_;
#pragma unroll
    for (int s = 0; s < Q; ++s) wk[s] = bitonic::sentinel_key(), wv[s] = bitonic::sentinel_index<Idx>();
    reset_thread_queue();
    th_key = bitonic::sentinel_key();
    th_idx = bitonic::sentinel_index<Idx>();
  }

  __device__ __forceinline__ void reset_thread_queue() {
#pragma unroll
    for (int i = 0; i < NT; ++i) tk[i] = bitonic::sentinel_key(), tv[i] = bitonic::sentinel_index<Idx>();
  }

  /// Whether (key, index) ranks before the threshold; the index is fetched only on a key tie.
  template <class IndexOf>
  __device__ __forceinline__ bool is_candidate(float key, IndexOf&& index_of) const {
    return key < th_key || (key == th_key && bitonic::before(key, index_of(), th_key, th_idx));
  }

  /// Sorted insertion into the thread queue, dropping its largest pair (invariant 2 makes that safe).
  __device__ __forceinline__ void insert(float key, Idx idx) {
#pragma unroll
    for (int i = NT - 1; i > 0; --i) {
      const bool shift = bitonic::before(key, idx, tk[i - 1], tv[i - 1]);
      const bool here = bitonic::before(key, idx, tk[i], tv[i]);
      if (shift) tk[i] = tk[i - 1], tv[i] = tv[i - 1];
      else if (here) tk[i] = key, tv[i] = idx;
    }
    if (bitonic::before(key, idx, tk[0], tv[0])) tk[0] = key, tv[0] = idx;
  }

  /// Warp vote: some thread queue is full of candidates.
  __device__ __forceinline__ bool must_merge() const {
    return __any_sync(bitonic::kFullMask, bitonic::before(tk[NT - 1], tv[NT - 1], th_key, th_idx));
  }

  __device__ __forceinline__ void merge() {
    bitonic::warp_sort<NT>(tk, tv);
    bitonic::warp_merge_keep_smallest<Q, NT>(wk, wv, tk, tv);
    reset_thread_queue();
    update_threshold();
  }

  /// Threshold := element k-1 of the warp queue (slot (k-1)/32 of lane (k-1)%32).
  __device__ __forceinline__ void update_threshold() {
    const int slot = (k - 1) / 32;
    float key = bitonic::sentinel_key();
    Idx idx = bitonic::sentinel_index<Idx>();
#pragma unroll
    for (int s = 0; s < Q; ++s)
      if (s == slot) key = wk[s], idx = wv[s];
    th_key = __shfl_sync(bitonic::kFullMask, key, (k - 1) % 32);
    th_idx = __shfl_sync(bitonic::kFullMask, idx, (k - 1) % 32);
  }

  /// Writes elements e < k of the warp queue (coalesced: element e = s*32 + lane).
  template <class Write>
  __device__ __forceinline__ void write(Write&& write_one) const {
    const int lane = bitonic::lane_id();
#pragma unroll
    for (int s = 0; s < Q; ++s)
      if (s * 32 + lane < k) write_one(s * 32 + lane, wk[s], wv[s]);
  }
};

}  // namespace gknn::detail::cuda
