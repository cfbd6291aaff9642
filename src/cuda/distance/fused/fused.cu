// fused.cu: the fused distance + selection kernel (thesis, seed 000: distances and top-k in one kernel, so that
// the q x n key matrix is never written). gknn's version runs on tensor cores and is exact on integer data.
//
// Each block owns 32 or 64 queries (16 when there are at most 16: BlockShape) and one split of the base; it walks its
// split in tiles of 128 base rows:
//   1. the tile's rows arrive in shared memory (cp.async, 2-3 stages deep); the queries' operand fragments stay
//      in registers for the whole walk;
//   2. 16 warps (2 x 8, each 32 queries x 16 base rows; 1 x 8 warps of 16 x 16 for 16 queries) multiply them
//      with mma.sync: u8 x u8 or s8 x s8 -> s32 (m16n8k32), or f16 x f16 -> f32 (m16n8k16) for integers up to 2048;
//   3. every key below its row's running threshold (the k-th key kept so far) is appended to the row's buffer in
//      shared memory; all others are dropped in registers. A tile that overflows a buffer is settled after the
//      next tile's barrier (one barrier a tile): its appends are taken back, the block sorts the buffers (one warp
//      per row, bitonic) and keeps the k best (the new thresholds), and the tile's keys, still in registers, are
//      appended again.
// Base rows are visited in increasing index order, so a later key equal to the threshold ranks after the k-th
// (ties go to the smaller index) and is dropped rightly: the kept list is exact in the library's total order.
// Several splits per query give every SM work when queries are few; their sorted lists (k each, interleaved by
// rank) are combined by the pipeline with a selection over the splits' lists, which orders ties by label, or by
// the last block of the query tile to finish: pairwise for at most kFewSplits lists (merge_few_splits), by a
// threshold and sorted rounds for at most kMergeMaxRows queries (merge_splits: the selection's two launches and
// ~35 us for one query against 1M rows on the H100 become a few us at the kernel's end).
// A resident base (an Index) keeps its operands between searches (OperandCache): a search converts only its
// queries, which a few queries against a long base need (1M x 128 uint8 rows: 512 MB of floats read and 128 MB
// written per search otherwise).
//
// Keys (gknn's GEMM form): squared L2 -> |x|^2 - 2 q.x (the finaliser adds |q|^2), inner product -> -q.x.
// Exactness: products of integers are exact on tensor cores; s32 accumulation is exact; f32 accumulation is
// exact while partial sums stay below 2^24 (fp16_exact(), the same bound as fp16_mma); keys are converted to
// float exactly under that bound. Data outside it are refused (exact_on); rows longer than 256 bytes and k > 1024
// run the two-stage fp16 path (fp16_mma's GEMM, then selection). k from 129 to 1024 (more than the shared lists
// hold) runs the same kernel in filter mode, in rounds with per-query thresholds and candidate lists in device
// memory (large_k.cuh): the key matrix is still never written.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include <cuda_fp16.h>

#include "core/env_switch.hpp"
#include "cuda/common/device.cuh"
#include "cuda/common/error.cuh"
#include "cuda/distance/cublas/gemm_keys.cuh"
#include "cuda/distance/fused/large_k.cuh"
#include "cuda/distance/fused/merge.cuh"
#include "cuda/distance/fused/scan.cuh"
#include "cuda/distance/kernels.cuh"
#include "cuda/primitives/ordered.cuh"
#include "cuda/primitives/shared_bitonic.cuh"

