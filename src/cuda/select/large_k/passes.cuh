// passes.cuh: the block-level passes every large-k search is built from.
//
//  * histogram_pass: bucket counts of a candidate range into the per-warp histograms;
//  * split_pass: routes each candidate to sink A (the auxiliary buffer or the tie buffer), to the output, or
//    nowhere; a tile's entries are compacted in shared memory with a block-wide prefix sum and written as
//    contiguous runs (coalesced, thesis 4.3.1 "Buffering values"); write positions come from a cursor
//    advanced once per tile (a shared cursor keeps the order; a global one lets blocks cooperate);
//  * the final block sorts of the candidates and the label selection among ties at the k-th key.
//
// Ranges are processed in tiles of kTile; block b of a cooperating group of G takes tiles b, b+G, ...
#pragma once

#include <cstdint>

#include "cuda/primitives/shared_bitonic.cuh"
#include "cuda/select/large_k/common.cuh"

namespace gknn::detail::cuda::large_k {

constexpr uint32_t kNoBucket = 0xFFFFFFFFu;

/// Adds bucket_of(load(i)) for every i in the block's tiles of [0, n) to the warp histograms (kNoBucket:
/// not counted). Skewed rows put whole warps into one bucket, and same-address shared atomics serialise; so a
/// thread merges equal consecutive buckets of its items, and the lanes of a warp merge their last runs.
template <class Load, class BucketOf>
__device__ void histogram_tiles(Shared& sh, uint32_t n, uint32_t tile0, uint32_t tile_step, Load load,
                                BucketOf bucket_of) {
  for (uint64_t base = uint64_t{tile0} * kTile; base < n; base += uint64_t{tile_step} * kTile) {
    decltype(load(0u)) value[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const uint64_t i = base + j * kThreads + threadIdx.x;
      if (i < n) value[j] = load(static_cast<uint32_t>(i));
    }
    uint32_t run_bucket = kNoBucket, run_count = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const uint64_t i = base + j * kThreads + threadIdx.x;
      if (i >= n) continue;
      const uint32_t b = bucket_of(value[j]);
      if (b != run_bucket) {
        if (run_count && run_bucket != kNoBucket) hist_add(sh, run_bucket, run_count);
        run_bucket = b;
        run_count = 0;
      }
      ++run_count;
    }
    // Every lane of every warp is here (the tile loop is uniform across the block).
    const uint32_t peers = __match_any_sync(0xFFFFFFFFu, run_bucket);
    const uint32_t total = __reduce_add_sync(peers, run_count);
    if (run_bucket != kNoBucket && (threadIdx.x & 31u) == static_cast<uint32_t>(__ffs(peers) - 1))
      hist_add(sh, run_bucket, total);
  }
}

/// Adds the bucket of every candidate key in the block's tiles of [0, n) to the warp histograms.
template <class BucketFn>
__device__ void histogram_pass(Shared& sh, const Source& src, uint32_t n, uint32_t tile0, uint32_t tile_step,
                               BucketFn bucket) {
  histogram_tiles(sh, n, tile0, tile_step, [&](uint32_t i) { return src.key(i); }, bucket);
}

enum Sink : uint32_t { kDrop = 0, kSinkA = 1, kSinkOut = 2 };

