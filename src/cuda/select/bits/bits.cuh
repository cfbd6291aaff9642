// bits.cuh: the host-side interface of the buffered bitonic select kernels (bits and bits_global).
//
// One launch selects, for every launched "block row", the k smallest of a segment of an input row. A block
// row is (row, part): with parts > 1 each row is split into `parts` segments of `seg` keys (the single-query
// path, thesis 4.1 / 5.4.2); the per-segment results are written as partial rows and merged by a further
// launch over them (explicit indices). Without explicit indices the index of a key is its int32 column;
// with them it is whatever the index array holds (int32 columns of a previous pass, or int64 labels).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/select/buckets.hpp"
#include "cuda/select/select.cuh"

namespace gknn::detail::cuda {

struct BitsLaunch {
  bool idx64 = false;            ///< indices are int64 labels (else int32 columns)
  const float* keys = nullptr;
  const void* idx = nullptr;     ///< explicit indices, same stride as keys; nullptr: the column (int32 only)
  int64_t stride = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t seg = 0;               ///< segment length (== cols when parts == 1)
  int parts = 1;
  int k = 1;
  // Output row b = row * parts + part. Final pass: out_labels (int64, label_offset added to int32 columns);
  // partial pass: out_idx (the index type itself, unconverted).
  float* out_keys = nullptr;
  int64_t* out_labels = nullptr;
  void* out_idx = nullptr;
  int64_t out_stride = 0;
  int64_t label_offset = 0;
  // bits_global: home of every block row's top-k (rows*parts*bucket pairs).
  float* global_keys = nullptr;
  void* global_idx = nullptr;
  bool prefetch = false;
  cudaStream_t stream = nullptr;
};

/// Explicitly instantiated once per bucket by the units buckets.cmake generates (bits_kNNNN.cu, bits_global_kNNNN.cu).
template <int K, bool kGlobal>
void bits_launch(const BitsLaunch& launch);

/// One member of the family (bits or bits_global): its buckets, and the launch of the bucket that serves k.
struct BitsFamily {
  const char* name;
  bool global;
  int (*bucket_for)(int64_t k);  ///< smallest bucket >= k; 0 beyond the largest
  int largest_bucket;
  void (*launch)(int64_t k, const BitsLaunch& launch);
};

/// The family member of a bucket list (tuning.hpp).
template <class Buckets, bool kGlobal>
constexpr BitsFamily make_bits_family(const char* name) {
  return {name, kGlobal, &Buckets::smallest_at_least, Buckets::largest, [](int64_t k, const BitsLaunch& l) {
            with_bucket(Buckets{}, k, kGlobal ? "bits_global" : "bits",
                        [&](auto bucket) { bits_launch<decltype(bucket)::value, kGlobal>(l); });
          }};
}

/// Shared host logic of bits and bits_global: bucket choice, single-query splitting, workspace carving.
/// SelectOptions::overrides.split_parts forces the first level's split (tests, benchmarks).
void bits_family_run(const BitsFamily& family, const SelectInput& in, int64_t k, const SelectOutput& out,
                     const SelectContext& ctx);
/// The workspace of the automatic split (a forced split may need more; the workspace then grows on demand).
size_t bits_family_workspace(const BitsFamily& family, int64_t rows, int64_t cols, int64_t k);

}  // namespace gknn::detail::cuda
