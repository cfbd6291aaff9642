// certify.cuh: the exactness guard's certificate taken inside a search (core/backend.hpp DeviceCertificate,
// core/rerank.hpp for the proof): one block per query re-ranks the query's K' candidates (computed keys ascending,
// as selection left them) on float64 keys of the rows where they live, sorts them in the total order, writes the
// first k and decides the certificate. Only the k entries and one flag per query leave the device, where the host
// guard downloaded K' candidates, uploaded their ids, downloaded their float64 keys and sorted them on the host.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "gknn/types.hpp"

namespace gknn::detail::cuda {

struct CertifyArgs {
  const float* queries = nullptr;  ///< rows x dim, query_stride apart
  int64_t query_stride = 0;
  int64_t rows = 0;
  int64_t dim = 0;
  const float* base = nullptr;  ///< every base row, base_stride apart
  int64_t base_stride = 0;
  int64_t base_rows = 0;
  const float* keys = nullptr;  ///< rows x candidates computed keys, ascending (-1 labels: padding)
  const int64_t* labels = nullptr;
  int64_t list_stride = 0;
  int64_t candidates = 0;             ///< K' (<= DeviceCertificate::kMaxCandidates)
  const float* row_offsets = nullptr;  ///< added to each computed key as the finaliser does (clamped at 0), or null
  Metric metric = Metric::SquaredL2;  ///< the key metric: SquaredL2 or InnerProduct
  int64_t k = 0;                      ///< entries written per row
  double input_error = 0;             ///< the distance path's KeyErrorBound
  int64_t terms = 0;
  /// Computed keys smaller than this in magnitude are taken as their float64 keys without reading the rows (exact
  /// integer keys rounded once: exact below 2^24); 0: every key computed. Only where row_offsets is null.
  double exact_below = 0;
  double max_base_norm = -1;                          ///< >= 0: used; else from *max_norm_bits
  const unsigned long long* max_norm_bits = nullptr;  ///< launch_max_square_norm's result
  float* out_keys = nullptr;  ///< rows x k: float64 keys rounded to float (+inf padding)
  int64_t* out_labels = nullptr;
  double* out_exact = nullptr;  ///< rows x k: the float64 keys themselves (+inf padding), or null
  int64_t* out_exact_rows = nullptr;  ///< with out_exact: their rows (-1 padding), in the same (float64) order
  unsigned char* certified = nullptr;  ///< per row: 1 when the certificate holds
};

void certify_rows(const CertifyArgs& args, cudaStream_t stream);

/// The bits of the largest float64 sum of squares of a row, folded into *out with atomicMax (non-negative doubles
/// order as their bits); *out starts at 0. The certificate's base norm, and cuda::max_row_norm (guard.cu).
void launch_max_square_norm(const float* rows, int64_t count, int64_t stride, int64_t dim, unsigned long long* out,
                            cudaStream_t stream);

}  // namespace gknn::detail::cuda
