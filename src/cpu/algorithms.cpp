// algorithms.cpp: the CPU backend's algorithm lists and its choice for Auto.
//
// Auto distance: Gemm for squared L2 and inner product (SGEMM runs near the FLOP peak), Direct otherwise.
// Auto selection: the bounded heap up to kHeapMaxAutoK, Quickselect beyond, where the heap's O(log k)
// sift per accepted candidate starts to cost more than the buffer's amortised linear compactions.
// Reference is the float64 oracle: it computes and sorts double keys whatever the selection says.
#include "cpu/algorithms.hpp"

#include <iterator>
#include <string>

#include "core/backend.hpp"
#include "gknn/error.hpp"

namespace gknn::detail::cpu {
namespace {

bool any_metric(Metric) { return true; }
bool gemm_metric(Metric m) {
  return m == Metric::SquaredL2 || m == Metric::L2 || m == Metric::InnerProduct || m == Metric::Cosine;
}

/// The CPU backend's entries: one line per algorithm that gknn/algorithms.def says the CPU implements.
struct DistanceEntry {
  DistanceAlgorithm algorithm;
  bool (*supports)(Metric metric);  ///< user or key metric (the GEMM metrics keep their family in key form)
};
constexpr DistanceEntry kDistanceEntries[] = {
    {DistanceAlgorithm::Reference, any_metric},
    {DistanceAlgorithm::Direct, any_metric},
    {DistanceAlgorithm::Gemm, gemm_metric},
};
constexpr SelectCapability kSelectEntries[] = {
    {SelectAlgorithm::Sort, INT64_MAX},
    {SelectAlgorithm::Heap, INT64_MAX},
    {SelectAlgorithm::Quickselect, INT64_MAX},
};

const DistanceEntry* find_distance(DistanceAlgorithm a) {
  for (const DistanceEntry& e : kDistanceEntries)
    if (e.algorithm == a) return &e;
  return nullptr;
}

template <class Algorithm>
std::string names(const std::vector<Algorithm>& algorithms) {
  std::string s;
  for (Algorithm a : algorithms) s += (s.empty() ? "" : ", ") + to_string(a);
  return s;
}

std::vector<SelectAlgorithm> select_names() {
  std::vector<SelectAlgorithm> out;
  for (const SelectCapability& e : kSelectEntries) out.push_back(e.algorithm);
  return out;
}

}  // namespace

std::vector<DistanceAlgorithm> distance_algorithms(Metric user_metric) {
  std::vector<DistanceAlgorithm> out;
  for (const DistanceEntry& e : kDistanceEntries)
    if (e.supports(user_metric)) out.push_back(e.algorithm);
  return out;
}

void explain(const SearchParams& key_params, int64_t /*nq*/, int64_t /*nb*/, int64_t /*dim*/,
             const ValueStats& /*facts*/, SearchPlan& plan) {
  plan.distance = resolve_distance(key_params.distance, key_params.metric, &plan.distance_reason);
  plan.select = resolve_select(key_params.select, key_params.k, &plan.select_reason);
}

std::vector<SelectCapability> select_algorithms() { return {std::begin(kSelectEntries), std::end(kSelectEntries)}; }

DistanceAlgorithm resolve_distance(DistanceAlgorithm requested, Metric key_metric, std::string* why) {
  if (requested == DistanceAlgorithm::Auto) {
    const bool gemm = gemm_metric(key_metric);
    if (why)
      *why = gemm ? "auto: a dot-product metric: row norms + OpenBLAS SGEMM over cache-sized tiles"
                  : "auto: L1/Linf/Lp keys have no GEMM form: the vectorised direct kernel";
    return gemm ? DistanceAlgorithm::Gemm : DistanceAlgorithm::Direct;
  }
  if (why) *why = "requested";
  const DistanceEntry* e = find_distance(requested);
  GKNN_EXPECT(e != nullptr, ErrorCode::Unsupported, "distance algorithm ", to_string(requested),
              " is not available on the cpu backend (cpu offers: ", names(distance_algorithms(Metric::SquaredL2)),
              ")");
  GKNN_EXPECT(e->supports(key_metric), ErrorCode::Unsupported, "distance algorithm ", to_string(requested),
              " does not support metric ", to_string(key_metric),
              " (it serves squared_l2, l2, inner_product, cosine); use direct");
  return requested;
}

SelectAlgorithm resolve_select(SelectAlgorithm requested, int64_t k, std::string* why) {
  if (requested == SelectAlgorithm::Auto) {
    const bool heap = k <= kHeapMaxAutoK;
    if (why)
      *why = "auto: k = " + std::to_string(k) + (heap ? " <= " : " > ") + std::to_string(kHeapMaxAutoK) +
             (heap ? ": a bounded heap per query" : ": nth_element on a candidate buffer");
    return heap ? SelectAlgorithm::Heap : SelectAlgorithm::Quickselect;
  }
  if (why) *why = "requested";
  for (const SelectCapability& e : kSelectEntries)
    if (e.algorithm == requested) return requested;
  fail(ErrorCode::Unsupported, "selection algorithm ", to_string(requested),
       " is not available on the cpu backend (cpu offers: ", names(select_names()), ")");
}

}  // namespace gknn::detail::cpu
