// search.cuh: the large-k search kernels, templated on the bucketer (radix or sample) and the variant.
//
// Two-stage (thesis 4.3): stage one finds the k-th key moving ordered keys only; stage two filters the input
// (keys < kth, then the ties with the smallest labels). Single-stage (thesis 4.3.2): each pass also writes the
// buckets below the chosen one to the output with their labels, so no filter pass is needed.
//
// Many rows: one block per row runs the whole search in one kernel (row_kernel), compacting the chosen
// bucket in place in the auxiliary buffer. Few long rows: first up to kMultiBlockPasses passes in which
// blocks cooperate on a row (prepare / histogram / choose / partition kernels; global histograms via atomics,
// ping-pong buffers), then row_kernel finishes whatever is left, then a cooperating filter (two-stage).
#pragma once

#include <cstdint>

#include "cuda/select/large_k/bracket.cuh"
#include "cuda/select/large_k/bucketers.cuh"
#include "cuda/select/large_k/common.cuh"
#include "cuda/select/large_k/passes.cuh"

namespace gknn::detail::cuda::large_k {

/// Thread 0, after the choice of a pass: decides whether the pass moves data and advances the row's search.
/// in_place: the single-block search compacts into the buffer it reads (the input compacts into A);
/// cooperating blocks alternate between A and B.
template <class Bucketer, bool kSingleStage>
__device__ void apply_choice(RowSearch& s, const PassParams& p, const Choice& c, uint32_t k, bool in_place) {
  const bool progress = c.count < s.n_cand;
  uint32_t value = 0;
  const bool all_equal = Bucketer::advance(s, p, c, progress, &value);
  // Two-stage needs no candidates once the k-th key is known; single-stage still outputs lower buckets and
  // keeps the ties (with their columns) for the label selection.
  s.partition = progress && (kSingleStage || !all_equal);
  s.bucket = c.bucket;
  s.src = s.location;
  s.n_src = s.n_cand;
  s.dst = !s.partition ? s.location
          : in_place   ? (s.location == kInput ? kAuxA : s.location)
                       : (s.location == kAuxA ? kAuxB : kAuxA);
  s.cursor_aux = 0;
  s.cursor_out = k - s.k_rem;  // single-stage: outputs so far
  s.k_rem -= c.before;
  s.n_cand = c.count;
  s.location = s.dst;
  if (all_equal) {
    s.found = 1;
    s.kth = value;
    s.count_less = k - s.k_rem;
    s.count_eq = c.count;
  }
}

/// Moves the chosen bucket's candidates to sink A; single-stage also outputs the lower buckets' candidates.
template <class Bucketer, bool kSingleStage>
__device__ void partition_pass(Shared& sh, const RowIo& io, const Source& src, uint32_t n, uint32_t tile0,
                               uint32_t tile_step, uint32_t chosen, uint32_t* dst_keys, uint32_t* dst_cols,
                               uint32_t* a_cursor, uint32_t* out_cursor) {
  split_pass<true, kSingleStage, kSingleStage>(
      sh, io, src, n, tile0, tile_step,
      [&](uint32_t key, uint32_t) -> uint32_t {
        const uint32_t b = Bucketer::bucket(sh.params, key);
        if (b == chosen) return kSinkA;
        return (kSingleStage && b < chosen) ? kSinkOut : kDrop;
      },
      dst_keys, dst_cols, a_cursor, out_cursor);
}

__device__ __forceinline__ void copy_words(uint32_t* dst, const uint32_t* src, uint32_t words) {
  for (uint32_t i = threadIdx.x; i < words; i += kThreads) dst[i] = src[i];
}
constexpr uint32_t kParamWords = sizeof(PassParams) / sizeof(uint32_t);
static_assert(sizeof(PassParams) % sizeof(uint32_t) == 0);

/// One block per row: the search from the row's current state to the end. Two-stage with kFilter runs the
/// filter and the tie selection too; without it the found state goes back to global memory for the
/// cooperating filter.
template <class Bucketer, bool kSingleStage, bool kFilter>
__global__ void __launch_bounds__(kThreads, kMinBlocks) row_kernel(Problem pb) {
  __shared__ Shared sh;
  const uint32_t row = blockIdx.x;
  const RowIo io = pb.row_io(row);
  if (threadIdx.x == 0) sh.s = pb.state[row].search;
  __syncthreads();
  if (pb.bracket && sh.s.location == kInput && !sh.s.found && sh.s.n_cand >= kBracketMinCols)
    bracket_pass<kSingleStage>(sh, io, sh.s.n_cand, pb.k, row, pb.bracket_shift);
  while (!sh.s.found && sh.s.n_cand > kSortCap) {
    const Source src = io.source(sh.s.location);
    const uint32_t n = sh.s.n_cand;
    Bucketer::prepare(sh, sh.s, src, n, row);
    clear_hist(sh);
    histogram_pass(sh, src, n, 0, 1, [&](uint32_t key) { return Bucketer::bucket(sh.params, key); });
    const Choice c = choose_bucket(sh, bucket_count(sh), sh.s.k_rem);
    if (threadIdx.x == 0) {
      apply_choice<Bucketer, kSingleStage>(sh.s, sh.params, c, pb.k, true);
      sh.cursor_a = sh.s.cursor_aux;
      sh.cursor_o = sh.s.cursor_out;
    }
    __syncthreads();
    if (sh.s.partition) {
      const uint32_t dst = sh.s.dst;
      partition_pass<Bucketer, kSingleStage>(sh, io, io.source(sh.s.src), sh.s.n_src, 0, 1, c.bucket,
                                             io.keys_at(dst), io.cols_at(dst), &sh.cursor_a, &sh.cursor_o);
    }
    __syncthreads();
  }
  const Source cand = io.source(sh.s.location);
  const uint32_t n = sh.s.n_cand, k_rem = sh.s.k_rem;
  if constexpr (kSingleStage) {
    if (!sh.s.found) sort_pairs_final(sh, io, cand, n, k_rem, pb.k - k_rem);
    else select_ties(sh, io, cand, sh.s.kth, n, k_rem, pb.k - k_rem);
  } else {
    if (!sh.s.found) sort_keys_final(sh, cand, n, k_rem, pb.k - k_rem);
    const uint32_t kth = sh.s.kth, count_less = sh.s.count_less, count_eq = sh.s.count_eq;
    const uint32_t need_ties = pb.k - count_less;
    if constexpr (kFilter) {
      uint32_t* ties = pb.tie_buffer(row);
      if (threadIdx.x == 0) sh.cursor_a = sh.cursor_o = 0;
      __syncthreads();
      filter_pass(sh, io, pb.cols, kth, count_eq == need_ties, 0, 1, ties, &sh.cursor_a, &sh.cursor_o);
      if (count_eq != need_ties) {
        Source tie_src;
        tie_src.cols = ties;
        tie_src.fixed_key = kth;
        select_ties(sh, io, tie_src, kth, count_eq, need_ties, count_less);
      }
    } else if (threadIdx.x == 0) {
      sh.s.cursor_aux = sh.s.cursor_out = 0;  // the cooperating filter starts writing at 0
      pb.state[row].search = sh.s;
    }
  }
}

// ---- cooperating blocks: one pass = prepare (1 block per row), histogram (G), choose (1), partition (G) --

template <class Bucketer>
__global__ void __launch_bounds__(kThreads) prepare_kernel(Problem pb) {
  __shared__ Shared sh;
  const uint32_t row = blockIdx.x;
  RowState& st = pb.state[row];
  if (threadIdx.x == 0) sh.s = st.search;
  __syncthreads();
  const bool active = !sh.s.found && sh.s.n_cand > kSortCap;
  if (!active) {
    if (threadIdx.x == 0) st.search.active = 0;
    return;
  }
  const RowIo io = pb.row_io(row);
  Bucketer::prepare(sh, sh.s, io.source(sh.s.location), sh.s.n_cand, row);
  copy_words(reinterpret_cast<uint32_t*>(&st.params), reinterpret_cast<const uint32_t*>(&sh.params), kParamWords);
  st.hist[threadIdx.x] = 0;
  if (threadIdx.x == 0) st.search.active = 1;
}

template <class Bucketer>
__global__ void __launch_bounds__(kThreads, kMinBlocks) histogram_kernel(Problem pb) {
  __shared__ Shared sh;
  const uint32_t row = blockIdx.y;
  RowState& st = pb.state[row];
  if (!st.search.active) return;
  copy_words(reinterpret_cast<uint32_t*>(&sh.params), reinterpret_cast<const uint32_t*>(&st.params), kParamWords);
  clear_hist(sh);  // its barrier also publishes sh.params
  const RowIo io = pb.row_io(row);
  histogram_pass(sh, io.source(st.search.location), st.search.n_cand, blockIdx.x, gridDim.x,
                 [&](uint32_t key) { return Bucketer::bucket(sh.params, key); });
  const uint32_t count = bucket_count(sh);
  if (count) atomicAdd(&st.hist[threadIdx.x], count);
}

template <class Bucketer, bool kSingleStage>
__global__ void __launch_bounds__(kThreads) choose_kernel(Problem pb) {
  __shared__ Shared sh;
  const uint32_t row = blockIdx.x;
  RowState& st = pb.state[row];
  if (!st.search.active) return;
  copy_words(reinterpret_cast<uint32_t*>(&sh.params), reinterpret_cast<const uint32_t*>(&st.params), kParamWords);
  if (threadIdx.x == 0) sh.s = st.search;
  __syncthreads();
  const Choice c = choose_bucket(sh, st.hist[threadIdx.x], sh.s.k_rem);
  if (threadIdx.x == 0) {
    apply_choice<Bucketer, kSingleStage>(sh.s, sh.params, c, pb.k, false);
    st.search = sh.s;
  }
}

template <class Bucketer, bool kSingleStage>
__global__ void __launch_bounds__(kThreads, kMinBlocks) partition_kernel(Problem pb) {
  __shared__ Shared sh;
  const uint32_t row = blockIdx.y;
  RowState& st = pb.state[row];
  if (!st.search.active || !st.search.partition) return;
  copy_words(reinterpret_cast<uint32_t*>(&sh.params), reinterpret_cast<const uint32_t*>(&st.params), kParamWords);
  __syncthreads();
  const RowIo io = pb.row_io(row);
  const uint32_t dst = st.search.dst;
  partition_pass<Bucketer, kSingleStage>(sh, io, io.source(st.search.src), st.search.n_src, blockIdx.x, gridDim.x,
                                         st.search.bucket, io.keys_at(dst), io.cols_at(dst),
                                         &st.search.cursor_aux, &st.search.cursor_out);
}

}  // namespace gknn::detail::cuda::large_k