namespace gknn::detail::cuda {
namespace {

enum class Elem { U8, S8, F16 };

constexpr int kBN = 128;       // base rows per tile
constexpr int kWarpsN = 8;     // warps across a tile's base rows
constexpr int kWarpCols = kBN / kWarpsN;  // 16 base rows (two mma columns of 8) per warp
constexpr int kNb = kWarpCols / 8;
constexpr int kBuf = 256;      // buffer entries per query row: the kept list (k <= 128) + a whole tile's appends
constexpr int kColumnBits = 32;  // composite keys: the ordered key above a 32-bit row within the split
constexpr int kMaxFusedK = 128;
constexpr int kMaxRowBytes = 256;
constexpr int kWavesPerSplitPlan = 4;  // waves of resident blocks the split count aims at, at most
constexpr int64_t kMinSplitRows = 1024;
// The splits' lists of at most kMergeMaxRows queries are merged inside the kernel by the last block of the query
// tile to finish (merge_splits), at most kMaxMergeSplits lists a query (merge.cuh).
constexpr int kMergeMaxRows = 4;
// ... and those of any number of queries where there are at most kFewSplits lists a query (merge_few_splits).
constexpr int kFewSplits = 4;
constexpr int kMaxMergeSplits = split_merge::kMaxSplits;
static_assert(kMaxFusedK <= split_merge::kMaxK, "merge_splits takes whole lists");

/// A block's queries: WarpsM warps of Mt x 16 query rows each (and kWarpsN = 8 warps across a tile's base rows).
/// Wide: 2 x 2 x 16 = 64 queries, 16 warps, one block per SM (the buffers take 128 KB). Narrow, for at most 16
/// queries (the single-query case): 16 queries, 8 warps, 32 KB of buffers, two blocks per SM, and a quarter of the
/// wide block's tensor-core and key work per tile, which the wide block spends on empty rows when queries are few.
/// H100, 1M x 128 uint8 rows, one query, k = 100: distance stage 145 us with the wide block, 102 us with the narrow
/// one, whose kernel (91 us, ncu: 2 blocks per SM, 24% achieved occupancy) reads 44% of the DRAM bandwidth: it
/// waits on latency (16 warps per SM, a barrier per tile), not on the ~45 us the 128 MB need.
/// Medium, for more than 16 queries where the rows take at most 128 bytes (fused_medium_block(); wide for longer
/// rows, whose tiles leave no room for two blocks, and for the large-k filter rounds): the wide block's
/// warps (32 x 16 each) in blocks of half its queries, two blocks per SM with two tile stages: the same 16 warps a
/// SM, but one block's barrier waits while the other computes (the wide block's SM idles at each of its barriers).
template <int WarpsM, int Mt, int BlocksPerSm>
struct BlockShape {
  static constexpr int kMt = Mt;
  static constexpr int kBM = WarpsM * Mt * 16;
  static constexpr int kThreads = WarpsM * kWarpsN * 32;
  static constexpr int kBlocksPerSm = BlocksPerSm;
};
using WideBlock = BlockShape<2, 2, 1>;
using MediumBlock = BlockShape<1, 2, 2>;
using NarrowBlock = BlockShape<1, 1, 2>;

// ---- operand types and the tensor-core instruction -----------------------------------------------------------
/// 8-bit integer operands: u8 x u8 or s8 x s8 -> s32, m16n8k32.
template <Elem E>
struct Mma {
  static_assert(E == Elem::U8 || E == Elem::S8);
  using Acc = int;
  static constexpr int kElemBytes = 1;
  __device__ static void run(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (E == Elem::U8)
      asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
          : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
      asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
          : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct Mma<Elem::F16> {
  using Acc = float;
  static constexpr int kElemBytes = 2;
  __device__ static void run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
// Both shapes read a 32-byte slice of the reduction dimension per instruction with the same register layout
// (PTX ISA, mma.m16n8k32 for 8-bit and mma.m16n8k16 for 16-bit types): lane (g = lane / 4, t = lane % 4) holds
// A rows g and g + 8 at bytes 4t and 16 + 4t, B column (base row) g at bytes 4t and 16 + 4t, and C rows g, g + 8 at
// columns 2t, 2t + 1. So one loader serves all three types.

// ---- conversion of float rows into the operand layout ---------------------------------------------------------
template <Elem E>
__device__ uint32_t pack_word(const float* row, int64_t dim, int64_t first, float scale) {
  if constexpr (E == Elem::F16) {
    const float v0 = first < dim ? scale * row[first] : 0.f, v1 = first + 1 < dim ? scale * row[first + 1] : 0.f;
    const __half2 h = __floats2half2_rn(v0, v1);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    uint32_t w = 0;
    for (int i = 0; i < 4; ++i) {
      const int v = first + i < dim ? static_cast<int>(row[first + i]) : 0;
      w |= (static_cast<uint32_t>(v) & 0xFFu) << (8 * i);
    }
    return w;
  }
}

/// rows x row_bytes operand rows (zero padded), one 4-byte word per thread; f16 rows are multiplied by `scale`.
/// Also sets zeros[0, zero_count) to 0: the fused kernel's arrival counters, cleared by the query conversion that
/// precedes every launch rather than by a launch of their own; and int_norms[0, norm_count) to the norms as
/// integers (the lean walk's 8-bit operands: |x|^2 of such rows is an integer below 2^24, exact in both types).
template <Elem E>
__global__ void convert_kernel(const float* __restrict__ src, int64_t stride, int64_t rows, int64_t dim,
                               int row_bytes, float scale, uint32_t* __restrict__ dst, uint32_t* __restrict__ zeros,
                               int zero_count, const float* __restrict__ norms, int* __restrict__ int_norms,
                               int64_t norm_count) {
  constexpr int kPerWord = 4 / Mma<E>::kElemBytes;
  const int64_t words_per_row = row_bytes / 4, total = rows * words_per_row;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (first < zero_count) zeros[first] = 0;
  // The conversion the walk did a tile (KeyMath<int>::norm), once.
  for (int64_t i = first; i < norm_count; i += int64_t(gridDim.x) * blockDim.x) int_norms[i] = __float2int_rz(norms[i]);
  for (int64_t w = first; w < total; w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = w / words_per_row, c = (w % words_per_row) * kPerWord;
    dst[w] = pack_word<E>(src + r * stride, dim, c, scale);
  }
}

// ---- small device helpers ------------------------------------------------------------------------------------
/// ordered.cuh's ordered_key for a key whose -0 was already made +0 (KeyMath::to_float; integer keys never have one):
/// the same map without its -0 test, which in the append path pushes the 256-byte f16 kernel past 128 registers.
__device__ __forceinline__ uint32_t ordered_key_of_normal(float key) {
  const uint32_t bits = __float_as_uint(key);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}
__device__ __forceinline__ uint32_t ld32(const unsigned char* p) { return *reinterpret_cast<const uint32_t*>(p); }

__device__ __forceinline__ void cp_async16(void* smem_dst, const void* src, int src_bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

__device__ __forceinline__ void cp_async4(void* smem_dst, const void* src, int src_bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(src_bytes));
}

// The lean walk's loads (fused_kernel's kLean): shared addresses as 32-bit words, constant offsets as immediates,
// so that a full tile's chunk costs the one cp.async.
__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
template <int kDstOff, int kSrcOff>
__device__ __forceinline__ void cp_async16_full(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0+%2], [%1+%3], 16;" ::"r"(dst), "l"(src), "n"(kDstOff), "n"(kSrcOff));
}
__device__ __forceinline__ void cp_async16_u32(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async4_full(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src));
}
/// f(std::integral_constant<int, I>) for I = 0 .. N - 1: unrolled with the index a constant expression.
template <int I, int N, class F>
__device__ __forceinline__ void static_for(F&& f) {
  if constexpr (I < N) {
    f(std::integral_constant<int, I>{});
    static_for<I + 1, N>(f);
  }
}

/// Four 8 x 16-byte matrices from shared memory; lane l gives the address of row l % 8 of matrix l / 8 and gets
/// word l % 4 of row l / 4 of each matrix: the B-fragment layout of mma (base row g, bytes 4 t .. 4 t + 3).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

constexpr int kKeepPerLane = kMaxFusedK / 32;

struct Shared {
  uint64_t* buf;  // kBM (BlockShape) x kBuf composite keys (ordered key, row within the split): a sorted list, then appends
  int* count;     // entries in a row's buffer
  int* kept;      // of which the first `kept` are sorted (the list)
  float* tau;     // a row's threshold: keys must be below it to enter
  int* first;     // 2 x kBM: per row, the least place a tile's appends took (tile t: first + (t & 1) kBM; INT_MAX:
                  // none), so that an overflowed tile's appends can be taken back without a barrier to mark its start
  int* flag;      // a buffer overflowed in the current tile
};

/// For every row with new entries: sorts the appends, merges them with the sorted list and keeps the k best; sets
/// the thresholds. Called by the whole block. Sorting only the appends keeps a merge cheap once the thresholds
/// have settled (a few appends a tile). `publish` (the block's rows of KernelArgs::shared_tau, or null): a row
/// whose list holds k entries offers its k-th key to the query's other splits.
template <class S>
__device__ void keep_best(const Shared& sh, int k, int rows_valid, unsigned* publish) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int r = warp; r < rows_valid; r += S::kThreads / 32) {
    const int c = sh.count[r], kp = sh.kept[r];
    if (c == kp) continue;
    uint64_t* v = sh.buf + r * kBuf;
    bitonic::warp_sort_padded(v + kp, c - kp, lane);
    const int keep = min(c, k);
    uint64_t out[kKeepPerLane];
#pragma unroll
    for (int u = 0; u < kKeepPerLane; ++u) {
      const int j = lane + 32 * u;
      if (j < keep) out[u] = bitonic::merged_at(v, kp, v + kp, c - kp, j);
    }
    __syncwarp();
#pragma unroll
    for (int u = 0; u < kKeepPerLane; ++u)
      if (lane + 32 * u < keep) v[lane + 32 * u] = out[u];
    __syncwarp();
    if (lane == 0) {
      sh.count[r] = keep;
      sh.kept[r] = keep;
      sh.tau[r] = keep == k ? key_from_ordered(composite_ordered(v[k - 1], kColumnBits)) : INFINITY;
      if (publish && keep == k) atomicMax(publish + r, ~composite_ordered(v[k - 1], kColumnBits));
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) *sh.flag = 0;
  __syncthreads();
}

struct KernelArgs {
  const unsigned char* queries;  // nq x row_bytes operands
  const unsigned char* base;     // nb x row_bytes operands
  const float* norms;            // squared L2: |x|^2 per base row; inner product: null
  int nq;
  int64_t nb;
  int k;
  int64_t split_rows;
  float scale;  // key = norm + scale * dot (int operands: -2 for L2, -1 for IP; f16 queries are pre-scaled: 1)
  float* out_keys;
  int64_t* out_labels;
  int64_t out_stride;  // elements between query rows of the output
  // Split s writes rank j of its list at column s * split_step + j * rank_step: (k, 1) one list after the other
  // (one split: the list itself), (1, splits) the splits' lists interleaved by rank, so that the selection over
  // them meets every list's best keys first and its threshold settles at once (one list after the other, each
  // sorted, kept it merging: 50 us for 132 lists of 100 keys on the H100).
  int64_t split_step, rank_step;
  int64_t label_offset;
  // Merged in the kernel (merge_splits; null: the pipeline selects over the splits' lists): every split's sorted
  // list of composite keys (ordered key, row within the base tile), nq x splits x k, and one arrival counter per
  // query tile (zeroed by the query conversion). The output (out_*) is then the query's merged list.
  uint64_t* lists;
  unsigned* arrivals;
  // Filter mode (large k: fused/large_k.cuh; the kernel's kFilter): no list is kept; every key at or below the
  // row's threshold (an inclusive composite word: ordered key, column in the base tile) goes to the row's
  // candidate list (cand_cap entries; cand_count counts on past the cap). Rows are this launch's rows.
  const uint64_t* filter;
  uint64_t* cand;
  unsigned* cand_count;
  int64_t cand_cap;
  // Lists mode: cut the first tile's keys to k at once (fused_early_cut(); off only to measure it).
  bool early_cut;
  // Lists mode with several splits (fused_shared_threshold(); null: off): per query, the least k-th key any of its
  // splits has kept so far, as the bitwise NOT of its ordered bits (0: none yet; zeroed before the launch). A split
  // drops every key above it: the query's k best are at or below every split's k-th, so the splits' lists still
  // hold them all, and a split that starts after another one of its query appends a few keys, not k ln(n / k).
  unsigned* shared_tau;
  // The lean walk (lists mode only; fused_lean(), read by the launcher: the kernel is a template of it). Its 8-bit
  // kernels read the norms as integers: int_norms (|x|^2 per base row, converted once per search from `norms`;
  // null for inner product), never `norms`.
  bool lean;
  const int* int_norms;
  // A tile's overflow settled after the next tile's barrier, so that a tile costs one (fused_one_barrier(); else
  // after a barrier of its own, the walk before it).
  bool one_barrier;
};

/// Filter mode: every row's buffered entries (composite words with base-tile columns) appended to its candidate
/// list in device memory (one atomic per row reserves the places; entries past the cap are dropped, the count
/// goes on), the buffers emptied. Called by the whole block; barriers before and after.
template <class S>
__device__ void flush_to_candidates(const Shared& sh, const KernelArgs& a, int m0, int rows_valid) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  for (int r = warp; r < rows_valid; r += S::kThreads / 32) {
    const int n = sh.count[r];
    if (n == 0) continue;
    unsigned at = 0;
    if (lane == 0) at = atomicAdd(a.cand_count + m0 + r, static_cast<unsigned>(n));
    at = __shfl_sync(0xFFFFFFFFu, at, 0);
    uint64_t* dst = a.cand + int64_t(m0 + r) * a.cand_cap;
    for (int j = lane; j < n; j += 32)
      if (int64_t(at) + j < a.cand_cap) dst[at + j] = sh.buf[r * kBuf + j];
    __syncwarp();
    if (lane == 0) sh.count[r] = 0;
  }
  __syncthreads();
  if (threadIdx.x == 0) *sh.flag = 0;
  __syncthreads();
}

// ---- the splits' lists merged in the kernel ----------------------------------------------------------------------
/// Output entry `at` from a merged composite word (its column is the row in the whole base); ~0 (never reached, as
/// the splits hold >= k rows together) would be +inf / -1.
__device__ inline void write_merged(const KernelArgs& a, int64_t at, uint64_t c) {
  const bool real = c != ~uint64_t(0);
  a.out_keys[at] = real ? key_from_ordered(composite_ordered(c, kColumnBits)) : INFINITY;
  a.out_labels[at] = real ? a.label_offset + composite_column(c, kColumnBits) : -1;
}

/// The last block of a query tile: every query's merged list into the output.
template <int kThreads>
__device__ void merge_splits(const KernelArgs& a, unsigned char* smem, int m0, int rows_valid) {
  const auto sm = split_merge::MergeShared::at(smem);
  const int splits = static_cast<int>(gridDim.y);
  for (int r = 0; r < rows_valid; ++r) {
    split_merge::merge_one_query<kThreads>(a.lists + int64_t(m0 + r) * splits * a.k, splits, a.k, sm);
    const int64_t at = int64_t(m0 + r) * a.out_stride;
    for (int j = threadIdx.x; j < a.k; j += kThreads) write_merged(a, at + j, sm.acc[j]);
    __syncthreads();  // the next query reuses the shared memory
  }
}

/// The last block of a query tile, at most kFewSplits lists a query: every query's lists merged pairwise by one
/// warp (merge path), k entries kept after each, in the query's buffer of shared memory, then into the output.
template <int kThreads>
__device__ void merge_few_splits(const KernelArgs& a, uint64_t* buf, int m0, int rows_valid) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, splits = static_cast<int>(gridDim.y), k = a.k;
  for (int r = warp; r < rows_valid; r += kThreads / 32) {
    const uint64_t* lists = a.lists + int64_t(m0 + r) * splits * k;
    uint64_t* v = buf + r * kBuf;  // the kept k, then the next list (kBuf >= 2 k)
    for (int j = lane; j < k; j += 32) v[j] = __ldcg(lists + j);
    for (int s = 1; s < splits; ++s) {
      for (int j = lane; j < k; j += 32) v[k + j] = __ldcg(lists + s * k + j);
      __syncwarp();
      uint64_t out[kKeepPerLane];
#pragma unroll
      for (int u = 0; u < kKeepPerLane; ++u)
        if (lane + 32 * u < k) out[u] = bitonic::merged_at(v, k, v + k, k, lane + 32 * u);
      __syncwarp();
#pragma unroll
      for (int u = 0; u < kKeepPerLane; ++u)
        if (lane + 32 * u < k) v[lane + 32 * u] = out[u];
    }
    __syncwarp();
    const int64_t at = int64_t(m0 + r) * a.out_stride;
    for (int j = lane; j < k; j += 32) write_merged(a, at + j, v[j]);
  }
}

