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

//  algorithm, metrics, needs norms, omits |q|^2, run, workspace, exact only on
const DistanceEntry kDistanceEntries[] = {
    {DistanceAlgorithm::Naive, any_key_metric, false, false, naive_distance, nullptr, nullptr},
    {DistanceAlgorithm::SharedReduce, any_key_metric, false, false, shared_reduce_distance, nullptr, nullptr},
    {DistanceAlgorithm::Atomic, any_key_metric, false, false, atomic_distance, nullptr, nullptr},
    {DistanceAlgorithm::GarciaGlobal, any_key_metric, false, false, garcia_global_distance, nullptr, nullptr},
    {DistanceAlgorithm::GarciaTexture, any_key_metric, false, false, garcia_texture_distance, nullptr, nullptr},
    {DistanceAlgorithm::Cublas, gemm_metric, true, true, cublas_distance, cublas_workspace, nullptr},
    {DistanceAlgorithm::Fp16Mma, gemm_metric, true, true, fp16_mma_distance, fp16_mma_workspace, fp16_mma_exact_on},
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

// Auto: for the dot-product metrics once dim is large enough for a GEMM to pay off, the fp16 tensor-core GEMM
// where it is proven exact on the data (integers in its range; 4-7x the fp32 SGEMM's rate), else cuBLAS SGEMM;
// otherwise the tiled shared-memory kernel, which reuses every loaded component 16 times.
DistanceAlgorithm choose_distance(Metric key_metric, int64_t /*nq*/, int64_t /*nb*/, const DataFacts& facts) {
  if (!gemm_metric(key_metric) || facts.dim < kGemmMinDim) return DistanceAlgorithm::GarciaGlobal;
  return fp16_mma_exact_on(facts) ? DistanceAlgorithm::Fp16Mma : DistanceAlgorithm::Cublas;
}

const DistanceEntry& resolve_distance(DistanceAlgorithm requested, Metric key_metric, int64_t nq, int64_t nb,
                                      const DataFacts& facts) {
  const DistanceAlgorithm a =
      requested == DistanceAlgorithm::Auto ? choose_distance(key_metric, nq, nb, facts) : requested;
  const DistanceEntry* e = find_distance(a);
  GKNN_EXPECT(e != nullptr, ErrorCode::Unsupported, "distance algorithm ", to_string(a),
              " is not available on the cuda backend");
  GKNN_EXPECT(e->supports(key_metric), ErrorCode::Unsupported, "distance algorithm ", to_string(a),
              " does not support metric ", to_string(key_metric), " on the cuda backend");
  GKNN_EXPECT(!e->exact_on || e->exact_on(facts), ErrorCode::Unsupported, "distance algorithm ", to_string(a),
              " computes exactly only on integer data with |x| <= 2048 whose partial sums stay below 2^24 "
              "(2 d max|x|^2 < 2^24 for non-negative data, 4 d max|x|^2 otherwise); these data are not (max |x| = ",
              facts.values.max_abs, ", dimension ", facts.dim, ", integers: ", facts.values.integral ? "yes" : "no",
              "): use cublas");
  return *e;
}

}  // namespace gknn::cuda_detail
