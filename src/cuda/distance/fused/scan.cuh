// scan.cuh: the fused entry's walk for a few queries (at most kMaxQueries) on 8-bit operands: no tensor cores.
//
// With one query the fused kernel's tiles use one row of every 16-row MMA fragment and spend their time in the walk
// around it (H200, 1M x 128 uint8, k = 100: 127 us a search, ~4x the 30 us its 128 MB need; ncu on the H100: 24%
// occupancy, latency-bound). Here every thread takes whole base rows: 16-byte loads of its row, the exact integer
// dot products with each query by dp4a (u8 x u8 or s8 x s8 -> s32), and the key in the fused kernel's form
// (squared L2: |x|^2 - 2 q.x, the finaliser adding |q|^2; inner product: -q.x), exact as an int and as a float
// (|key| <= max(|x|^2, |q|^2) < 2^24 where fp16_exact holds, the fused entry's range). Each block owns one split of
// the base and keeps each query's best entries as composite words (ordered key above the row), so that ties rank by
// the smaller row: a key below the query's threshold (the k-th word kept so far) is appended to its buffer in
// shared memory, and a buffer that the next chunk could overflow is sorted and cut to k (the new threshold). At the
// end each split's k best, sorted, go to the splits' lists, which a kernel after the walk merges (merge.cuh, a block
// a query) into the output; or, without ScanArgs::lists, the splits' lists (+inf and label -1 past a split shorter
// than k) go to the output, of which the pipeline selects the k best (ties by label). Either way the result is
// exact in the library's order.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace gknn::detail::cuda::fused_scan {

constexpr int kMaxQueries = 4;

struct ScanArgs {
  const unsigned char* queries = nullptr;  ///< nq x row_bytes operand rows (8-bit values, zero padded)
  const unsigned char* base = nullptr;     ///< nb x row_bytes operand rows of the tile
  const float* norms = nullptr;            ///< squared L2: the tile rows' squared norms (integers); null: inner product
  int nq = 0;
  int64_t nb = 0;
  int row_bytes = 0;  ///< 32, 64, 128 or 256
  bool is_signed = false;  ///< s8 operands (else u8)
  int k = 0;               ///< <= kMaxK
  int64_t split_rows = 0;  ///< base rows per block (the last one may hold fewer)
  int64_t label_offset = 0;
  /// With lists: query r's merged k at r * out_stride; without: its split s's k sorted entries at
  /// r * out_stride + s * k.
  float* out_keys = nullptr;
  int64_t* out_labels = nullptr;
  int64_t out_stride = 0;
  /// Null, or nq x splits x k composite words (the splits' lists) that the merge after the walk reads.
  uint64_t* lists = nullptr;
};

constexpr int kMaxK = 128;
/// The most splits whose lists the kernel merges (merge.cuh's bound).
constexpr int kMaxMergedSplits = 1024;

/// Splits of nb rows for this device: two blocks an SM (one wave), each >= 2048 rows.
int64_t split_count(int64_t nb, int64_t k, int sms);

/// One block per split: the k best of every query in every split (ScanArgs); with lists, then their merge.
void launch(const ScanArgs& a, int64_t splits, cudaStream_t s);

}  // namespace gknn::detail::cuda::fused_scan
