// backend.cu: the CUDA backend's entry points (core/backend.hpp), on top of the pipeline and the registries.
#include <algorithm>

#include "core/backend.hpp"
#include "core/keys.hpp"
#include "cuda/distance/distance.cuh"
#include "cuda/pipeline/measured_choice.cuh"
#include "cuda/pipeline/resident.cuh"
#include "cuda/pipeline/search.cuh"
#include "cuda/pipeline/select_rows.cuh"
#include "cuda/select/select.cuh"

namespace gknn::detail::cuda {

bool available() {
  try {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();  // no driver or no device: not an error of later calls
      return false;
    }
    return count > 0;
  } catch (...) {
    return false;
  }
}

void search_into(FloatView base, FloatView queries, const SearchParams& key_params, const ValueStats& base_stats,
                 const ValueStats& query_stats, const OutputSpec& out) {
  use_device(key_params.device);
  PipelineLease pipeline(key_params.device);
  size_t budget = pipeline_budget(*pipeline, key_params.memory_budget);
  const std::unique_ptr<BaseSource> source = make_base_source(*pipeline, base, &budget);
  // An automatic budget plans the tiles within what the lease keeps, so that a repeated one-shot search allocates
  // nothing (a 10k x 1M two-stage search would otherwise allocate and free a 40 GB key matrix on every call).
  if (key_params.memory_budget == 0) budget = std::min(budget, kOneShotPlanBytes);
  run_search_within_memory(*pipeline, *source, queries, key_params, budget,
                           DataFacts{base_stats.merged(query_stats), base.cols}, out);
}

void select_into(FloatView values, const int64_t* labels, int64_t k, bool negate, const SelectParams& params,
                 const OutputSpec& out) {
  use_device(params.device);
  PipelineLease pipeline(params.device);
  // Tiles planned within half of what the lease keeps, so that a repeated call allocates nothing: a 10k x 100k
  // descending selection in one tile allocated and freed a 4 GB negated copy on every call (H100: 11.4 ms, 8.4 ms
  // in kept tiles; ascending, which copies nothing, 4.6 ms).
  const size_t budget = std::min(memory_budget(0), kOneShotPlanBytes / 2);
  run_select_into(*pipeline, values, labels, k, negate, params, budget, out);
}

std::unique_ptr<ResidentStore> make_store(int64_t dim, int device) { return make_resident_store(dim, device); }

// The very calls run_search makes first (search.cu), so the plan is the search's.
void explain(const SearchParams& key_params, int64_t nq, int64_t nb, int64_t dim, const ValueStats& facts,
             SearchPlan& plan) {
  use_device(key_params.device);
  DataFacts data{facts, dim};
  data.guarded = key_params.guard != Guard::Off;
  const MeasuredChoice choice = measured_choice(key_params, nq, nb, data, key_params.device);
  const SearchParams& kp = choice.params;
  const int64_t k = std::min(kp.k, nb);
  plan.select = resolve_select(kp.select, std::min(nq, kMaxQueryTile), nb, k, &plan.select_reason).algorithm;
  plan.distance = resolve_distance(kp.distance, kp.metric, nq, nb, k, data, &plan.distance_reason).algorithm;
  if (!choice.select_reason.empty()) plan.select_reason = choice.select_reason;  // not "requested": the table's
  if (!choice.distance_reason.empty()) plan.distance_reason = choice.distance_reason;
  // As run_search decides per base tile (search.cu); the resident base is one tile.
  const DistanceEntry* d = find_distance(plan.distance);
  if (d && d->selects_itself(k, dim, data)) {
    plan.selects_itself = true;
    plan.select = SelectAlgorithm::Auto;
    plan.select_reason = "none: " + to_string(plan.distance) + " keeps each query's top k itself";
  }
}

// Both lists come in the catalogue's order (gknn/algorithms.def), whatever the order of the registry's folders.
std::vector<DistanceAlgorithm> distance_algorithms(Metric user_metric) {
  std::vector<DistanceAlgorithm> out;
  const Metric km = key_metric(user_metric);
  // A kernel exact only on integer data never sees cosine's normalised rows.
  for (const catalogue::DistanceInfo& info : catalogue::kDistances)
    if (const DistanceEntry* e = find_distance(info.algorithm);
        e && e->supports(km) && !(e->exact_on && user_metric == Metric::Cosine))
      out.push_back(e->algorithm);
  return out;
}

std::vector<SelectCapability> select_algorithms() {
  std::vector<SelectCapability> out;
  for (const catalogue::SelectInfo& info : catalogue::kSelects)
    if (const SelectEntry* e = find_select(info.algorithm)) out.push_back({e->algorithm, e->max_k});
  return out;
}

}  // namespace gknn::detail::cuda
