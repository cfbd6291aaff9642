// bracket.cuh: the sampled bracket, gknn's first pass of a large-k search (beyond the thesis).
//
// The thesis' passes read a long row twice per level: once for the bucket histogram, once to partition. The
// bracket reads it once. A sorted random sample of the row gives two keys lo <= hi that bracket the k-th
// smallest key with high probability (the sample ranks k/n * S -+ 5 standard deviations of the binomial
// rank, plus one); one pass then routes every key at once:
//   key < lo        -> "below": certainly among the k smallest if the bracket holds; single-stage writes it
//                      to the output at once, two-stage only counts it (its filter pass re-reads the row);
//   lo <= key <= hi -> "inside": the candidates, appended to the auxiliary buffer (with columns, single-stage);
//   key > hi        -> dropped.
// The bracket holds iff below < k <= below + inside, which the block checks after the pass; then the search
// continues on the inside candidates only (usually a few percent of the row), exactly as after any pass. If
// it does not hold (a sample that misleads, about 1e-6 per row on any data) nothing is kept and the usual passes
// run from the input: the result is exact either way. Appends go through warp-aggregated shared atomics, not
// block scans: the order of the outputs and candidates is unspecified, as after the thesis' passes.
#pragma once

#include <cmath>
#include <cstdint>

#include "cuda/select/large_k/bucketers.cuh"
#include "cuda/select/large_k/common.cuh"

namespace gknn::detail::cuda::large_k {

/// Rows shorter than this go straight to the thesis' passes (the sample would cost more than it saves).
constexpr uint32_t kBracketMinCols = 16 * kSortCap;
/// Skip the bracket when it would keep more than this share of the row (k near n/2 on a small sample).
constexpr double kBracketMaxInside = 0.25;

struct BracketRanks {
  int lo;  ///< sample index of lo; < 0: no "below" class
  int hi;  ///< sample index of hi; >= kSampleSize: no upper cut
};

/// Sample ranks around the expected rank of the k-th key among kSampleSize draws from n keys.
__host__ __device__ inline BracketRanks bracket_ranks(uint32_t k, uint32_t n) {
  const double p = double(k) / double(n);
  const double mean = p * kSampleSize;
  const double spread = 5.0 * sqrt(kSampleSize * p * (1.0 - p)) + 1.0;
  return {static_cast<int>(floor(mean - spread)) - 1, static_cast<int>(ceil(mean + spread))};
}

/// Slot of this lane in a warp-aggregated append to *cursor (shared memory), or UINT32_MAX when !want. Every
/// lane of the warp must call it.
__device__ __forceinline__ uint32_t warp_append(bool want, uint32_t* cursor) {
  const unsigned ballot = __ballot_sync(0xFFFFFFFFu, want);
  if (ballot == 0) return UINT32_MAX;
  const int leader = __ffs(ballot) - 1;
  const uint32_t lane = threadIdx.x & 31u;
  uint32_t base = 0;
  if (lane == static_cast<uint32_t>(leader)) base = atomicAdd(cursor, static_cast<uint32_t>(__popc(ballot)));
  base = __shfl_sync(0xFFFFFFFFu, base, leader);
  return want ? base + static_cast<uint32_t>(__popc(ballot & ((1u << lane) - 1u))) : UINT32_MAX;
}

/// One block per row, at the start of its search (sh.s is the initial state). On return sh.s is either
/// unchanged or continues from the inside candidates in auxiliary buffer A. Ends with a barrier.
/// rank_shift (a test hook, normally 0) moves both ranks, so that tests can make the bracket miss.
template <bool kSingleStage>
__device__ void bracket_pass(Shared& sh, const RowIo& io, uint32_t n, uint32_t k, uint32_t row, int rank_shift) {
  constexpr unsigned long long kSeed = 0xB7AC4E7ull;
  Source input;
  input.in = io.in_keys;
  sorted_sample(sh, input, n, kSeed, row, 0);
  BracketRanks r = bracket_ranks(k, n);
  if (r.hi - r.lo > kBracketMaxInside * kSampleSize) return;  // uniform over the block: no barrier skipped
  r.lo += rank_shift;
  r.hi += rank_shift;
  if (r.hi < 0) r.hi = 0;
  const int last = static_cast<int>(kSampleSize) - 1;
  const uint32_t lo = r.lo < 0 ? 0u : r.lo > last ? kKeySentinel : sh.u.sort.keys[r.lo];
  const uint32_t hi = r.hi > last ? kKeySentinel : sh.u.sort.keys[r.hi];
  if (threadIdx.x == 0) sh.cursor_a = sh.cursor_o = 0;
  __syncthreads();  // every thread has read lo and hi before anyone reuses the sample's memory

  uint32_t* inside_keys = io.aux_keys_a;
  uint32_t* inside_cols = io.aux_cols_a;
  for (uint64_t base = 0; base < n; base += kTile) {
    uint32_t key[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const uint64_t i = base + j * kThreads + threadIdx.x;
      key[j] = i < n ? ordered_key(__ldg(io.in_keys + i)) : kKeySentinel;
    }
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const auto col = static_cast<uint32_t>(base + j * kThreads + threadIdx.x);
      const bool below = key[j] < lo;  // the sentinel (past the end) is never below nor inside
      const bool inside = !below && key[j] <= hi && key[j] != kKeySentinel;
      if (!__any_sync(0xFFFFFFFFu, below || inside)) continue;
      const uint32_t at_out = warp_append(below, &sh.cursor_o);
      if (kSingleStage && below && at_out < k) {
        io.out_keys[at_out] = key_from_ordered(key[j]);
        io.out_labels[at_out] = io.label(col);
      }
      const uint32_t at_aux = warp_append(inside, &sh.cursor_a);
      if (inside) {
        inside_keys[at_aux] = key[j];
        if (kSingleStage) inside_cols[at_aux] = col;
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const uint32_t below = sh.cursor_o, inside = sh.cursor_a;
    if (below < k && k <= below + inside) {
      sh.s.location = kAuxA;
      sh.s.n_cand = inside;
      sh.s.k_rem = k - below;
    }
  }
  __syncthreads();
}

}  // namespace gknn::detail::cuda::large_k