template <int kRowBytes, int kStages, class S>
constexpr size_t shared_bytes() {
  return size_t(S::kBM) * kBuf * 8 + size_t(kStages) * kBN * (kRowBytes + 16) + size_t(kStages) * kBN * 4 +
         5 * S::kBM * 4 + 16;
}

/// Whether the shape's blocks, `bytes` of shared memory each, fit an SM (228 KB, 1 KB of it reserved a block).
template <class S>
constexpr bool fits_sm(size_t bytes) {
  return (bytes + 1024) * S::kBlocksPerSm <= 228 * 1024;
}
/// Tile stages: three where the shape's blocks fit an SM with them, else two.
template <int kRowBytes, class S>
constexpr int stages_for() {
  return fits_sm<S>(shared_bytes<kRowBytes, 3, S>()) ? 3 : 2;
}

/// Keys in the accumulator's domain. 8-bit operands: integers (every key of fp16_exact data is an integer below
/// 2^24 in magnitude, so int32 holds it and the float conversion is exact), compared as integers; the threshold
/// of a row is a kept key, an integer, or +-infinity. f16 operands: floats, exact under the same bound.
template <typename Acc>
struct KeyMath;
template <>
struct KeyMath<int> {
  static constexpr int kNever = INT_MAX;  // the key of a column past the split's end (its operands are zeros)
  __device__ static int norm(float n) { return __float2int_rz(n); }  // +infinity (past the end) -> INT_MAX
  __device__ static int threshold(float t) { return t == INFINITY ? INT_MAX : t == -INFINITY ? INT_MIN : int(t); }
  __device__ static int key(int norm, int scale, int dot) { return norm + scale * dot; }
  __device__ static float to_float(int key) { return static_cast<float>(key); }
  /// `key < inclusive(t)` <=> key <= t for integer keys (|key| < 2^24); +infinity takes every real key.
  __device__ static int inclusive(float t) { return t == INFINITY ? INT_MAX : int(t) + 1; }
};
template <>
struct KeyMath<float> {
  static constexpr float kNever = INFINITY;
  __device__ static float norm(float n) { return n; }
  __device__ static float threshold(float t) { return t; }
  __device__ static float key(float norm, float /*scale: 1*/, float dot) { return norm + dot; }
  __device__ static float to_float(float key) { return key == 0.f ? 0.f : key; }  // -0 and +0: one bit pattern
  __device__ static float inclusive(float t) { return t == INFINITY ? INFINITY : nextafterf(t, INFINITY); }
};

/// The norms of the inner product's rows in the lean walk (0, as int or float): its loads read them instead of
/// testing for a null pointer each tile.
__device__ uint32_t g_zero_norms[kBN] = {};

/// kLean (lists mode only): the walk with less issue per tile, the same results (fused_lean()):
///   * 8-bit operands read their norms as integers (KernelArgs::int_norms): no float-to-int conversion a tile;
///   * a thread reserves its keys of a row group with one shared atomic (their count), not one per key, and tests
///     for a full buffer once;
///   * a tile's loads are one cp.async a 16-byte chunk (the block's running pointer plus the thread's offset, then
///     constant offsets), the null test of the norms and the full-tile test hoisted out of the walk.
template <Elem E, int kSteps, int kStages, class S, bool kFilter, bool kLean>
__global__ void __launch_bounds__(S::kThreads, S::kBlocksPerSm) fused_kernel(const KernelArgs a) {
  static_assert(!(kFilter && kLean), "the lean walk is the lists mode's");
  constexpr int kBM = S::kBM, kThreads = S::kThreads, kMt = S::kMt, kWarpRows = kMt * 16;
  using M = Mma<E>;
  using Acc = typename M::Acc;
  using K = KeyMath<Acc>;
  // The tile's norm slots: integers for the lean walk's 8-bit operands, else floats.
  using NormT = std::conditional_t<kLean && std::is_same_v<Acc, int>, int, float>;
  constexpr int kRowBytes = kSteps * 32, kPitch = kRowBytes + 16;  // +16 B: conflict-free fragment loads
  extern __shared__ __align__(16) unsigned char smem[];
  // The layout: buffers, tiles, the tiles' norms (words), then count, kept, tau and two `first` per row, the flag.
  constexpr unsigned kTilesOffset = unsigned(kBM) * kBuf * 8, kNormsOffset = kTilesOffset + kStages * kBN * kPitch,
                     kIntsOffset = kNormsOffset + kStages * kBN * 4, kFlagOffset = kIntsOffset + 5 * kBM * 4;
  static_assert(sizeof(NormT) == 4 && kFlagOffset + 16 <= shared_bytes<kRowBytes, kStages, S>());
  unsigned char* tiles = smem + kTilesOffset;
  NormT* tile_norms = reinterpret_cast<NormT*>(smem + kNormsOffset);
  int* ints = reinterpret_cast<int*>(smem + kIntsOffset);
  const Shared sh{reinterpret_cast<uint64_t*>(smem), ints, ints + kBM, reinterpret_cast<float*>(ints + 2 * kBM),
                  ints + 3 * kBM, reinterpret_cast<int*>(smem + kFlagOffset)};

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN, g = lane >> 2, t4 = lane & 3;
  const int m0 = blockIdx.x * kBM;
  const int rows_valid = min(kBM, a.nq - m0);
  const int64_t b_begin = int64_t(blockIdx.y) * a.split_rows, b_end = min(a.nb, b_begin + a.split_rows);
  const int tiles_n = static_cast<int>((b_end - b_begin + kBN - 1) / kBN);
  const Acc scale = static_cast<Acc>(a.scale);

  if (tid < kBM) {
    sh.count[tid] = 0;
    sh.kept[tid] = 0;
    sh.first[tid] = INT_MAX;
    sh.first[kBM + tid] = INT_MAX;
    sh.tau[tid] = tid < rows_valid ? INFINITY : -INFINITY;  // rows past the queries take nothing
  }
  if (tid == 0) *sh.flag = 0;

  // A tile's 16-byte chunks, kPerThread per thread (row c / kChunks, chunk c % kChunks of c = tid + i kThreads);
  // their offsets are fixed, so a full tile costs one address per chunk. Rows past the split's end are zeros with
  // the norm +infinity, so that their keys are never kept.
  constexpr int kChunks = kRowBytes / 16, kTotal = kBN * kChunks, kPerThread = (kTotal + kThreads - 1) / kThreads;
  int smem_off[kPerThread], global_off[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int c = tid + i * kThreads;
    smem_off[i] = (c / kChunks) * kPitch + (c % kChunks) * 16;
    global_off[i] = (c / kChunks) * kRowBytes + (c % kChunks) * 16;
  }
  // Tiles are loaded in order: running source pointers, and the bounds checks only for the split's last tile.
  const unsigned char* load_src = a.base + b_begin * kRowBytes;
  const float* load_norms = a.norms ? a.norms + b_begin : nullptr;
  const int last_rows = static_cast<int>(b_end - b_begin - int64_t(tiles_n - 1) * kBN);
  // The lean walk's loads: chunk i of a thread is row tid / kChunks + i kRowsPerPass, bytes 16 (tid % kChunks), so
  // its source is a.base + 16 (tid + i kThreads) from the split's start and its place a constant from chunk 0's.
  // The running pointers (the tile's rows and norms; the zero row's, not advancing, for inner product) are the
  // block's, which the uniform datapath keeps; a thread adds its offset once a tile.
  constexpr int kRowsPerPass = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0, "a pass of the block's threads covers whole rows");
  const unsigned char* lean_src = a.base + b_begin * kRowBytes;
  const void* norm_rows = std::is_same_v<NormT, int> ? static_cast<const void*>(a.int_norms)
                                                     : static_cast<const void*>(a.norms);
  const int norm_tid = tid < kBN ? tid : 0;  // threads past kBN load no norm
  const NormT* lean_norm_src = norm_rows ? static_cast<const NormT*>(norm_rows) + b_begin
                                         : reinterpret_cast<const NormT*>(g_zero_norms);
  const int lean_norm_step = norm_rows ? kBN : 0;
  const unsigned lean_dst = smem_u32(tiles) + (tid / kChunks) * kPitch + (tid % kChunks) * 16;
  const unsigned lean_norm_dst = smem_u32(tile_norms) + norm_tid * 4;
  const int full_tiles = last_rows == kBN ? tiles_n : tiles_n - 1;  // tiles before a partial last one
  auto load_tile_lean = [&](int t, int stage) {
    const unsigned dst = lean_dst + stage * (kBN * kPitch), norm_dst = lean_norm_dst + stage * (kBN * 4);
    if (t < full_tiles) {
      static_for<0, kPerThread>([&](auto ic) {
        constexpr int i = decltype(ic)::value;
        if (kTotal % kThreads == 0 || tid + i * kThreads < kTotal)
          cp_async16_full<i * kRowsPerPass * kPitch, i * kThreads * 16>(dst, lean_src + tid * 16);
      });
      if (tid < kBN) cp_async4_full(norm_dst, lean_norm_src + tid);
    } else {  // the last tile, partial: rows past the end are zeros with the norm never kept
#pragma unroll
      for (int i = 0; i < kPerThread; ++i)
        if (kTotal % kThreads == 0 || tid + i * kThreads < kTotal) {
          const bool ok = tid / kChunks + i * kRowsPerPass < last_rows;
          cp_async16_u32(dst + i * kRowsPerPass * kPitch, ok ? lean_src + (tid + i * kThreads) * 16 : a.base, ok ? 16 : 0);
        }
      if (tid < kBN) {
        if (tid < last_rows) cp_async4_full(norm_dst, lean_norm_src + tid);
        else if constexpr (std::is_same_v<NormT, int>) tile_norms[stage * kBN + tid] = INT_MAX;  // K::norm(+inf)
        else tile_norms[stage * kBN + tid] = INFINITY;
      }
    }
    lean_src += kBN * kRowBytes;
    lean_norm_src += lean_norm_step;
  };
  auto load_tile = [&](int t, int stage) {
    if constexpr (kLean) {
      load_tile_lean(t, stage);
    } else {
      unsigned char* dst = tiles + stage * kBN * kPitch;
      float* norm = tile_norms + stage * kBN + tid;
      if (t + 1 < tiles_n || last_rows == kBN) {
#pragma unroll
        for (int i = 0; i < kPerThread; ++i)
          if (kTotal % kThreads == 0 || tid + i * kThreads < kTotal) cp_async16(dst + smem_off[i], load_src + global_off[i], 16);
        if (tid < kBN) {
          if (load_norms) cp_async4(norm, load_norms + tid, 4);
          else *norm = 0.f;
        }
      } else {  // the last tile, partial: rows past the end are zeros with the norm +infinity
#pragma unroll
        for (int i = 0; i < kPerThread; ++i)
          if (kTotal % kThreads == 0 || tid + i * kThreads < kTotal) {
            const bool ok = (tid + i * kThreads) / kChunks < last_rows;
            cp_async16(dst + smem_off[i], ok ? load_src + global_off[i] : a.base, ok ? 16 : 0);
          }
        if (tid < kBN) {
          if (tid >= last_rows) *norm = INFINITY;
          else if (load_norms) cp_async4(norm, load_norms + tid, 4);
          else *norm = 0.f;
        }
      }
      load_src += kBN * kRowBytes;
      if (load_norms) load_norms += kBN;
    }
  };
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles_n) load_tile(s, s);
    cp_async_commit();
  }

  // The queries' fragments, for the whole walk.
  uint32_t af[kMt][kSteps][4];
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + wm * kWarpRows + mt * 16 + g + 8 * h;
      const unsigned char* q = a.queries + int64_t(row) * kRowBytes + 4 * t4;
