// measured_choice.cu: see measured_choice.cuh.
#include "cuda/pipeline/measured_choice.cuh"

#include <algorithm>

#include "cuda/common/device.cuh"
#include "cuda/select/select.cuh"
#include "plan/plan_table.hpp"

namespace gknn::detail::cuda {

MeasuredChoice measured_choice(const SearchParams& key_params, int64_t nq, int64_t nb, const DataFacts& facts,
                               int device, bool reasons) {
  MeasuredChoice out{key_params, {}, {}};
  const bool auto_distance = key_params.distance == DistanceAlgorithm::Auto;
  const bool auto_select = key_params.select == SelectAlgorithm::Auto;
  if (!auto_distance && !auto_select) return out;
  const detail::plan::Table& table = detail::plan::active_table();
  if (table.rows.empty()) return out;
  const int64_t k = std::min(key_params.k, nb);
  const auto usable = [&](const detail::plan::Row& r) {
    if (!detail::plan::pairs_with(r, key_params.distance, key_params.select)) return false;
    const DistanceEntry* d = find_distance(auto_distance ? r.distance : key_params.distance);
    // A row's `auto` selection (the sweep writes it beside the fused kernel, which selects itself) leaves the
    // selection to the rules, which serve every k.
    const SelectAlgorithm select = auto_select ? r.select : key_params.select;
    const SelectEntry* s = select == SelectAlgorithm::Auto ? nullptr : find_select(select);
    return d && (select == SelectAlgorithm::Auto || (s && k <= s->max_k)) && d->supports(key_params.metric) &&
           (!d->exact_on || d->exact_on(facts));
  };
  const detail::plan::Row* row =
      detail::plan::nearest(table, device_props(device).name, detail::plan::metric_class(key_params.metric),
                            facts.values.integral, detail::plan::Cell{nb, nq, facts.dim, k}, usable);
  if (!row) return out;
  const std::string why = reasons ? detail::plan::describe(*row, table) : std::string();
  if (auto_distance) out.params.distance = row->distance, out.distance_reason = why;
  if (auto_select && row->select != SelectAlgorithm::Auto) out.params.select = row->select, out.select_reason = why;
  return out;
}

}  // namespace gknn::detail::cuda
