// scan.cu: see scan.cuh.
#include "cuda/distance/fused/scan.cuh"

#include <algorithm>
#include <cmath>

#include "cuda/common/error.cuh"
#include "cuda/distance/fused/merge.cuh"
#include "cuda/primitives/ordered.cuh"
#include "cuda/primitives/shared_bitonic.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda::fused_scan {
namespace {

constexpr int kThreads = 256;
/// Buffer words a query: the k kept and one chunk's appends (a row a thread), a power of two for the sort.
constexpr int kCap = 512;
static_assert(kMaxK + kThreads <= kCap, "a cut buffer takes one more chunk");
constexpr int64_t kMinSplitRows = 2048;
/// Blocks a split count aims at per SM (17 KB of shared memory a block: up to 8 fit): 2 x 256 threads with a few
/// 16-byte loads each in flight cover HBM's latency, and every split adds k entries to the merge of the splits'
/// lists (H200, 1M x 128 uint8, one query, k = 100: walk 132 / 98 / 105 us with 132 / 264 / 528 splits).
/// GKNN_FUSED_SPLITS measures others.
constexpr int kBlocksPerSm = 2;
constexpr uint64_t kNoWord = ~uint64_t(0);

/// The composite word of a key of tile row `row` (< 2^32): the key's ordered bits above the row, so that words
/// order as (key, row) and ties rank by the smaller row.
__device__ __forceinline__ uint64_t composite(int key, int64_t row) {
  return (uint64_t(ordered_key(static_cast<float>(key))) << 32) | static_cast<uint32_t>(row);
}

template <bool kSigned>
__device__ __forceinline__ int dot4(uint32_t a, uint32_t b, int acc) {
  if constexpr (kSigned) return __dp4a(static_cast<int>(a), static_cast<int>(b), acc);
  else return static_cast<int>(__dp4a(a, b, static_cast<unsigned>(acc)));
}

struct Lists {
  uint64_t buf[kMaxQueries][kCap];
  uint64_t tau[kMaxQueries];  ///< the k-th word kept (kNoWord while fewer than k are kept)
  int count[kMaxQueries];
};
static_assert(kMaxK <= split_merge::kMaxK && kMaxMergedSplits <= split_merge::kMaxSplits, "merge.cuh's bounds");

/// Sorts query r's buffer and keeps its k best; the whole block calls it (count read by all before the barriers).
__device__ void cut(Lists& sh, int r, int k) {
  const int n = sh.count[r];
  for (int i = n + threadIdx.x; i < kCap; i += kThreads) sh.buf[r][i] = kNoWord;
  bitonic::shared_sort<kThreads, false, uint64_t>(sh.buf[r], nullptr, kCap);  // barriers before and after
  if (threadIdx.x == 0) {
    const int kept = min(n, k);
    sh.count[r] = kept;
    sh.tau[r] = kept == k ? sh.buf[r][k - 1] : kNoWord;
  }
  __syncthreads();
}

/// Output entry `at` of a composite word (kNoWord: +inf, label -1, past a split shorter than k).
__device__ inline void write_word(const ScanArgs& a, int64_t at, uint64_t w) {
  const bool real = w != kNoWord;
  a.out_keys[at] = real ? key_from_ordered(static_cast<uint32_t>(w >> 32)) : INFINITY;
  a.out_labels[at] = real ? a.label_offset + static_cast<int64_t>(static_cast<uint32_t>(w)) : -1;
}

/// A base row's operand vectors and squared norm in registers (rows past `end`: nothing loaded, never used).
template <int kVecs>
struct RowRegs {
  uint4 v[kVecs];
  float norm;
  __device__ void load(const ScanArgs& a, int64_t row, int64_t end, int row_bytes) {
    if (row >= end) return;
    const uint4* x = reinterpret_cast<const uint4*>(a.base + row * row_bytes);
#pragma unroll
    for (int c = 0; c < kVecs; ++c) v[c] = __ldg(x + c);
    norm = a.norms ? a.norms[row] : 0.f;
  }
};

/// A thread a row: 16-byte loads of its row (lanes sharing a row by contiguous loads, their partial dot products
/// summed by shuffles, took 128 us where this walk took 108 on the H200: 1M x 128 uint8, one query, k = 100).
/// The next chunk's row is loaded after the chunk's barrier: loading it before this chunk's keys (two rows in
/// registers) made the walk ~3% slower (H200, 1M x 128 uint8, one query, k = 100: 115-118 against 112-114 us, three
/// alternating runs each, 2026-11-30).
template <bool kSigned, int kRowBytes>
__global__ void __launch_bounds__(kThreads) scan_kernel(ScanArgs a) {
  constexpr int kWords = kRowBytes / 4, kVecs = kRowBytes / 16;
  __shared__ uint32_t q_words[kMaxQueries][kWords];
  __shared__ Lists sh;
  const int nq = a.nq;
  for (int i = threadIdx.x; i < kMaxQueries * kWords; i += kThreads) {
    const int r = i / kWords, w = i % kWords;
    q_words[r][w] = r < nq ? reinterpret_cast<const uint32_t*>(a.queries + int64_t(r) * kRowBytes)[w] : 0u;
  }
  if (threadIdx.x < kMaxQueries) {
    sh.count[threadIdx.x] = 0;
    sh.tau[threadIdx.x] = kNoWord;
  }
  __syncthreads();
  const int64_t begin = int64_t(blockIdx.x) * a.split_rows, end = min(a.nb, begin + a.split_rows);
  RowRegs<kVecs> cur;
  cur.load(a, begin + threadIdx.x, end, kRowBytes);
  // The same chunks for every thread of the block.
  for (int64_t chunk = begin, row = begin + threadIdx.x; chunk < end; chunk += kThreads, row += kThreads) {
    if (row < end) {
      int dot[kMaxQueries] = {};
#pragma unroll
      for (int c = 0; c < kVecs; ++c) {
        const uint4 v = cur.v[c];
#pragma unroll
        for (int r = 0; r < kMaxQueries; ++r)
          if (r < nq) {
            const uint32_t* q = q_words[r] + 4 * c;
            dot[r] = dot4<kSigned>(v.w, q[3], dot4<kSigned>(v.z, q[2], dot4<kSigned>(v.y, q[1],
                                                                                  dot4<kSigned>(v.x, q[0], dot[r]))));
          }
      }
      const int norm = __float2int_rn(cur.norm);
#pragma unroll
      for (int r = 0; r < kMaxQueries; ++r)
        if (r < nq) {
          const uint64_t word = composite(a.norms ? norm - 2 * dot[r] : -dot[r], row);
          if (word < sh.tau[r]) sh.buf[r][atomicAdd(&sh.count[r], 1)] = word;
        }
    }
    __syncthreads();
    for (int r = 0; r < nq; ++r)
      if (sh.count[r] > kCap - kThreads) cut(sh, r, a.k);  // the next chunk could overflow it
    cur.load(a, row + kThreads, end, kRowBytes);
  }
  for (int r = 0; r < nq; ++r) {
    cut(sh, r, a.k);
    const int kept = sh.count[r];
    if (a.lists) {  // the split's k best words (kNoWord past a short split) for merge_kernel
      uint64_t* dst = a.lists + (int64_t(r) * gridDim.x + blockIdx.x) * a.k;
      for (int j = threadIdx.x; j < a.k; j += kThreads) dst[j] = j < kept ? sh.buf[r][j] : kNoWord;
    } else {
      const int64_t at = int64_t(r) * a.out_stride + int64_t(blockIdx.x) * a.k;
      for (int j = threadIdx.x; j < a.k; j += kThreads) write_word(a, at + j, j < kept ? sh.buf[r][j] : kNoWord);
    }
  }
}

/// The splits' lists merged after the walk, a block a query (H200, one query against 1M x 128 uint8, k = 100: ~10 us
/// of kernel time; the walk's last block to finish merging them, as the tensor-core walk does, took 16-24 us more
/// than the walk alone, and merges several queries one after another).
__global__ void __launch_bounds__(kThreads, 1) merge_kernel(ScanArgs a, int splits) {
  __shared__ alignas(16) unsigned char smem[split_merge::MergeShared::bytes(kThreads)];
  const auto merge = split_merge::MergeShared::at(smem);
  const int r = static_cast<int>(blockIdx.x);
  split_merge::merge_one_query<kThreads>(a.lists + int64_t(r) * splits * a.k, splits, a.k, merge);
  for (int j = threadIdx.x; j < a.k; j += kThreads) write_word(a, int64_t(r) * a.out_stride + j, merge.acc[j]);
}

template <bool kSigned, int kRowBytes>
void launch_rows(const ScanArgs& a, const dim3& grid, cudaStream_t s) {
  scan_kernel<kSigned, kRowBytes><<<grid, kThreads, 0, s>>>(a);
}

template <bool kSigned>
void launch_for(const ScanArgs& a, int64_t splits, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(splits));
  switch (a.row_bytes) {
    case 32: launch_rows<kSigned, 32>(a, grid, s); break;
    case 64: launch_rows<kSigned, 64>(a, grid, s); break;
    case 128: launch_rows<kSigned, 128>(a, grid, s); break;
    case 256: launch_rows<kSigned, 256>(a, grid, s); break;
    default: detail::fail(ErrorCode::Internal, "fused scan: operand rows of ", a.row_bytes, " bytes");
  }
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

int64_t split_count(int64_t nb, int64_t k, int sms) {
  const int64_t most = std::max<int64_t>(1, int64_t(sms) * kBlocksPerSm);
  return std::clamp<int64_t>(nb / std::max<int64_t>(k, kMinSplitRows), 1, most);
}

void launch(const ScanArgs& a, int64_t splits, cudaStream_t s) {
  GKNN_EXPECT(a.nq >= 1 && a.nq <= kMaxQueries && a.k >= 1 && a.k <= kMaxK && a.nb < (int64_t(1) << 32) &&
                  splits >= 1 && splits < (int64_t(1) << 31) && a.split_rows * splits >= a.nb &&
                  (!a.lists || splits <= kMaxMergedSplits),
              ErrorCode::Internal, "fused scan called outside its range (", a.nq, " queries, k = ", a.k, ")");
  if (a.is_signed) launch_for<true>(a, splits, s);
  else launch_for<false>(a, splits, s);
  if (a.lists) {
    merge_kernel<<<a.nq, kThreads, 0, s>>>(a, static_cast<int>(splits));
    GKNN_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace gknn::detail::cuda::fused_scan