#pragma unroll
      for (int ks = 0; ks < kSteps; ++ks) {
        af[mt][ks][h] = row < a.nq ? ld32(q + ks * 32) : 0u;
        af[mt][ks][2 + h] = row < a.nq ? ld32(q + ks * 32 + 16) : 0u;
      }
    }
  __syncthreads();
  Acc tau[kMt][2];
  uint64_t filter[kMt][2];  // filter mode: the rows' composite thresholds (tau: their keys, inclusive)
  auto read_thresholds = [&] {
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wm * kWarpRows + mt * 16 + g + 8 * h;
        if constexpr (kFilter) {
          filter[mt][h] = m0 + row < a.nq ? a.filter[m0 + row] : 0;
          const uint32_t ordered = composite_ordered(filter[mt][h], kColumnBits);
          tau[mt][h] = m0 + row >= a.nq ? K::threshold(-INFINITY)
                       : ordered == ~0u ? K::inclusive(INFINITY)
                                        : K::inclusive(key_from_ordered(ordered));
        } else {
          tau[mt][h] = K::threshold(sh.tau[row]);
          if (a.shared_tau && m0 + row < a.nq) {  // another split's k-th, inclusive: ties may rank first by index
            const unsigned other = __ldcg(a.shared_tau + m0 + row);
            if (other != 0u) tau[mt][h] = min(tau[mt][h], K::inclusive(key_from_ordered(~other)));
          }
        }
      }
  };
  read_thresholds();
  // ldmatrix row of this lane: matrix l / 8 = (mma column block l / 16, byte half (l / 8) % 2), row l % 8.
  const int ld_row = wn * kWarpCols + (lane >> 4) * 8 + (lane & 7), ld_byte = ((lane >> 3) & 1) * 16;
  static_assert(kNb == 2, "one ldmatrix.x4 per reduction step covers two mma columns");

  Acc key[kMt][kNb][4];
  // Appends the keys of one row group (a thread's row mt * 16 + g + 8 h) below the row's threshold. A full buffer
  // drops the key and raises the flag: the tile is then taken back and appended again after the buffers were cut
  // to k (which leaves room for a whole tile). `first`: the tile's least places (Shared::first), lowered to the
  // places taken.
  auto append_row = [&](int mt, int h, uint32_t col0, int* first) {
    const int row = wm * kWarpRows + mt * 16 + g + 8 * h;
    int least = INT_MAX;
#pragma unroll
    for (int nb = 0; nb < kNb; ++nb)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        if (key[mt][nb][2 * h + j] < tau[mt][h]) {
          // Filter mode: the column in the base tile (the threshold's), else within the split (the lists').
          const uint32_t col = col0 + nb * 8 + 2 * t4 + j + (kFilter ? static_cast<uint32_t>(b_begin) : 0u);
          const uint64_t word = composite_key(ordered_key_of_normal(K::to_float(key[mt][nb][2 * h + j])), col, kColumnBits);
          if (kFilter && word > filter[mt][h]) continue;  // a tie of the threshold's key past its column
          const int pos = atomicAdd(sh.count + row, 1);
          least = min(least, pos);
          if (pos < kBuf) sh.buf[row * kBuf + pos] = word;
          else *sh.flag = 1;
        }
    if (least != INT_MAX) atomicMin(first + row, least);
  };
  // The lean walk's appends: the thread's keys of the row group below the threshold take their places with one
  // atomic (their count). Where they do not all fit, the thread stores none of them and raises the flag: the
  // tile's appends are all taken back then (every row's count goes back to the tile's least place, and no entry
  // past it is read), so the keys it could have stored before the buffer's end would be dropped anyway. (An OR of
  // the threads' own bits in the tile's barrier instead of the flag held a register over the appends: the 256-byte
  // wide kernel spilled with it.)
  auto append_row_lean = [&](int mt, int h, uint32_t col0, int* first) {
    const int row = wm * kWarpRows + mt * 16 + g + 8 * h;
    int n = 0;
#pragma unroll
    for (int nb = 0; nb < kNb; ++nb)
#pragma unroll
      for (int j = 0; j < 2; ++j) n += key[mt][nb][2 * h + j] < tau[mt][h];
    if (n == 0) return;
    int pos = atomicAdd(sh.count + row, n);
    atomicMin(first + row, pos);
    if (pos + n > kBuf) {  // rare: the tile is taken back
      *sh.flag = 1;
      return;
    }
#pragma unroll
    for (int nb = 0; nb < kNb; ++nb)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        if (key[mt][nb][2 * h + j] < tau[mt][h]) {  // the same test again: no predicates held over the atomic
          const uint32_t col = col0 + nb * 8 + 2 * t4 + j;
          sh.buf[row * kBuf + pos++] =
              composite_key(ordered_key_of_normal(K::to_float(key[mt][nb][2 * h + j])), col, kColumnBits);
        }
  };
  auto append = [&](int mt, int h, uint32_t col0, int* first) {
    if constexpr (kLean) append_row_lean(mt, h, col0, first);
    else append_row(mt, h, col0, first);
  };
  static_assert(kBuf >= kMaxFusedK + kBN, "after a cut to k a buffer must hold a whole tile's appends");

  // After tile tp's appends and a barrier (the next tile's, so that a tile costs one; KernelArgs::one_barrier off:
  // a barrier of its own): where a buffer overflowed, the tile's appends are taken back (every row's count to the
  // tile's least place), every list is cut to k (filter mode: flushed) and the tile's keys, still in registers, are
  // appended again, which now fits; else after the first tile its keys are cut to k at once (KernelArgs::early_cut): the second tile then appends only the keys
  // below the k-th of them instead of all of its own too (two full buffers, then a sort of 256 entries a row:
  // Garcia's shape, k = 16, spent about half of its kernel in such sorts). Then tile tp's `first` is cleared for
  // tile tp + 2, whose appends follow that tile's barrier. Block-uniform (the flag is read after a barrier).
  auto settle = [&](int tp) {
    int* first = sh.first + (tp & 1) * kBM;
    if (*sh.flag) {
      if (tid < kBM) sh.count[tid] = min(sh.count[tid], first[tid]);
      __syncthreads();
      if constexpr (kFilter) {
        flush_to_candidates<S>(sh, a, m0, rows_valid);  // the thresholds stay
      } else {
        keep_best<S>(sh, a.k, rows_valid, a.shared_tau ? a.shared_tau + m0 : nullptr);
        read_thresholds();
      }
      const uint32_t col0 = static_cast<uint32_t>(tp) * kBN + wn * kWarpCols;
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) append(mt, h, col0, first);
      __syncthreads();
    } else if (!kFilter && tp == 0 && a.early_cut) {
      keep_best<S>(sh, a.k, rows_valid, a.shared_tau ? a.shared_tau + m0 : nullptr);
      read_thresholds();
    }
    if (tid < kBM) first[tid] = INT_MAX;
  };

  int stage = 0, load_stage = kStages - 1;
  for (int t = 0; t < tiles_n; ++t) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile t is in; every warp is done with the stage the next load overwrites and with its appends
    if (a.one_barrier && t > 0) settle(t - 1);
    if (t + kStages - 1 < tiles_n) load_tile(t + kStages - 1, load_stage);
    cp_async_commit();
    load_stage = load_stage + 1 == kStages ? 0 : load_stage + 1;
    const unsigned char* tile = tiles + stage * kBN * kPitch;

    Acc acc[kMt][kNb][4];
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int nb = 0; nb < kNb; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mt][nb][e] = Acc(0);
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      uint32_t r[4];
      ldmatrix_x4(r, tile + ld_row * kPitch + ks * 32 + ld_byte);
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
        for (int nb = 0; nb < kNb; ++nb) M::run(acc[mt][nb], af[mt][ks], r[2 * nb], r[2 * nb + 1]);
    }

    Acc norm[kNb][2];
