// registry.cu: DistanceAlgorithm -> GPU kernel, which key metrics each serves, and Auto's choice.
#include <iterator>

#include "cuda/distance/kernels.cuh"
#include "gknn/error.hpp"

namespace gknn::cuda_detail {
namespace {

bool any_key_metric(Metric m) {
  return m == Metric::SquaredL2 || m == Metric::InnerProduct || m == Metric::L1 || m == Metric::Linf ||
         m == Metric::Lp;
}
/// The GEMM decomposition exists only for the dot-product metrics.
bool gemm_metric(Metric m) { return m == Metric::SquaredL2 || m == Metric::InnerProduct; }

const DistanceEntry kDistanceEntries[] = {
    {DistanceAlgorithm::Naive, any_key_metric, false, naive_distance},
    {DistanceAlgorithm::SharedReduce, any_key_metric, false, shared_reduce_distance},
    {DistanceAlgorithm::Atomic, any_key_metric, false, atomic_distance},
    {DistanceAlgorithm::GarciaGlobal, any_key_metric, false, garcia_global_distance},
    {DistanceAlgorithm::GarciaTexture, any_key_metric, false, garcia_texture_distance},
    {DistanceAlgorithm::Cublas, gemm_metric, true, cublas_distance},
};

/// Below this dimension a GEMM has too little work per output to beat a direct kernel.
constexpr int64_t kGemmMinDim = 16;

}  // namespace

const DistanceEntry* find_distance(DistanceAlgorithm algorithm) {
  for (const DistanceEntry& e : kDistanceEntries)
    if (e.algorithm == algorithm) return &e;
  return nullptr;
}

const DistanceEntry* distance_entries_begin() { return std::begin(kDistanceEntries); }
const DistanceEntry* distance_entries_end() { return std::end(kDistanceEntries); }

// Auto: cuBLAS for the dot-product metrics once dim is large enough for a GEMM to pay off; otherwise the tiled
// shared-memory kernel, which reuses every loaded component 16 times (naive reuses only the query).
DistanceAlgorithm choose_distance(Metric key_metric, int64_t /*nq*/, int64_t /*nb*/, int64_t dim) {
  if (gemm_metric(key_metric) && dim >= kGemmMinDim) return DistanceAlgorithm::Cublas;
  return DistanceAlgorithm::GarciaGlobal;
}

const DistanceEntry& resolve_distance(DistanceAlgorithm requested, Metric key_metric, int64_t nq, int64_t nb,
                                      int64_t dim) {
  const DistanceAlgorithm a =
      requested == DistanceAlgorithm::Auto ? choose_distance(key_metric, nq, nb, dim) : requested;
  const DistanceEntry* e = find_distance(a);
  GKNN_EXPECT(e != nullptr, ErrorCode::Unsupported, "distance algorithm ", to_string(a),
              " is not available on the cuda backend");
  GKNN_EXPECT(e->supports(key_metric), ErrorCode::Unsupported, "distance algorithm ", to_string(a),
              " does not support metric ", to_string(key_metric), " on the cuda backend");
  return *e;
}

}  // namespace gknn::cuda_detail
