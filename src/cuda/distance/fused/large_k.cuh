// large_k.cuh: the fused kernel beyond the k its shared-memory lists hold (k > 128): a threshold filter.
//
// The fused kernel keeps each query's k best in shared memory, which bounds k. For larger k (up to kLargeMaxK) a
// search runs in rounds of the same kernel in its filter mode (fused.cu), which keeps no list: every key at or below
// the query's threshold (a composite (ordered key, column) word, inclusive) goes to the query's candidate list in
// device memory (at most kCandidateCap entries; the count goes on past the cap). Then one block per query
// (settle_candidates) takes a list of k <= count <= cap whole: it sorts it and writes the k best, exact in the
// library's order since every entry at or below the k-th is in the list. A query outside that range fails and
// goes to the next round with a new threshold:
//   * count < k: the threshold was too low; the next one takes every key (~0);
//   * count > cap: the k-th of the cap entries it holds (real keys, all at or below the old threshold), strictly
//     below the old threshold and still at or above the true k-th: at least cap - k entries fewer each round.
// So the rounds end on any data (all-equal rows: a few rounds of the second kind). The first round's thresholds
// come from a strided sample of the base (every m-th row): the kernel's top-kSampleK list of each query against
// the sample; its last key has rank ~ kSampleK m in the whole base, which the sample's spacing m puts near 2 k
// (relative spread ~ 1/sqrt(kSampleK)), far inside [k, cap].
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace gknn::detail::cuda::fused_large_k {

constexpr int kLargeMaxK = 1024;
constexpr int64_t kCandidateCap = 4096;  ///< a query's candidate list; >= 4 kLargeMaxK (the sample aims at 2 k)
constexpr int kSampleK = 64;             ///< the sample's list length: its last key is the first threshold
constexpr uint64_t kTakeAll = ~uint64_t(0);

/// Every m-th row of the base's operands (and squared norms; null for inner product) into `rows` sample rows.
void gather_sample(const unsigned char* base, const float* norms, int row_bytes, int64_t m, int64_t rows,
                   unsigned char* out, float* out_norms, cudaStream_t s);

/// thresholds[q] = (the ordered last key of row q of the sample's sorted lists, every column): inclusive.
void thresholds_from_sample(const float* sample_keys, int64_t stride, int64_t nq, int last, uint64_t* thresholds,
                            cudaStream_t s);

/// One query (block) per candidate list of this round: `rows` maps a list to its query (null: list i is query i).
/// Lists of k <= count <= cap are sorted and their k best written to out (row q: keys, labels = label_offset +
/// column); other queries get their next threshold (next[q]) and are appended to failed[0, *failed_count).
void settle_candidates(const uint64_t* candidates, const unsigned* counts, int64_t lists, int k, const int* rows,
                       float* out_keys, int64_t* out_labels, int64_t out_stride, int64_t label_offset,
                       uint64_t* next, int* failed, unsigned* failed_count, cudaStream_t s);

/// The failed queries' operand rows and thresholds, compacted for the next round: out row i = row failed[i].
void gather_failed(const unsigned char* queries, int row_bytes, const uint64_t* next, const int* failed, int64_t n,
                   unsigned char* out, uint64_t* out_thresholds, cudaStream_t s);

}  // namespace gknn::detail::cuda::fused_large_k
