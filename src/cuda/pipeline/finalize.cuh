// finalize.cuh: a search's top-k lists turned into the user's result on the device, so the host does no
// per-entry pass: key -> value in the user's metric, the query-norm term a distance kernel left out, ties
// re-ordered by index where the conversion made distinct keys equal, k > n padding, user ids.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "gknn/types.hpp"

namespace gknn::detail::cuda {

struct FinalizeArgs {
  const float* keys = nullptr;     ///< rows x kept ascending keys, in_stride apart
  const int64_t* labels = nullptr;
  int64_t in_stride = 0;
  int64_t kept = 0;                ///< valid entries per row (the key k, <= k)
  int64_t rows = 0;
  const float* row_offsets = nullptr;  ///< added to every key of a row (|q|^2 of squared L2), then clamped at 0
  Metric metric = Metric::SquaredL2;   ///< the user's metric
  float p = 2.f;
  int64_t k = 0;                   ///< the user's k: entries kept..k-1 are padding
  float* values = nullptr;         ///< rows x k, contiguous
  int64_t* indices = nullptr;
  const int64_t* ids = nullptr;    ///< device map index -> user id, or null
};

void finalize_rows(const FinalizeArgs& args, cudaStream_t stream);

/// The arguments for `rows` ascending lists of k entries each (keys and labels k apart, all kept) written into
/// `values`/`indices` in the user's metric and k; the caller adds row offsets and ids where it has them.
inline FinalizeArgs finalize_args(const float* keys, const int64_t* labels, int64_t k, int64_t rows, Metric metric,
                                  double p, int64_t out_k, float* values, int64_t* indices) {
  FinalizeArgs a;
  a.keys = keys;
  a.labels = labels;
  a.in_stride = k;
  a.kept = k;
  a.rows = rows;
  a.metric = metric;
  a.p = static_cast<float>(p);
  a.k = out_k;
  a.values = values;
  a.indices = indices;
  return a;
}

}  // namespace gknn::detail::cuda
