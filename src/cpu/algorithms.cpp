// algorithms.cpp: the CPU backend's algorithm lists and its choice for Auto.
//
// Auto distance: Gemm for squared L2 and inner product (SGEMM runs near the FLOP peak), Direct otherwise.
// Auto selection: the bounded heap up to kHeapMaxAutoK, Quickselect beyond, where the heap's O(log k)
// sift per accepted candidate starts to cost more than the buffer's amortised linear compactions.
// Reference is the float64 oracle: it computes and sorts double keys whatever the selection says.
#include "cpu/algorithms.hpp"

#include "core/backend.hpp"
#include "gknn/error.hpp"

namespace gknn::detail::cpu {
namespace {

bool gemm_metric(Metric m) {
  return m == Metric::SquaredL2 || m == Metric::L2 || m == Metric::InnerProduct || m == Metric::Cosine;
}

std::string names(const std::vector<DistanceAlgorithm>& algorithms) {
  std::string s;
  for (DistanceAlgorithm a : algorithms) s += (s.empty() ? "" : ", ") + to_string(a);
  return s;
}

}  // namespace

std::vector<DistanceAlgorithm> distance_algorithms(Metric user_metric) {
  std::vector<DistanceAlgorithm> out{DistanceAlgorithm::Reference, DistanceAlgorithm::Direct};
  if (gemm_metric(user_metric)) out.push_back(DistanceAlgorithm::Gemm);
  return out;
}

std::vector<SelectCapability> select_algorithms() {
  return {{SelectAlgorithm::Sort, INT64_MAX},
          {SelectAlgorithm::Heap, INT64_MAX},
          {SelectAlgorithm::Quickselect, INT64_MAX}};
}

DistanceAlgorithm resolve_distance(DistanceAlgorithm requested, Metric key_metric) {
  switch (requested) {
    case DistanceAlgorithm::Auto:
      return gemm_metric(key_metric) ? DistanceAlgorithm::Gemm : DistanceAlgorithm::Direct;
    case DistanceAlgorithm::Reference:
    case DistanceAlgorithm::Direct:
      return requested;
    case DistanceAlgorithm::Gemm:
      GKNN_EXPECT(gemm_metric(key_metric), ErrorCode::Unsupported, "distance algorithm gemm does not support metric ",
                  to_string(key_metric), " (it serves squared_l2, l2, inner_product, cosine); use direct");
      return requested;
    default:
      fail(ErrorCode::Unsupported, "distance algorithm ", to_string(requested),
           " is not available on the cpu backend (cpu offers: ", names(distance_algorithms(Metric::SquaredL2)), ")");
  }
}

SelectAlgorithm resolve_select(SelectAlgorithm requested, int64_t k) {
  switch (requested) {
    case SelectAlgorithm::Auto:
      return k <= kHeapMaxAutoK ? SelectAlgorithm::Heap : SelectAlgorithm::Quickselect;
    case SelectAlgorithm::Sort:
    case SelectAlgorithm::Heap:
    case SelectAlgorithm::Quickselect:
      return requested;
    default:
      fail(ErrorCode::Unsupported, "selection algorithm ", to_string(requested),
           " is not available on the cpu backend (cpu offers: sort, heap, quickselect)");
  }
}

}  // namespace gknn::detail::cpu
