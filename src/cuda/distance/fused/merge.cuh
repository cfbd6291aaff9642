// merge.cuh: the k best of one query's sorted split lists, merged by one thread block (exact, ties by the smaller
// composite word). The kernels that split the base across blocks merge their splits' lists with it instead of
// leaving them to a selection: the fused kernel in the last block to finish, the few-query walk in a kernel after it
// (a block a query). For one query against 1M rows the selection's launches and ~35-50 us become ~10 us (H200, the
// few-query walk; in its last block 16-24 us: bench/results/fused_scan_2026-11-30_h200.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/primitives/shared_bitonic.cuh"

namespace gknn::detail::cuda::split_merge {

constexpr int kMaxK = 128;        ///< the longest list (and result)
constexpr int kMaxSplits = 1024;  ///< lists a query, at most
constexpr int kCap = 2048;        ///< entries a round gathers in shared memory
static_assert(kCap >= kMaxK, "a merge round must take any one list whole");

/// The min(k, n) smallest of v[0, n) (n a power of two), sorted, into out[0, min(k, n)); tmp holds n entries and
/// v is overwritten. Warps sort runs of up to 64 entries (warp barriers only), then pairs of runs are merged level
/// by level (merge path, one output entry a thread), each cut to k: a few block barriers where a bitonic sort of
/// the block needs log2(n) (log2(n) + 1) / 2 (H100: 45 barriers for 512 entries took a few us at the end of the
/// kernel). Barriers before and after.
template <int kThreads>
__device__ void block_top_k(uint64_t* v, uint64_t* tmp, int n, int k, uint64_t* out) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int stride = min(n, 64);
  __syncthreads();
  for (int r = warp; r * stride < n; r += kWarps) bitonic::warp_sort_padded(v + r * stride, stride, lane);
  int len = min(stride, k), runs = n / stride;
  uint64_t *src = v, *dst = tmp;
  while (runs > 1) {
    __syncthreads();
    const int out_len = min(2 * len, k), outputs = runs / 2 * out_len;
    for (int o = threadIdx.x; o < outputs; o += kThreads) {
      const int pair = o / out_len, j = o - pair * out_len;
      const uint64_t* a = src + 2 * pair * stride;
      dst[2 * pair * stride + j] = bitonic::merged_at(a, len, a + stride, len, j);
    }
    stride *= 2;
    len = out_len;
    runs /= 2;
    uint64_t* t = src;
    src = dst;
    dst = t;
  }
  __syncthreads();
  for (int j = threadIdx.x; j < len; j += kThreads) out[j] = src[j];
  __syncthreads();
}

/// Shared memory of merge_one_query: the k kept (acc), a second copy for their merge, and two work areas.
struct MergeShared {
  uint64_t* acc;          // kMaxK
  uint64_t* acc_next;     // kMaxK
  uint64_t* work;         // kCap
  uint64_t* tmp;          // kCap
  int* warp_totals;       // a block's warps
  static constexpr size_t bytes(int threads) { return (2 * kMaxK + 2 * kCap) * 8 + threads / 32 * 4; }
  /// The areas carved from `bytes(threads)` bytes of shared memory at `smem` (8-byte aligned).
  __device__ static MergeShared at(unsigned char* smem) {
    auto* words = reinterpret_cast<uint64_t*>(smem);
    return MergeShared{words, words + kMaxK, words + 2 * kMaxK, words + 2 * kMaxK + kCap,
                       reinterpret_cast<int*>(words + 2 * kMaxK + 2 * kCap)};
  }
};