#pragma unroll
    for (int nb = 0; nb < kNb; ++nb) {
      if constexpr (std::is_same_v<NormT, int>) {  // the lean walk's 8-bit operands: integers already
        const int2 n = *reinterpret_cast<const int2*>(tile_norms + stage * kBN + wn * kWarpCols + nb * 8 + 2 * t4);
        norm[nb][0] = n.x;
        norm[nb][1] = n.y;
      } else {
        const float2 n = *reinterpret_cast<const float2*>(tile_norms + stage * kBN + wn * kWarpCols + nb * 8 + 2 * t4);
        norm[nb][0] = K::norm(n.x);
        norm[nb][1] = K::norm(n.y);
      }
    }
    stage = stage + 1 == kStages ? 0 : stage + 1;
    // Most keys are above their row's threshold once it has settled: the smallest of each row's keys is tested
    // first, the appends run only where one is below.
    const uint32_t col0 = static_cast<uint32_t>(t) * kBN + wn * kWarpCols;
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        Acc least = K::kNever;
#pragma unroll
        for (int nb = 0; nb < kNb; ++nb)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            key[mt][nb][2 * h + j] = K::key(norm[nb][j], scale, acc[mt][nb][2 * h + j]);
            least = min(least, key[mt][nb][2 * h + j]);
          }
        if (least < tau[mt][h]) append(mt, h, col0, sh.first + (t & 1) * kBM);
      }
    if (!a.one_barrier) {
      __syncthreads();
      settle(t);
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  if (a.one_barrier && tiles_n > 0) settle(tiles_n - 1);
  if constexpr (kFilter) {
    flush_to_candidates<S>(sh, a, m0, rows_valid);
    return;
  }
  keep_best<S>(sh, a.k, rows_valid, a.shared_tau ? a.shared_tau + m0 : nullptr);

  // Every split's list to memory; the tile's last block to finish merges them (merge_few_splits, or for a few
  // queries merge_splits, which only the narrow block runs: fused_search).
  if (a.lists) {
    for (int r = warp; r < rows_valid; r += kThreads / 32) {
      const uint64_t* v = sh.buf + r * kBuf;
      const int kept = sh.kept[r];
      uint64_t* dst = a.lists + (int64_t(m0 + r) * gridDim.y + blockIdx.y) * a.k;
      for (int j = lane; j < a.k; j += 32)
        dst[j] = j < kept ? composite_key(composite_ordered(v[j], kColumnBits),
                                          static_cast<uint32_t>(b_begin) + composite_column(v[j], kColumnBits),
                                          kColumnBits)
                          : ~uint64_t(0);
    }
    __threadfence();  // the list is visible device-wide before this block counts as arrived
    const bool last = __syncthreads_or(tid == 0 && atomicAdd(a.arrivals + blockIdx.x, 1u) == gridDim.y - 1);
    if (!last) return;
    __threadfence();  // and the other blocks' lists are read after their arrivals
    if (gridDim.y <= kFewSplits) merge_few_splits<kThreads>(a, sh.buf, m0, rows_valid);
    else if constexpr (kBM == NarrowBlock::kBM) merge_splits<kThreads>(a, smem, m0, rows_valid);
    return;
  }
  // A split shorter than k (possible only at the end of the base) pads its list with +infinity: the selection
  // over the splits' lists never reaches them, since the splits together hold at least k finite keys.
  for (int r = warp; r < rows_valid; r += kThreads / 32) {
    const uint64_t* v = sh.buf + r * kBuf;
    const int kept = sh.kept[r];
    const int64_t at = int64_t(m0 + r) * a.out_stride + int64_t(blockIdx.y) * a.split_step;
    for (int j = lane; j < a.k; j += 32) {
      a.out_keys[at + j * a.rank_step] = j < kept ? key_from_ordered(composite_ordered(v[j], kColumnBits)) : INFINITY;
      a.out_labels[at + j * a.rank_step] = j < kept ? a.label_offset + b_begin + composite_column(v[j], kColumnBits) : -1;
    }
  }
}

// ---- host side --------------------------------------------------------------------------------------------------
/// The operand type exact on these data (fp16_exact() holds): 8-bit integers where the values fit, else f16.
Elem element_for(const DataFacts& f) {
  if (f.values.nonnegative && f.values.max_abs <= 255.f) return Elem::U8;
  if (f.values.max_abs <= 127.f) return Elem::S8;
  return Elem::F16;
}
int elem_bytes(Elem e) { return e == Elem::F16 ? 2 : 1; }

/// Row bytes of the operands: 32, 64, 128 or 256 (one kernel each); 0 when the row is longer.
int row_bytes_for(int64_t dim, Elem e) {
  const int64_t bytes = dim * elem_bytes(e);
  for (int rb = 32; rb <= kMaxRowBytes; rb *= 2)
    if (bytes <= rb) return rb;
  return 0;
}

/// Splits of the base per query tile of `bm` queries. A block's time is about (tiles of its split + a fixed cost:
/// the queries' fragments, the first sorts, the output) and blocks run in waves of `per_sm` per SM, so the count
/// minimises waves x (tiles + that cost) over 1 .. (enough blocks for kWavesPerSplitPlan waves), each split
/// >= max(k, 1024) rows.
/// GKNN_FUSED_SPLITS=N (N >= 1): N splits wherever split_count() plans, within its limit of rows a split; to measure
/// the plan's cost model against other counts (0 or unset: the plan).
int64_t forced_split_count() {
  static const int64_t forced = static_cast<int64_t>(detail::env_positive("GKNN_FUSED_SPLITS", 0.0));
  return forced;
}

