// common.cuh: what sample select and radix select share: sizes, the per-row search state, where a pass reads
// its candidates from, the shared-memory layout of a row's block, and the block-wide histogram helpers.
//
// The search (thesis 4.3): the candidates of a row start as the whole row; each pass splits them into 256
// buckets (radix digits or sample splitters), finds the bucket holding the k-th smallest key and keeps only
// that bucket, until the candidates fit one block (sorted in shared memory) or are all equal. Keys travel as
// ordered uint32 (primitives/ordered.cuh). Counts and columns are uint32: rows longer than 2^32 - 1 are refused.
#pragma once

#include <cstdint>

#include <cub/block/block_scan.cuh>

#include "cuda/primitives/ordered.cuh"
#include "cuda/select/large_k/tuning.hpp"

namespace gknn::detail::cuda::large_k {

// The tuning numbers, from the policy (tuning.hpp).
constexpr int kThreads = kPolicy.threads;
constexpr int kWarps = kThreads / 32;
constexpr int kMinBlocks = kPolicy.min_blocks;
constexpr int kItems = kPolicy.items;
constexpr uint32_t kTile = kThreads * kItems;  ///< keys a block reads per tile
constexpr uint32_t kSortCap = kPolicy.sort_cap;
constexpr uint32_t kSampleSize = kPolicy.sample_size;
// The structure of a pass.
constexpr int kBins = 256;  ///< histogram bins (the thesis' buckets) per pass: one per thread in the bin scan
constexpr int kRadixBits = 8;                 ///< radix digit width: 256 buckets
constexpr int kTreeLevels = 8;                ///< sample select: depth of the splitter tree (2^8 leaves = buckets)
constexpr int kSplitters = kBins - 1;
static_assert(kBins == kThreads, "the bucket scan gives each thread one bucket");
static_assert(kBins == (1 << kRadixBits) && kBins == (1 << kTreeLevels));
static_assert(kSampleSize <= kSortCap && kSampleSize % kBins == 0);

/// Where a row's candidates are: the input row itself, or one of two auxiliary buffers (the second only for
/// the multi-block passes, which cannot compact in place).
enum Location : uint32_t { kInput = 0, kAuxA = 1, kAuxB = 2 };

/// Parameters of one pass, computed by the bucketer's prepare step and read by every block of the pass.
struct PassParams {
  uint32_t tree[kSplitters];  ///< sample select: implicit binary search tree of splitters (heap order)
  uint32_t max_splitter;      ///< sample select: largest splitter (the equality split's value)
  uint32_t eq_mode;           ///< sample select: 3-way split {< v, == v, > v} with v = eq_value
  uint32_t eq_value;
  uint32_t shift;             ///< radix select: the digit is (key >> shift) & 255
};

/// The search state of one row (global memory between kernels, a shared copy inside the row kernel).
struct RowSearch {
  uint32_t n_cand;      ///< candidates left
  uint32_t k_rem;       ///< the k-th smallest key of the row is the k_rem-th smallest candidate (1-based)
  uint32_t location;    ///< Location of the candidates
  uint32_t found;       ///< 1 once kth is known
  uint32_t kth;         ///< ordered key of the k-th smallest
  uint32_t count_less;  ///< two-stage: keys of the row < kth
  uint32_t count_eq;    ///< keys of the row == kth
  // bucketer state
  uint32_t shift;       ///< radix: digit of the next pass
  uint32_t prefix;      ///< radix: digits fixed so far
  uint32_t eq_mode;     ///< sample: the next pass is an equality split
  uint32_t eq_value;
  uint32_t pass;        ///< passes done (sample: varies the random sample)
  // one multi-block pass (set by the choose kernel, read by the partition kernel)
  uint32_t active;      ///< the pass runs for this row
  uint32_t partition;   ///< the chosen bucket must be moved (and, single-stage, lower buckets output)
  uint32_t bucket;
  uint32_t src, dst, n_src;
  uint32_t cursor_aux;  ///< write cursors, advanced with atomics (per tile)
  uint32_t cursor_out;
};

/// Per-row state in the workspace: the search plus what the multi-block passes share through global memory.
struct RowState {
  RowSearch search;
  PassParams params;
  uint32_t hist[kBins];
};

struct Choice {
  uint32_t bucket;
  uint32_t before;  ///< candidates in lower buckets
  uint32_t count;   ///< candidates in the bucket
};

/// Candidates of a pass: read from the input row (keys mapped on the fly, column = position), from auxiliary
/// buffers (ordered keys, and columns when the variant carries them), or columns only with one fixed key (ties).
struct Source {
  const float* in = nullptr;
  const uint32_t* keys = nullptr;
  const uint32_t* cols = nullptr;
  uint32_t fixed_key = 0;

  __device__ __forceinline__ uint32_t key(uint32_t i) const {
    if (in) return ordered_key(__ldg(in + i));
    return keys ? keys[i] : fixed_key;
  }
  __device__ __forceinline__ uint32_t col(uint32_t i) const { return in ? i : cols[i]; }
};

/// Everything a block needs to address one row.
struct RowIo {
  const float* in_keys;      ///< row start
  const int64_t* in_labels;  ///< row start, or nullptr: label = label_offset + column
  int64_t label_offset;
  float* out_keys;           ///< row start
  int64_t* out_labels;
  uint32_t* aux_keys_a;      ///< auxiliary buffers of the row; B only for cooperating blocks
  uint32_t* aux_keys_b;
  uint32_t* aux_cols_a;      ///< nullptr when the variant carries no columns
  uint32_t* aux_cols_b;
  uint32_t k;