/// The k best of one query's `splits` sorted lists (lists[s * k + j], composite keys, unique since every row is
/// in one list; short lists padded with ~0) into sm.acc[0, k), exactly: a sample (each list's first m entries, at
/// least k in all) gives k real entries and a threshold tau (their k-th); then every list's entries below tau are
/// gathered, their best merged with the k kept so far, which lowers tau. A round takes lists while they fit the
/// kCap entries of the work area; typical data need one round of a few dozen entries (ties spread over many
/// lists can need several, each taking at least one whole list). Which lists a round takes does not matter for
/// the result (a list is taken whole: all its entries below tau), so the counts are scanned in thread order.
/// The lists are read through L2 (other blocks wrote them), with few dependent round trips: each thread owns the
/// lists tid + i kThreads and loads their next kProbe entries together with the sample; only a list with more
/// than kProbe entries below tau is binary-searched and read again.
/// Called by the whole block after every split's list is visible.
template <int kThreads>
__device__ void merge_one_query(const uint64_t* lists, int splits, int k, const MergeShared& sm) {
  constexpr int kPerThread = kMaxSplits / kThreads;
  constexpr int kProbe = 4;
  constexpr uint64_t kNone = ~uint64_t(0);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int m = splits >= k ? 1 : (k + splits - 1) / splits;
  int pos[kPerThread];  // a list's entries before pos are in the sample (or the list is done: pos = k)
  uint64_t probe[kPerThread][kProbe];  // entries pos .. pos + kProbe - 1 (kNone past the end)
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int list = tid + i * kThreads;
    pos[i] = list < splits ? m : k;
#pragma unroll
    for (int e = 0; e < kProbe; ++e)
      probe[i][e] = pos[i] + e < k ? __ldcg(lists + int64_t(list) * k + pos[i] + e) : kNone;
  }
  const int n0 = splits * m;
  const int p0 = static_cast<int>(bitonic::next_pow2(static_cast<uint32_t>(n0)));
  for (int i = tid; i < p0; i += kThreads) sm.work[i] = i < n0 ? __ldcg(lists + (i / m) * k + i % m) : kNone;
  block_top_k<kThreads>(sm.work, sm.tmp, p0, k, sm.acc);
  uint64_t tau = sm.acc[k - 1];
  for (;;) {
    int cnt[kPerThread], mine = 0;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      cnt[i] = 0;
      if (pos[i] < k) {
#pragma unroll
        for (int e = 0; e < kProbe; ++e) cnt[i] += probe[i][e] < tau;  // still the next entries: pos did not move
        if (cnt[i] == kProbe && pos[i] + kProbe < k) {  // more below tau: a binary search of the rest
          const uint64_t* list = lists + int64_t(tid + i * kThreads) * k;
          int lo = pos[i] + kProbe, hi = k;
          while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (__ldcg(list + mid) < tau) lo = mid + 1;
            else hi = mid;
          }
          cnt[i] = lo - pos[i];
        }
        mine += cnt[i];
      }
    }
    // Exclusive prefix of the counts in thread order (a warp scan, then the warps' totals).
    int incl = mine;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xFFFFFFFFu, incl, d);
      if (lane >= d) incl += v;
    }
    if (lane == 31) sm.warp_totals[warp] = incl;
    __syncthreads();
    int before = incl - mine, total = 0;
    for (int w = 0; w < kThreads / 32; ++w) {
      const int t = sm.warp_totals[w];
      if (w < warp) before += t;
      total += t;
    }
    if (total == 0) break;
    const int take = min(total, kCap);
    const int p = static_cast<int>(bitonic::next_pow2(static_cast<uint32_t>(take)));
    for (int i = take + tid; i < p; i += kThreads) sm.work[i] = kNone;
    // A list is taken when the counts up to it fit the work area: never none (one list holds at most k). Every
    // entry of [0, take) belongs to one list's range: its entries, or kNone where the list waits for a later round.
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      uint64_t* dst = sm.work + before;
      if (cnt[i] > 0 && before + cnt[i] <= kCap) {
#pragma unroll
        for (int e = 0; e < kProbe; ++e)
          if (e < cnt[i]) dst[e] = probe[i][e];
        const uint64_t* rest = lists + int64_t(tid + i * kThreads) * k + pos[i];
        for (int j = kProbe; j < cnt[i]; ++j) dst[j] = __ldcg(rest + j);
        pos[i] = k;  // the rest of the list is >= tau, and tau only falls
      } else {
        for (int j = 0; j < cnt[i] && before + j < take; ++j) dst[j] = kNone;
      }
      before += cnt[i];
    }
    // (block_top_k's first barrier also keeps this round's warp_totals apart from the next round's.)
    const int best = min(p, k);
    block_top_k<kThreads>(sm.work, sm.tmp, p, k, sm.work);
    for (int j = tid; j < k; j += kThreads) sm.acc_next[j] = bitonic::merged_at(sm.acc, k, sm.work, best, j);
    __syncthreads();
    for (int j = tid; j < k; j += kThreads) sm.acc[j] = sm.acc_next[j];
    __syncthreads();
    tau = sm.acc[k - 1];
    if (total <= kCap) break;  // every list's entries below the old tau were gathered
  }
}

}  // namespace gknn::detail::cuda::split_merge