int64_t split_count(int64_t nq, int64_t nb, int64_t k, int sms, int bm, int per_sm) {
  constexpr int64_t kFixedCostTiles = 6;
  const int64_t qtiles = (nq + bm - 1) / bm, slots = int64_t(sms) * per_sm;
  const int64_t want = (int64_t(kWavesPerSplitPlan) * slots + qtiles - 1) / qtiles;
  const int64_t rows_limit = std::max<int64_t>(1, nb / std::max<int64_t>(k, kMinSplitRows));
  if (const int64_t forced = forced_split_count(); forced > 0) return std::min(forced, rows_limit);
  const int64_t most = std::clamp<int64_t>(rows_limit, 1, want);
  int64_t best = 1, best_cost = INT64_MAX;
  for (int64_t s = 1; s <= most; ++s) {
    const int64_t waves = (qtiles * s + slots - 1) / slots, rows = (nb + s - 1) / s;
    const int64_t cost = waves * ((rows + kBN - 1) / kBN + kFixedCostTiles);
    if (cost < best_cost) best = s, best_cost = cost;
  }
  return best;
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// The first tile's cut (KernelArgs::early_cut); GKNN_FUSED_NO_EARLY_CUT set (not "0") turns it off, to measure
/// it against the walk without it (results are identical either way).
bool fused_early_cut() {
  static const bool off = detail::env_switch_on("GKNN_FUSED_NO_EARLY_CUT");
  return !off;
}

/// The splits of a query share their k-th keys (KernelArgs::shared_tau); GKNN_FUSED_SHARED_THRESHOLD=0 turns it off,
/// to measure it against the walk without it (results are identical either way). On by default since measured:
/// SIFT1M uint8 k = 100 kernel 14.0 -> 10.5 ms, Garcia 0.258 -> 0.249 ms (H200, 2026-11-27).
bool fused_shared_threshold() {
  static const bool off = detail::env_switch_off("GKNN_FUSED_SHARED_THRESHOLD");
  return !off;
}

/// The lean walk (fused_kernel's kLean) for the lists mode; GKNN_FUSED_EPILOGUE=0 runs the walk before it, to
/// measure the two against each other (results are identical either way).
bool fused_lean() {
  static const bool off = detail::env_switch_off("GKNN_FUSED_EPILOGUE");
  return !off;
}

/// The walk's one barrier a tile (KernelArgs::one_barrier); GKNN_FUSED_ONE_BARRIER=0 runs the walk with a second
/// barrier a tile before it, to measure the two (results are identical either way). On by default since measured
/// (H200, 2026-11-29, one machine, interleaved): SIFT1M uint8 kernel k = 100 10.31-10.32 -> 10.16-10.25 ms,
/// k = 1000 20.67-20.70 -> 20.25-20.34 ms; Garcia and q = 1 equal.
bool fused_one_barrier() {
  static const bool off = detail::env_switch_off("GKNN_FUSED_ONE_BARRIER");
  return !off;
}

/// The medium block (MediumBlock) where it serves; GKNN_FUSED_MEDIUM=0 runs the wide block there instead, to
/// measure the two (results are identical either way). On by default since measured (H200, 2026-11-29, interleaved
/// wide / medium): SIFT1M uint8 k = 100 kernel 10.54-10.57 -> 9.96-10.02 ms; Garcia 0.245 either way.
bool fused_medium_block() {
  static const bool off = detail::env_switch_off("GKNN_FUSED_MEDIUM");
  return !off;
}

enum class Shape { Narrow, Medium, Wide };

/// The block shape of a launch over `nq` queries: narrow for at most 16, medium where it serves (the lean lists
/// walk, rows of at most 128 bytes) and is on, else wide.
Shape shape_for(int64_t nq, int row_bytes, bool filter, bool lean) {
  if (nq <= NarrowBlock::kBM) return Shape::Narrow;
  if (!filter && lean && row_bytes <= 128 && fused_medium_block()) return Shape::Medium;
  return Shape::Wide;
}
int shape_rows(Shape shape) {
  return shape == Shape::Narrow ? NarrowBlock::kBM : shape == Shape::Medium ? MediumBlock::kBM : WideBlock::kBM;
}
int shape_blocks_per_sm(Shape shape) {
  return shape == Shape::Narrow   ? NarrowBlock::kBlocksPerSm
         : shape == Shape::Medium ? MediumBlock::kBlocksPerSm
                                  : WideBlock::kBlocksPerSm;
}
/// f(the shape's BlockShape{}): the one dispatch from a shape to its kernels' template argument.
template <class F>
void with_block(Shape shape, F&& f) {
  switch (shape) {
    case Shape::Narrow: return f(NarrowBlock{});
    case Shape::Medium: return f(MediumBlock{});
    case Shape::Wide: return f(WideBlock{});
  }
}
/// split_count() for a launch of this shape.
int64_t shape_split_count(Shape shape, int64_t nq, int64_t nb, int64_t k, int device) {
  return split_count(nq, nb, k, device_props(device).sm_count, shape_rows(shape), shape_blocks_per_sm(shape));
}

template <Elem E>
void convert(const float* rows, int64_t stride, int64_t count, int64_t dim, int row_bytes, float scale, void* dst,
             cudaStream_t s, unsigned* zeros = nullptr, int zero_count = 0, const float* norms = nullptr,
             int* int_norms = nullptr, int64_t norm_count = 0) {
  const int64_t words = std::max({count * row_bytes / 4, int64_t(zero_count), norm_count});
  if (words == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((words + 255) / 256, 1 << 16));
  convert_kernel<E><<<blocks, 256, 0, s>>>(rows, stride, count, dim, row_bytes, scale, static_cast<uint32_t*>(dst),
                                           zeros, zero_count, norms, int_norms, norm_count);
  GKNN_CUDA_CHECK_LAUNCH();
}

template <Elem E, int kSteps, class S, bool kFilter, bool kLean>
void launch_kernel(const KernelArgs& args, int64_t splits, int device, cudaStream_t s) {
  constexpr int kStages = stages_for<kSteps * 32, S>();
  constexpr size_t bytes = shared_bytes<kSteps * 32, kStages, S>();
  static_assert(fits_sm<S>(bytes), "the shape's blocks fit an SM");
  static_assert(bytes >= split_merge::MergeShared::bytes(S::kThreads), "merge_splits reuses the shared memory");
  auto* kernel = fused_kernel<E, kSteps, kStages, S, kFilter, kLean>;
  // Once per kernel and device (each device's context keeps its own attributes): the call costs microseconds,
  // which a one-query search feels.
  static std::atomic<uint64_t> attributed{0};
  const uint64_t bit = device >= 0 && device < 64 ? uint64_t(1) << device : 0;
  if (!(attributed.load(std::memory_order_relaxed) & bit)) {
    GKNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    // All of L1 as shared memory (the tiles bypass L1), so that the narrow shape's two blocks per SM (180 KB) do
    // not depend on the driver's default split (ncu on the H100: 2 blocks per SM with it).
    GKNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
    attributed.fetch_or(bit, std::memory_order_relaxed);
  }
  const dim3 grid(static_cast<unsigned>((args.nq + S::kBM - 1) / S::kBM), static_cast<unsigned>(splits));
  kernel<<<grid, S::kThreads, bytes, s>>>(args);
  GKNN_CUDA_CHECK_LAUNCH();
}

template <Elem E, int kSteps, class S, bool kFilter>
void launch(const KernelArgs& args, int64_t splits, int device, cudaStream_t s) {
  if constexpr (std::is_same_v<S, MediumBlock>) {  // the lean lists walk on rows of at most 128 bytes only
    if constexpr (!kFilter && kSteps <= 4) {
      if (args.lean) return launch_kernel<E, kSteps, S, false, true>(args, splits, device, s);
    }
    GKNN_EXPECT(false, ErrorCode::Internal, "fused kernel: the medium block launched outside its range");
  } else {
    if constexpr (!kFilter) {
      if (args.lean) return launch_kernel<E, kSteps, S, false, true>(args, splits, device, s);
    }
    launch_kernel<E, kSteps, S, kFilter, false>(args, splits, device, s);
  }
}

template <Elem E, class S, bool kFilter = false>
void launch_for_rows(const KernelArgs& args, int row_bytes, int64_t splits, int device, cudaStream_t s) {
  switch (row_bytes) {
    case 32: return launch<E, 1, S, kFilter>(args, splits, device, s);
    case 64: return launch<E, 2, S, kFilter>(args, splits, device, s);
    case 128: return launch<E, 4, S, kFilter>(args, splits, device, s);
    default: return launch<E, 8, S, kFilter>(args, splits, device, s);
  }
}

/// The base tile's operands: the kept copy's rows (in.base_cache, `kept`), the rows it lacks converted into it
/// first, else the tile converted into `scratch`.
template <Elem E>
const unsigned char* base_operands(const DistanceInput& in, int row_bytes, bool kept, void* scratch,
                                   cudaStream_t s) {
  if (!kept) {
    convert<E>(in.base, in.base_stride, in.nb, in.dim, row_bytes, 1.f, scratch, s);
    return static_cast<const unsigned char*>(scratch);
  }
  OperandCache& cache = *in.base_cache;
  const int64_t end = in.base_row0 + in.nb;
  GKNN_EXPECT(cache.bytes.bytes() >= static_cast<size_t>(end) * row_bytes, ErrorCode::Internal,
              "fused kernel: the kept operand copy holds ", cache.bytes.bytes(), " bytes, not ", end, " rows");
  unsigned char* rows = cache.bytes.data();
  if (cache.rows < end) {
    const int64_t from = cache.rows - in.base_row0;
    convert<E>(in.base + from * in.base_stride, in.base_stride, in.nb - from, in.dim, row_bytes, 1.f,
               rows + cache.rows * row_bytes, s);
    cache.rows = end;
  }
  return rows + in.base_row0 * row_bytes;
}

/// int_norms: in.nb entries for the lean walk's integer norms (KernelArgs::int_norms), where it reads them.
template <Elem E>
void convert_and_launch(const DistanceInput& in, KernelArgs args, int row_bytes, int64_t splits, bool kept,
                        void* q_ops, void* b_ops, int* int_norms, int device, cudaStream_t s) {
  const bool l2 = in.metric == Metric::SquaredL2;
  // f16 queries carry the factor (-2 q or -q: exact, even integers up to 4096 are fp16 values); 8-bit operands
  // cannot, so their keys apply it to the exact s32 dot product. The base's operands carry none (so a kept copy
  // serves both metrics).
  const float factor = l2 ? -2.f : -1.f;
  const Shape shape = shape_for(in.nq, row_bytes, false, args.lean);  // the block shape launched below
  const int bm = shape_rows(shape);
  const int zero_count = args.arrivals ? static_cast<int>((in.nq + bm - 1) / bm) : 0;  // a counter per query tile
  // The lean walk's 8-bit kernels read squared L2's norms as integers: converted here, with the queries.
  const bool convert_norms = args.lean && E != Elem::F16 && args.norms;
  GKNN_EXPECT(!convert_norms || int_norms, ErrorCode::Internal, "fused kernel: no room for the integer norms");
  args.int_norms = convert_norms ? int_norms : nullptr;
  convert<E>(in.queries, in.query_stride, in.nq, in.dim, row_bytes, E == Elem::F16 ? factor : 1.f, q_ops, s,
             args.arrivals, zero_count, convert_norms ? args.norms : nullptr, convert_norms ? int_norms : nullptr,
             convert_norms ? in.nb : 0);
  args.queries = static_cast<const unsigned char*>(q_ops);
  args.base = base_operands<E>(in, row_bytes, kept, b_ops, s);
  args.scale = E == Elem::F16 ? 1.f : factor;
  with_block(shape, [&](auto block) { launch_for_rows<E, decltype(block)>(args, row_bytes, splits, device, s); });
}

/// The scratch of a large-k search (large_k.cuh), carved from one block in this order; `at` null only sizes it.
struct LargeKScratch {
  unsigned char *queries, *compact_queries, *base, *sample;
  float *sample_norms, *sample_keys;
  int64_t* sample_labels;
  uint64_t *thresholds, *next, *candidates;
  unsigned *counts, *failed_count;
  int* failed[2];
  size_t bytes = 0;

  LargeKScratch(unsigned char* at, int64_t nq, int64_t nb, int64_t sample_rows, int row_bytes, bool kept) {
    auto take = [&](size_t n) {
      unsigned char* p = at ? at + bytes : nullptr;
      bytes += aligned(n);
      return p;
    };
    const size_t q = static_cast<size_t>(nq);
    queries = take(q * row_bytes);
    compact_queries = take(q * row_bytes);
    base = kept ? nullptr : take(static_cast<size_t>(nb) * row_bytes);
    sample = take(static_cast<size_t>(sample_rows) * row_bytes);
    sample_norms = reinterpret_cast<float*>(take(static_cast<size_t>(sample_rows) * 4));
    sample_keys = reinterpret_cast<float*>(take(sample_rows ? q * fused_large_k::kSampleK * 4 : 0));
    sample_labels = reinterpret_cast<int64_t*>(take(sample_rows ? q * fused_large_k::kSampleK * 8 : 0));
    thresholds = reinterpret_cast<uint64_t*>(take(q * 8));
    next = reinterpret_cast<uint64_t*>(take(q * 8));
    candidates = reinterpret_cast<uint64_t*>(take(q * fused_large_k::kCandidateCap * 8));
    counts = reinterpret_cast<unsigned*>(take(q * 4));
    failed[0] = reinterpret_cast<int*>(take(q * 4));
    failed[1] = reinterpret_cast<int*>(take(q * 4));
    failed_count = reinterpret_cast<unsigned*>(take(4));
  }
};

/// The sample's spacing for k: its kSampleK-th key then has rank ~ 2 k in the whole base (large_k.cuh).
int64_t sample_spacing(int64_t k) { return std::max<int64_t>(1, 2 * k / fused_large_k::kSampleK); }
/// Rows of the strided sample, or 0 where the base is small enough to take whole (or too small to sample).
int64_t sample_rows_for(int64_t nb, int64_t k) {
  const int64_t m = sample_spacing(k), rows = (nb + m - 1) / m;
  return nb > fused_large_k::kCandidateCap && rows >= fused_large_k::kSampleK ? rows : 0;
}

template <class S>
void launch_any(Elem e, const KernelArgs& args, int row_bytes, int64_t splits, bool filter, int device,
                cudaStream_t s) {
  switch (e) {
    case Elem::U8: return filter ? launch_for_rows<Elem::U8, S, true>(args, row_bytes, splits, device, s)
                                 : launch_for_rows<Elem::U8, S>(args, row_bytes, splits, device, s);
    case Elem::S8: return filter ? launch_for_rows<Elem::S8, S, true>(args, row_bytes, splits, device, s)
                                 : launch_for_rows<Elem::S8, S>(args, row_bytes, splits, device, s);
    case Elem::F16: return filter ? launch_for_rows<Elem::F16, S, true>(args, row_bytes, splits, device, s)
                                  : launch_for_rows<Elem::F16, S>(args, row_bytes, splits, device, s);
  }
}
/// One launch over args.nq query rows, the block shape by their number; splits: 1, or the planned count.
void launch_rows(Elem e, const KernelArgs& args, int row_bytes, bool filter, bool split, const DistanceContext& ctx) {
  const Shape shape = shape_for(args.nq, row_bytes, filter, args.lean);
  const int64_t splits = !split ? 1 : shape_split_count(shape, args.nq, args.nb, args.k, ctx.device);
  KernelArgs a = args;
  a.split_rows = (a.nb + splits - 1) / splits;
  with_block(shape, [&](auto block) {
    launch_any<decltype(block)>(e, a, row_bytes, splits, filter, ctx.device, ctx.stream);
  });
}

template <Elem E>
void convert_queries(const DistanceInput& in, int row_bytes, void* dst, cudaStream_t s) {
  const float factor = in.metric == Metric::SquaredL2 ? -2.f : -1.f;
  convert<E>(in.queries, in.query_stride, in.nq, in.dim, row_bytes, E == Elem::F16 ? factor : 1.f, dst, s);
}

/// The queries converted into `queries` and the base tile's operands (base_operands: the kept copy, or converted
/// into `base_scratch`), for the walks that take their operands outside convert_and_launch.
const unsigned char* query_and_base_operands(Elem elem, const DistanceInput& in, int row_bytes, bool kept,
                                             void* queries, void* base_scratch, cudaStream_t s) {
  switch (elem) {
    case Elem::U8:
      convert_queries<Elem::U8>(in, row_bytes, queries, s);
      return base_operands<Elem::U8>(in, row_bytes, kept, base_scratch, s);
    case Elem::S8:
      convert_queries<Elem::S8>(in, row_bytes, queries, s);
      return base_operands<Elem::S8>(in, row_bytes, kept, base_scratch, s);
    case Elem::F16:
      convert_queries<Elem::F16>(in, row_bytes, queries, s);
      return base_operands<Elem::F16>(in, row_bytes, kept, base_scratch, s);
  }
  return nullptr;
}

/// k > kMaxFusedK: the filter rounds of fused/large_k.cuh, every query's k best straight into the target.
void search_large_k(const DistanceInput& in, int64_t k, const FusedTarget& target, const DistanceContext& ctx,
                    Elem elem, int row_bytes, bool kept) {
  namespace lk = fused_large_k;
  const cudaStream_t s = ctx.stream;
  const bool l2 = in.metric == Metric::SquaredL2;
  const int64_t sample_rows = sample_rows_for(in.nb, k);
  LargeKScratch probe(nullptr, in.nq, in.nb, sample_rows, row_bytes, kept);
  const LargeKScratch sc(static_cast<unsigned char*>(ctx.workspace.get(probe.bytes)), in.nq, in.nb, sample_rows,
                         row_bytes, kept);
  const unsigned char* base = query_and_base_operands(elem, in, row_bytes, kept, sc.queries, sc.base, s);
  KernelArgs args{};
  args.one_barrier = fused_one_barrier();
  args.early_cut = fused_early_cut();  // the sample's lists (filter rounds ignore it)
  args.scale = elem == Elem::F16 ? 1.f : (l2 ? -2.f : -1.f);  // as convert_and_launch: f16 queries carry it
  args.nq = static_cast<int>(in.nq);
  if (sample_rows > 0) {  // the first thresholds: each query's kSampleK-th key against every m-th base row
    lk::gather_sample(base, l2 ? in.base_norms : nullptr, row_bytes, sample_spacing(k), sample_rows, sc.sample,
                      sc.sample_norms, s);
    KernelArgs a = args;
    a.queries = sc.queries;
    a.base = sc.sample;
    a.norms = l2 ? sc.sample_norms : nullptr;
    a.nb = sample_rows;
    a.k = lk::kSampleK;
    a.out_keys = sc.sample_keys;
    a.out_labels = sc.sample_labels;
    a.out_stride = a.split_step = lk::kSampleK;
    a.rank_step = 1;
    launch_rows(elem, a, row_bytes, false, false, ctx);
    lk::thresholds_from_sample(sc.sample_keys, lk::kSampleK, in.nq, lk::kSampleK - 1, sc.thresholds, s);
  } else {
    GKNN_CUDA_TRY(cudaMemsetAsync(sc.thresholds, 0xFF, static_cast<size_t>(in.nq) * 8, s));  // kTakeAll
  }
  KernelArgs f = args;
  f.queries = sc.queries;
  f.base = base;
  f.norms = l2 ? in.base_norms : nullptr;
  f.nb = in.nb;
  f.k = static_cast<int>(k);
  f.filter = sc.thresholds;
  f.cand = sc.candidates;
  f.cand_count = sc.counts;
  f.cand_cap = lk::kCandidateCap;
  const int* rows = nullptr;  // round 0: every query, in order
  for (int round = 0; f.nq > 0; ++round) {
    GKNN_CUDA_TRY(cudaMemsetAsync(sc.counts, 0, static_cast<size_t>(f.nq) * 4, s));
    GKNN_CUDA_TRY(cudaMemsetAsync(sc.failed_count, 0, 4, s));
    launch_rows(elem, f, row_bytes, true, true, ctx);
    int* failed = sc.failed[round % 2];
    lk::settle_candidates(sc.candidates, sc.counts, f.nq, static_cast<int>(k), rows, target.keys, target.labels,
                          target.stride, target.label_offset, sc.next, failed, sc.failed_count, s);
    unsigned failed_n = 0;
    GKNN_CUDA_TRY(cudaMemcpyAsync(&failed_n, sc.failed_count, 4, cudaMemcpyDeviceToHost, s));
    GKNN_CUDA_TRY(cudaStreamSynchronize(s));
    if (failed_n > 0)
      lk::gather_failed(sc.queries, row_bytes, sc.next, failed, failed_n, sc.compact_queries, sc.thresholds, s);
    f.queries = sc.compact_queries;
    f.nq = static_cast<int>(failed_n);
    rows = failed;
  }
}

}  // namespace

