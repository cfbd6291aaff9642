// registry.cu: DistanceAlgorithm -> GPU kernel, which key metrics each serves, and Auto's choice. Each kernel
// folder holds an entries.inc with one line, GKNN_DISTANCE_ENTRY(Id, supports, needs_norms, fn): the enum value
// (gknn/algorithms.def), the key metrics it serves (a predicate of distance.cuh), whether the pipeline must
// provide squared row norms, and its run function. src/CMakeLists.txt gathers every distance/*/entries.inc into
// all_entries.inc, so a new folder is registered without editing a list here.
#include <iterator>

#include "cuda/distance/kernels.cuh"
#include "gknn/error.hpp"

namespace gknn::cuda_detail {
namespace {

const DistanceEntry kDistanceEntries[] = {
#define GKNN_DISTANCE_ENTRY(id, supports, needs_norms, fn) {DistanceAlgorithm::id, supports, needs_norms, fn},
#include "cuda/distance/all_entries.inc"
#undef GKNN_DISTANCE_ENTRY
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
  if (gemm_key_metric(key_metric) && dim >= kGemmMinDim) return DistanceAlgorithm::Cublas;
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