/// Routes every candidate of the block's tiles of [0, n): classify(key, col) returns a Sink. Sink A gets the
/// ordered key (kAKeys) and/or the column (kACols); the output gets the float key and the label. Cursors are
/// advanced by the tile's totals; in place (src == sink A) is safe because a tile is read before it is written
/// and sink A never receives more entries than were read.
template <bool kAKeys, bool kACols, bool kOut, class Classify>
__device__ void split_pass(Shared& sh, const RowIo& io, const Source& src, uint32_t n, uint32_t tile0,
                           uint32_t tile_step, Classify classify, uint32_t* a_keys, uint32_t* a_cols,
                           uint32_t* a_cursor, uint32_t* out_cursor) {
  constexpr bool kNeedCols = kACols || kOut;
  for (uint64_t base = uint64_t{tile0} * kTile; base < n; base += uint64_t{tile_step} * kTile) {
    uint32_t key[kItems], col[kItems];
    uint32_t sinks = 0;  // 2 bits per item
    uint32_t count_a = 0, count_out = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const uint64_t i = base + j * kThreads + threadIdx.x;
      col[j] = 0;
      if (i < n) {
        key[j] = src.key(static_cast<uint32_t>(i));
        if constexpr (kNeedCols) col[j] = src.col(static_cast<uint32_t>(i));
        const uint32_t sink = classify(key[j], col[j]);
        sinks |= sink << (2 * j);
        count_a += sink == kSinkA;
        count_out += sink == kSinkOut;
      }
    }
    // One scan for both sinks: sink A counts in the low 16 bits, output counts in the high (a tile < 2^16).
    static_assert(kTile < (1u << 16));
    uint32_t offset = 0, total = 0;
    BlockScan(sh.scan).ExclusiveSum(count_a | (count_out << 16), offset, total);
    const uint32_t total_a = total & 0xFFFFu, total_out = total >> 16;
    uint32_t pos_a = offset & 0xFFFFu, pos_out = total_a + (offset >> 16);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const uint32_t sink = (sinks >> (2 * j)) & 3u;
      if (sink == kDrop) continue;
      const uint32_t p = sink == kSinkA ? pos_a++ : pos_out++;
      sh.u.stage.keys[p] = key[j];
      sh.u.stage.cols[p] = col[j];
    }
    if (threadIdx.x == 0) {
      sh.base_a = total_a ? atomicAdd(a_cursor, total_a) : 0;
      sh.base_o = total_out ? atomicAdd(out_cursor, total_out) : 0;
    }
    __syncthreads();
    const uint32_t base_a = sh.base_a, base_o = sh.base_o;
    if constexpr (kAKeys || kACols) {
      for (uint32_t i = threadIdx.x; i < total_a; i += kThreads) {
        if constexpr (kAKeys) a_keys[base_a + i] = sh.u.stage.keys[i];
        if constexpr (kACols) a_cols[base_a + i] = sh.u.stage.cols[i];
      }
    }
    if constexpr (kOut) {
      for (uint32_t i = threadIdx.x; i < total_out; i += kThreads) {
        io.out_keys[base_o + i] = key_from_ordered(sh.u.stage.keys[total_a + i]);
        io.out_labels[base_o + i] = io.label(sh.u.stage.cols[total_a + i]);
      }
    }
    __syncthreads();  // the stage, the scan storage and the bases are reused by the next tile
  }
}

/// Two-stage filter (thesis 4.3, second stage) over the block's tiles of the input row: keys < kth go to the
/// output; ties go to the output too when all of them are needed, else their columns go to the tie buffer.
__device__ __forceinline__ void filter_pass(Shared& sh, const RowIo& io, uint32_t cols, uint32_t kth,
                                            bool take_all_ties, uint32_t tile0, uint32_t tile_step,
                                            uint32_t* tie_cols, uint32_t* tie_cursor, uint32_t* out_cursor) {
  Source src;
  src.in = io.in_keys;
  split_pass<false, true, true>(
      sh, io, src, cols, tile0, tile_step,
      [=](uint32_t key, uint32_t) -> uint32_t {
        if (key < kth) return kSinkOut;
        if (key == kth) return take_all_ties ? kSinkOut : kSinkA;
        return kDrop;
      },
      nullptr, tie_cols, tie_cursor, out_cursor);
}

/// Two-stage end of the search: sorts the n <= kSortCap candidates' keys; sh.s gets kth (the k_rem-th),
/// count_less (= already_less + candidates < kth) and count_eq, and found = 1.
__device__ inline void sort_keys_final(Shared& sh, const Source& src, uint32_t n, uint32_t k_rem, uint32_t already_less) {
  const uint32_t n_pad = bitonic::next_pow2(n);
  for (uint32_t i = threadIdx.x; i < n_pad; i += kThreads) sh.u.sort.keys[i] = i < n ? src.key(i) : kKeySentinel;
  if (threadIdx.x == 0) sh.count_lt = sh.count_eq = 0;
  bitonic::shared_sort<kThreads, false>(sh.u.sort.keys, nullptr, n_pad);
  const uint32_t kth = sh.u.sort.keys[k_rem - 1];
  uint32_t lt = 0, eq = 0;
  for (uint32_t i = threadIdx.x; i < n; i += kThreads) {
    lt += sh.u.sort.keys[i] < kth;
    eq += sh.u.sort.keys[i] == kth;
  }
  if (lt) atomicAdd(&sh.count_lt, lt);
  if (eq) atomicAdd(&sh.count_eq, eq);
  __syncthreads();
  if (threadIdx.x == 0) {
    sh.s.kth = kth;
    sh.s.count_less = already_less + sh.count_lt;
    sh.s.count_eq = sh.count_eq;
    sh.s.found = 1;
  }
  __syncthreads();
}