size_t fused_operand_bytes(int64_t rows, int64_t dim, const DataFacts& facts) {
  const int row_bytes = fused_exact_on(facts) ? row_bytes_for(dim, element_for(facts)) : 0;
  return static_cast<size_t>(rows) * static_cast<size_t>(row_bytes);
}

bool fused_serves(int64_t k, int64_t dim, const DataFacts& facts) {
  return k >= 1 && k <= fused_large_k::kLargeMaxK && fp16_exact(facts) && row_bytes_for(dim, element_for(facts)) > 0;
}

namespace {

/// The few-query walk (scan.cuh) where it serves: at most fused_scan::kMaxQueries queries, 8-bit operands, k in the
/// lists' range. GKNN_FUSED_SCAN=0 runs the tensor-core walk there instead, to measure the two against each other
/// (results are identical either way).
bool fused_scan_serves(int64_t nq, Elem elem, int64_t k) {
  static const bool off = detail::env_switch_off("GKNN_FUSED_SCAN");
  return !off && nq <= fused_scan::kMaxQueries && elem != Elem::F16 && k <= fused_scan::kMaxK;
}

/// The search of fused_search by the few-query walk: the operands as the tensor-core walk takes them (the kept copy
/// where it serves), one block a split, the splits' lists merged by a kernel after it (FusedTarget::merge_splits
/// off: left to the pipeline's selection; one split: the list).
FusedResult scan_search(const DistanceInput& in, int64_t k, const FusedTarget& target, const DistanceContext& ctx,
                        Elem elem, int row_bytes, bool kept) {
  const int64_t forced = forced_split_count();  // GKNN_FUSED_SPLITS, to measure the split count
  const int64_t splits = forced > 0 ? std::clamp<int64_t>(forced, 1, std::max<int64_t>(1, in.nb / k))
                                    : fused_scan::split_count(in.nb, k, device_props(ctx.device).sm_count);
  const size_t q_bytes = aligned(static_cast<size_t>(in.nq) * row_bytes);
  const size_t b_bytes = kept ? 0 : aligned(static_cast<size_t>(in.nb) * row_bytes);
  const bool merge = splits > 1 && target.merge_splits && splits <= fused_scan::kMaxMergedSplits;
  const size_t entries = splits > 1 ? static_cast<size_t>(in.nq * splits * k) : 0;
  // Merged: the lists' composite words where the labels would be.
  const size_t label_bytes = aligned(entries * sizeof(int64_t));
  auto* scratch = static_cast<unsigned char*>(
      ctx.workspace.get(q_bytes + b_bytes + label_bytes + aligned(entries * sizeof(float))));
  fused_scan::ScanArgs a;
  a.queries = scratch;
  a.base = query_and_base_operands(elem, in, row_bytes, kept, scratch, scratch + q_bytes, ctx.stream);
  a.norms = in.metric == Metric::SquaredL2 ? in.base_norms : nullptr;
  a.nq = static_cast<int>(in.nq);
  a.nb = in.nb;
  a.row_bytes = row_bytes;
  a.is_signed = elem == Elem::S8;
  a.k = static_cast<int>(k);
  a.split_rows = (in.nb + splits - 1) / splits;
  a.label_offset = target.label_offset;
  FusedResult result;
  if (splits == 1 || merge) {  // the one list, sorted, or the merged lists: straight into the destination
    if (merge) a.lists = reinterpret_cast<uint64_t*>(scratch + q_bytes + b_bytes);
    a.out_keys = target.keys;
    a.out_labels = target.labels;
    a.out_stride = target.stride;
  } else {
    a.out_labels = reinterpret_cast<int64_t*>(scratch + q_bytes + b_bytes);
    a.out_keys = reinterpret_cast<float*>(scratch + q_bytes + b_bytes + label_bytes);
    a.out_stride = splits * k;
    result = FusedResult{false, a.out_keys, a.out_labels, splits * k, splits * k};
  }
  fused_scan::launch(a, splits, ctx.stream);
  return result;
}

}  // namespace

