// registry.cu: DistanceAlgorithm -> GPU kernel, which key metrics each serves, and Auto's choice. Each kernel
// folder holds an entries.inc with one line, GKNN_DISTANCE_ENTRY(Id, supports, needs_norms, omits_query_norm, fn,
// workspace, exact_on, fused_serves, fused): the enum value
// (gknn/algorithms.def), the key metrics it serves (a predicate of distance.cuh), whether the pipeline must
// provide squared row norms, whether its squared L2 keys leave out |q|^2, its run function, its scratch size and,
// for a lower-precision kernel, the data it is exact on, and for a fused distance+selection kernel where it
// serves and its entry point (else nullptr, nullptr). src/CMakeLists.txt gathers every distance/*/entries.inc into
// all_entries.inc, so a new folder is registered without editing a list here.
#include <iterator>

#include "cuda/distance/kernels.cuh"
#include "gknn/error.hpp"

namespace gknn::detail::cuda {
namespace {

const DistanceEntry kDistanceEntries[] = {
// One line per folder: GKNN_DISTANCE_ENTRY(Id, supports, needs_norms, omits_query_norm, fn, workspace, exact_on,
// fused_serves, fused).
#define GKNN_DISTANCE_ENTRY(id, supports, needs_norms, omits_query_norm, fn, workspace, exact_on, fused_serves, fused) \
  {DistanceAlgorithm::id, supports, needs_norms, omits_query_norm, fn, workspace, exact_on, fused_serves, fused},
#include "cuda/distance/all_entries.inc"
#undef GKNN_DISTANCE_ENTRY
};

/// Below this dimension a GEMM has too little work per output to beat a direct kernel.
constexpr int64_t kGemmMinDim = 16;
/// Below this many queries Auto prefers SGEMM to the fp16 GEMM (H100, 1M x 128 base: q = 1/16 faster in fp32).
constexpr int64_t kFp16MinQueries = 64;
/// Auto prefers the fused kernel where it serves from this many queries and query x base pairs. H100, 1M x 128
/// uint8 base, k = 100, per call: q = 1 0.42 ms fused vs 0.30 SGEMM (the fused walk converts the whole base each
/// call), q = 16 0.48 vs 0.50, q = 128 0.89 vs 1.42; 10k x 128 base, q = 100: 0.26 vs 0.11 fp16_mma (the first
/// tiles' sorts dominate a short walk); Garcia's 16k x 4096: 0.61 vs 0.75; SIFT1M shape: 15.5 vs 33.6 ms.
constexpr int64_t kFusedMinQueries = 16;
constexpr int64_t kFusedMinPairs = int64_t(1) << 23;

}  // namespace

const DistanceEntry* find_distance(DistanceAlgorithm algorithm) {
  for (const DistanceEntry& e : kDistanceEntries)
    if (e.algorithm == algorithm) return &e;
  return nullptr;
}

const DistanceEntry* distance_entries_begin() { return std::begin(kDistanceEntries); }
const DistanceEntry* distance_entries_end() { return std::end(kDistanceEntries); }

// Auto: for the dot-product metrics once dim is large enough for a GEMM to pay off, the fused distance + selection
// kernel where it serves (integer data, k <= 128: no key matrix at all), else the fp16 tensor-core GEMM
// where it is proven exact on the data (integers in its range; 4-7x the fp32 SGEMM's rate), else cuBLAS SGEMM;
// otherwise the tiled shared-memory kernel, which reuses every loaded component 16 times.
DistanceAlgorithm choose_distance(Metric key_metric, int64_t nq, int64_t nb, int64_t k, const DataFacts& facts,
                                  std::string* why) {
  const auto because = [why](DistanceAlgorithm a, const char* reason) {
    if (why) *why = std::string("auto: ") + reason;
    return a;
  };
  if (!gemm_key_metric(key_metric))
    return because(DistanceAlgorithm::GarciaGlobal, "L1/Linf/Lp keys have no GEMM form: the tiled shared-memory kernel");
  if (facts.dim < kGemmMinDim)
    return because(DistanceAlgorithm::GarciaGlobal, "d < 16: too little work per key for a GEMM to pay off");
  // The fp16 path converts the base tile every call: with few queries that copy costs more than the SGEMM reads.
  if (!fp16_mma_exact_on(facts))
    return because(DistanceAlgorithm::Cublas, "the data are not integers in fp16_mma's exact range: fp32 SGEMM");
  const DistanceEntry* fused = find_distance(DistanceAlgorithm::Fused);
  if (fused && nq >= kFusedMinQueries && nq * nb >= kFusedMinPairs && fused->fused_serves(k, facts.dim, facts))
    return because(DistanceAlgorithm::Fused, "integer data, k <= 128, rows <= 256 bytes: the fused kernel (tensor "
                                             "cores, exact; the key matrix is never written)");
  if (nq < kFp16MinQueries)
    return because(DistanceAlgorithm::Cublas, "fewer than 64 queries: fp32 SGEMM (the fp16 base conversion costs more)");
  return because(DistanceAlgorithm::Fp16Mma, "integer data in fp16_mma's exact range: fp16 tensor cores, exact");
}

const DistanceEntry& resolve_distance(DistanceAlgorithm requested, Metric key_metric, int64_t nq, int64_t nb,
                                      int64_t k, const DataFacts& facts, std::string* why) {
  const DistanceAlgorithm a =
      requested == DistanceAlgorithm::Auto ? choose_distance(key_metric, nq, nb, k, facts, why) : requested;
  if (requested != DistanceAlgorithm::Auto && why) *why = "requested";
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

}  // namespace gknn::detail::cuda