  __device__ __forceinline__ int64_t label(uint32_t col) const {
    return in_labels ? in_labels[col] : label_offset + static_cast<int64_t>(col);
  }
  // Selects instead of indexing an array by a run-time location: keeps RowIo in registers.
  __device__ __forceinline__ uint32_t* keys_at(uint32_t location) const {
    return location == kAuxA ? aux_keys_a : aux_keys_b;
  }
  __device__ __forceinline__ uint32_t* cols_at(uint32_t location) const {
    return location == kAuxA ? aux_cols_a : aux_cols_b;
  }
  __device__ __forceinline__ Source source(uint32_t location) const {
    Source s;
    if (location == kInput) s.in = in_keys;
    else {
      s.keys = keys_at(location);
      s.cols = cols_at(location);
    }
    return s;
  }
};

/// Pointers and sizes of a launch (one struct, so kernels take one argument).
struct Problem {
  const float* keys;
  const int64_t* labels;
  int64_t in_stride;
  int64_t label_offset;
  float* out_keys;
  int64_t* out_labels;
  int64_t out_stride;
  uint32_t rows, cols, k;
  uint32_t bracket;     ///< one block per row starts with the sampled bracket (bracket.cuh)
  int32_t bracket_shift;  ///< test hook: moves the bracket's sample ranks (0 in use)
  RowState* state;
  uint32_t* aux_keys_a;  ///< whole buffers (rows x cols each); B only for cooperating blocks
  uint32_t* aux_keys_b;
  uint32_t* aux_cols_a;  ///< nullptr when the variant carries no columns
  uint32_t* aux_cols_b;

  __device__ __forceinline__ RowIo row_io(uint32_t row) const {
    RowIo io;
    io.in_keys = keys + static_cast<int64_t>(row) * in_stride;
    io.in_labels = labels ? labels + static_cast<int64_t>(row) * in_stride : nullptr;
    io.label_offset = label_offset;
    io.out_keys = out_keys + static_cast<int64_t>(row) * out_stride;
    io.out_labels = out_labels + static_cast<int64_t>(row) * out_stride;
    const size_t off = static_cast<size_t>(row) * cols;
    io.aux_keys_a = aux_keys_a ? aux_keys_a + off : nullptr;
    io.aux_keys_b = aux_keys_b ? aux_keys_b + off : nullptr;
    io.aux_cols_a = aux_cols_a ? aux_cols_a + off : nullptr;
    io.aux_cols_b = aux_cols_b ? aux_cols_b + off : nullptr;
    io.k = k;
    return io;
  }
  /// Two-stage: after the k-th key is found the first auxiliary buffer holds the columns of the ties.
  __device__ __forceinline__ uint32_t* tie_buffer(uint32_t row) const {
    return aux_keys_a + static_cast<size_t>(row) * cols;
  }
};

using BlockScan = cub::BlockScan<uint32_t, kThreads>;

/// Shared memory of a large-k block (about 34 KB: static, no opt-in needed).
struct Shared {
  union {
    struct {
      uint32_t keys[kSortCap];
      int64_t labels[kSortCap];
    } sort;  ///< final block sort and the sample sort
    struct {
      uint32_t keys[kTile];
      uint32_t cols[kTile];
    } stage;  ///< a tile's selected entries, compacted before the coalesced write
  } u;
  uint32_t hist[kWarps * kBins];  ///< privatised per warp: fewer collisions on skewed data
  PassParams params;
  BlockScan::TempStorage scan;
  Choice choice;
  RowSearch s;
  uint32_t base_a, base_o;      ///< write bases of the current tile
  uint32_t cursor_a, cursor_o;  ///< single-block write cursors
  uint32_t count_lt, count_eq;
};

// ---- block-wide histogram helpers ---------------------------------------------------------------------

__device__ __forceinline__ void clear_hist(Shared& sh) {
  for (int i = threadIdx.x; i < kWarps * kBins; i += kThreads) sh.hist[i] = 0;
  __syncthreads();
}

__device__ __forceinline__ void hist_add(Shared& sh, uint32_t bucket, uint32_t count) {
  atomicAdd(&sh.hist[(threadIdx.x / 32) * kBins + bucket], count);
}

/// Sums the warps' histograms: thread t returns the count of bucket t. Call after the histogram pass.
__device__ __forceinline__ uint32_t bucket_count(Shared& sh) {
  __syncthreads();
  uint32_t c = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) c += sh.hist[w * kBins + threadIdx.x];
  return c;
}

/// Thread t holds the count of bucket t; finds the bucket holding the rank-th smallest (1 <= rank <= total)
/// into sh.choice, visible to all threads on return.
__device__ __forceinline__ Choice choose_bucket(Shared& sh, uint32_t count, uint32_t rank) {
  uint32_t before = 0;
  BlockScan(sh.scan).ExclusiveSum(count, before);
  if (before < rank && rank <= before + count) sh.choice = Choice{static_cast<uint32_t>(threadIdx.x), before, count};
  __syncthreads();
  const Choice c = sh.choice;
  __syncthreads();  // sh.scan and sh.choice may be reused at once
  return c;
}

}  // namespace gknn::detail::cuda::large_k