FusedResult fused_search(const DistanceInput& in, const DataFacts& facts, int64_t k, const FusedTarget& target,
                         const DistanceContext& ctx) {
  const bool l2 = in.metric == Metric::SquaredL2;
  GKNN_EXPECT(l2 || in.metric == Metric::InnerProduct, ErrorCode::Internal, "fused kernel called with metric ",
              to_string(in.metric));
  GKNN_EXPECT(fused_serves(k, in.dim, facts) && k <= in.nb && in.nq <= INT32_MAX && in.nb < (int64_t(1) << 32),
              ErrorCode::Internal, "fused kernel called outside its range (k = ", k, ", d = ", in.dim, ")");
  GKNN_EXPECT(!l2 || in.base_norms, ErrorCode::Internal, "fused kernel: base norms not provided");
  const Elem elem = element_for(facts);
  const int row_bytes = row_bytes_for(in.dim, elem);
  const bool lean = fused_lean();
  // The block shape convert_and_launch() takes (a large k's rounds plan their own in launch_rows).
  const int64_t splits = shape_split_count(shape_for(in.nq, row_bytes, false, lean), in.nq, in.nb, k, ctx.device);

  const size_t q_bytes = aligned(static_cast<size_t>(in.nq) * row_bytes);
  // The kept operand copy of the base serves the tile when its converted rows reach the tile (base tiles come in
  // order, so it grows as a prefix); a copy of another layout (other data: 8-bit then f16, say) starts again.
  OperandCache* cache = in.base_cache;
  const int layout = static_cast<int>(elem) * 1024 + row_bytes;
  if (cache && cache->layout != layout) {
    cache->layout = layout;
    cache->rows = 0;
  }
  const bool kept = cache && cache->rows >= in.base_row0;
  if (k > kMaxFusedK) {
    search_large_k(in, k, target, ctx, elem, row_bytes, kept);
    return FusedResult{};
  }
  if (fused_scan_serves(in.nq, elem, k)) return scan_search(in, k, target, ctx, elem, row_bytes, kept);
  const size_t b_bytes = kept ? 0 : aligned(static_cast<size_t>(in.nb) * row_bytes);
  // The splits' lists (keys and labels) live in the scratch too: the pipeline sizes no key matrix for a search
  // this kernel serves (fused_workspace bounds them).
  const size_t partial = splits > 1 ? static_cast<size_t>(in.nq * splits * k) : 0;
  const size_t label_bytes = aligned(partial * sizeof(int64_t));
  // Few queries: the last block of the query tile merges the splits' lists (composite keys where the labels
  // would be, then one arrival counter), which saves the selection's launches and most of its time.
  // Few splits (any number of queries): the last block of each query tile merges them pairwise.
  const bool merge = splits > 1 && target.merge_splits &&
                     (splits <= kFewSplits || (in.nq <= kMergeMaxRows && splits <= kMaxMergeSplits));
  const size_t key_bytes = aligned(partial * sizeof(float));
  // The lean walk's integer norms (squared L2 on 8-bit operands), after the splits' keys.
  const size_t int_norm_bytes = lean && l2 && elem != Elem::F16 ? aligned(static_cast<size_t>(in.nb) * sizeof(int)) : 0;
  // The splits' shared thresholds (KernelArgs::shared_tau) last: a word per query.
  const size_t tau_bytes = splits > 1 && fused_shared_threshold() ? aligned(static_cast<size_t>(in.nq) * sizeof(unsigned)) : 0;
  const size_t tau_at = q_bytes + b_bytes + label_bytes + key_bytes + int_norm_bytes;
  auto* scratch = static_cast<unsigned char*>(ctx.workspace.get(tau_at + tau_bytes));
  int* int_norms = int_norm_bytes ? reinterpret_cast<int*>(scratch + q_bytes + b_bytes + label_bytes + key_bytes) : nullptr;

  KernelArgs args{};
  args.one_barrier = fused_one_barrier();
  args.early_cut = fused_early_cut();
  args.lean = lean;
  if (tau_bytes) {
    args.shared_tau = reinterpret_cast<unsigned*>(scratch + tau_at);
    GKNN_CUDA_TRY(cudaMemsetAsync(args.shared_tau, 0, static_cast<size_t>(in.nq) * sizeof(unsigned), ctx.stream));
  }
  args.norms = l2 ? in.base_norms : nullptr;
  args.nq = static_cast<int>(in.nq);
  args.nb = in.nb;
  args.k = static_cast<int>(k);
  args.split_rows = (in.nb + splits - 1) / splits;
  args.label_offset = target.label_offset;
  FusedResult result;
  if (splits == 1 || merge) {  // one list per query: straight into the destination
    if (merge) {
      args.lists = reinterpret_cast<uint64_t*>(scratch + q_bytes + b_bytes);
      args.arrivals = reinterpret_cast<unsigned*>(scratch + q_bytes + b_bytes + label_bytes);  // where keys would be
    }
    args.out_keys = target.keys;
    args.out_labels = target.labels;
    args.out_stride = target.stride;
    args.split_step = k;
    args.rank_step = 1;
    result.direct = true;
  } else {
    args.out_keys = reinterpret_cast<float*>(scratch + q_bytes + b_bytes + label_bytes);
    args.out_labels = reinterpret_cast<int64_t*>(scratch + q_bytes + b_bytes);
    args.out_stride = splits * k;
    args.split_step = 1;  // interleaved by rank (KernelArgs)
    args.rank_step = splits;
    result = FusedResult{false, args.out_keys, args.out_labels, splits * k, splits * k};
  }
  void* q_ops = scratch;
  void* b_ops = scratch + q_bytes;
  const int d = ctx.device;
  const cudaStream_t s = ctx.stream;
  switch (elem) {
    case Elem::U8: convert_and_launch<Elem::U8>(in, args, row_bytes, splits, kept, q_ops, b_ops, int_norms, d, s); break;
    case Elem::S8: convert_and_launch<Elem::S8>(in, args, row_bytes, splits, kept, q_ops, b_ops, int_norms, d, s); break;
    case Elem::F16: convert_and_launch<Elem::F16>(in, args, row_bytes, splits, kept, q_ops, b_ops, int_norms, d, s); break;
  }
  return result;
}

// Outside the fused range the entry is the two-stage fp16 path: fp16_mma's GEMM keys, then a selection.
void fused_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  gemm_keys(in, out, ctx, GemmPrecision::Fp16);
}

size_t fused_workspace(int64_t nq, int64_t nb, int64_t dim) {
  // Operands (at most 256 bytes a row) and the splits' lists (labels and keys). split_count() gives nq x splits
  // <= bm x (query tiles + kWavesPerSplitPlan x blocks per SM x SMs) for the block shape of nq (bm queries a
  // block), and splits x k <= nb; the device is not known here, so 160 SMs bound every Hopper part.
  constexpr int64_t kMaxSms = 160;
  // (The bound of the shape nq takes; the medium block's equals the wide block's: half the rows, twice the blocks.)
  const Shape shape = nq <= NarrowBlock::kBM ? Shape::Narrow : Shape::Wide;
  static_assert(MediumBlock::kBM * MediumBlock::kBlocksPerSm == WideBlock::kBM * WideBlock::kBlocksPerSm);
  const int64_t bm = shape_rows(shape), per_sm = shape_blocks_per_sm(shape);
  const int64_t qtiles = (nq + bm - 1) / bm;
  const size_t entries = std::min(static_cast<size_t>(bm) * (kWavesPerSplitPlan * per_sm * kMaxSms + qtiles) * kMaxFusedK,
                                  static_cast<size_t>(nq) * static_cast<size_t>(nb));
  // (A merge in the kernel keeps a counter per query tile where the keys would be: fewer than the entries.) The
  // lean walk's integer norms, then the splits' shared thresholds (a word per query) come last.
  const size_t fused = aligned(static_cast<size_t>(nq) * kMaxRowBytes) + aligned(static_cast<size_t>(nb) * kMaxRowBytes) +
                       aligned(entries * sizeof(int64_t)) + aligned(entries * sizeof(float)) +
                       aligned(static_cast<size_t>(nb) * sizeof(int)) + aligned(static_cast<size_t>(nq) * sizeof(unsigned));
  // k > kMaxFusedK: the filter rounds' scratch (the largest sample is the smallest k's).
  const size_t large = LargeKScratch(nullptr, nq, nb, sample_rows_for(nb, kMaxFusedK + 1), kMaxRowBytes, false).bytes;
  return std::max({fused, large, gemm_keys_workspace(nq, nb, dim, GemmPrecision::Fp16)});
}

bool fused_exact_on(const DataFacts& facts) { return fp16_exact(facts); }

}  // namespace gknn::detail::cuda