/// Single-stage end of the search: sorts the n <= kSortCap candidates as (key, label) pairs and writes the
/// first k_rem to out[out_base, out_base + k_rem): ties are resolved by the sort itself.
__device__ inline void sort_pairs_final(Shared& sh, const RowIo& io, const Source& src, uint32_t n, uint32_t k_rem,
                                 uint32_t out_base) {
  const uint32_t n_pad = bitonic::next_pow2(n);
  for (uint32_t i = threadIdx.x; i < n_pad; i += kThreads) {
    const bool real = i < n;
    sh.u.sort.keys[i] = real ? src.key(i) : kKeySentinel;
    sh.u.sort.labels[i] = real ? io.label(src.col(i)) : INT64_MAX;
  }
  bitonic::shared_sort<kThreads, true>(sh.u.sort.keys, sh.u.sort.labels, n_pad);
  for (uint32_t i = threadIdx.x; i < k_rem; i += kThreads) {
    io.out_keys[out_base + i] = key_from_ordered(sh.u.sort.keys[i]);
    io.out_labels[out_base + i] = sh.u.sort.labels[i];
  }
  __syncthreads();
}

/// Among m ties (all with key kth, columns ties.col(i)), writes the `need` with the smallest labels to
/// out[out_base, out_base + need). A radix select over the ordered 64-bit labels finds the need-th smallest
/// label L (8 passes of 8 bits, each over all m ties, filtered by the digits fixed so far); then every tie
/// with a label < L is written, followed by as many copies of (kth, L) as are still needed: ties with label L
/// are identical pairs, so which of them is taken does not matter. Labels may be arbitrary user labels.
__device__ __noinline__ inline void select_ties(Shared& sh, const RowIo& io, const Source& ties, uint32_t kth, uint32_t m, uint32_t need,
                            uint32_t out_base) {
  if (need == m) {  // every tie is in: no selection
    for (uint32_t i = threadIdx.x; i < m; i += kThreads) {
      io.out_keys[out_base + i] = key_from_ordered(kth);
      io.out_labels[out_base + i] = io.label(ties.col(i));
    }
    __syncthreads();
    return;
  }
  uint64_t prefix = 0;
  uint32_t rem = need;
  for (int shift = 64 - kRadixBits; shift >= 0; shift -= kRadixBits) {
    clear_hist(sh);
    histogram_tiles(
        sh, m, 0, 1, [&](uint32_t i) { return ordered_label(io.label(ties.col(i))); },
        [&](uint64_t u) {
          const bool match = shift + kRadixBits == 64 || (u >> (shift + kRadixBits)) == (prefix >> (shift + kRadixBits));
          return match ? static_cast<uint32_t>(u >> shift) & (kBins - 1) : kNoBucket;
        });
    const Choice c = choose_bucket(sh, bucket_count(sh), rem);
    rem -= c.before;
    prefix |= uint64_t{c.bucket} << shift;
  }
  if (threadIdx.x == 0) sh.cursor_o = out_base;
  __syncthreads();
  split_pass<false, false, true>(
      sh, io, ties, m, 0, 1,
      [&](uint32_t, uint32_t col) -> uint32_t { return ordered_label(io.label(col)) < prefix ? kSinkOut : kDrop; },
      nullptr, nullptr, &sh.cursor_a, &sh.cursor_o);
  const uint32_t first_copy = out_base + (need - rem);
  const int64_t label = static_cast<int64_t>(prefix ^ (uint64_t{1} << 63));
  for (uint32_t i = threadIdx.x; i < rem; i += kThreads) {
    io.out_keys[first_copy + i] = key_from_ordered(kth);
    io.out_labels[first_copy + i] = label;
  }
  __syncthreads();
}

}  // namespace gknn::detail::cuda::large_k
