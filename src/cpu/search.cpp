// search.cpp: the CPU fast path: tiles of keys from a distance kernel, streamed into per-query selectors.
//
// Work unit = (block of queries, range of base rows). A thread computes the unit's key tiles one at a time
// (bounded memory, in cache) and pushes each query's row of keys into that query's selector. Base rows are
// visited in increasing order, so the selectors see indices in order across tiles. With fewer queries than
// threads the base is split into ranges whose top-k lists are merged in the total order at the end.
#include "cpu/search.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "cpu/algorithms.hpp"
#include "cpu/distance/reference.hpp"
#include "cpu/distance/tile_kernel.hpp"
#include "cpu/parallel.hpp"
#include "cpu/plan.hpp"
#include "cpu/select/selectors.hpp"

namespace gknn::detail::cpu {
namespace {

/// Where a unit writes its queries' results: row i at keys[i * ld], indices[i * ld], count kept[i].
struct UnitOutput {
  float* keys;
  int64_t* indices;
  int64_t ld;
  int64_t* kept;
};

template <class Selector>
void search_unit(TileKernel& kernel, const TilePlan& plan, int64_t k, int64_t q0, int64_t nq, int64_t r0, int64_t r1,
                 const UnitOutput& out) {
  std::vector<Selector> selectors(static_cast<size_t>(nq), Selector(k, r1 - r0));
  std::vector<float> tile(static_cast<size_t>(nq * std::min(plan.tile_rows, r1 - r0)));
  for (int64_t t = r0; t < r1; t += plan.tile_rows) {
    const int64_t nr = std::min(plan.tile_rows, r1 - t);
    kernel.compute(q0, nq, t, nr, tile.data(), nr);
    for (int64_t i = 0; i < nq; ++i) selectors[size_t(i)].push(tile.data() + i * nr, nr, ConsecutiveIndex{t});
  }
  for (int64_t i = 0; i < nq; ++i)
    out.kept[i] = selectors[size_t(i)].finish(out.keys + i * out.ld, out.indices + i * out.ld);
}

std::unique_ptr<TileKernel> make_kernel(DistanceAlgorithm algorithm, const DistanceInputs& in, const TilePlan& plan) {
  return algorithm == DistanceAlgorithm::Gemm ? make_gemm_kernel(in) : make_direct_kernel(in, plan.tile_rows);
}

/// Top-k lists of every (base part, query) when the base is split: row part * q + qi, kept[row] entries each.
struct PartLists {
  int64_t q, k;
  std::vector<float> keys;
  std::vector<int64_t> indices, kept;
  PartLists(int64_t parts, int64_t q_, int64_t k_)
      : q(q_), k(k_), keys(size_t(parts * q * k)), indices(keys.size()), kept(size_t(parts * q)) {}
  UnitOutput target(int64_t part, int64_t q0) {
    const int64_t row = part * q + q0;
    return {keys.data() + row * k, indices.data() + row * k, k, kept.data() + row};
  }
};

/// Per query, the k best of the parts' sorted lists, in the total order.
void merge_parts(const PartLists& lists, int64_t parts, KeyResult& out) {
  const int64_t q = lists.q, k = lists.k;
  std::vector<Candidate> all;
  for (int64_t qi = 0; qi < q; ++qi) {
    all.clear();
    for (int64_t row = qi; row < parts * q; row += q)
      for (int64_t j = 0; j < lists.kept[size_t(row)]; ++j)
        all.push_back({lists.keys[size_t(row * k + j)], lists.indices[size_t(row * k + j)]});
    std::partial_sort(all.begin(), all.begin() + k, all.end(), before);
    for (int64_t j = 0; j < k; ++j) {
      out.distances[size_t(qi * k + j)] = all[size_t(j)].key;
      out.indices[size_t(qi * k + j)] = all[size_t(j)].index;
    }
  }
}

template <class Selector>
KeyResult run_plan(const DistanceInputs& in, DistanceAlgorithm algorithm, const TilePlan& plan,
                   const SearchParams& kp) {
  const int64_t q = in.queries.rows, n = in.base.rows, k = kp.k;
  KeyResult out{q, k, std::vector<float>(size_t(q * k)), std::vector<int64_t>(size_t(q * k))};
  std::vector<int64_t> kept(static_cast<size_t>(q));  // unsplit: every query keeps k (k <= n)
  PartLists parts(plan.base_parts > 1 ? plan.base_parts : 0, q, k);
  const int64_t blocks = plan.query_blocks(q), part_rows = plan.part_rows(n), units = blocks * plan.base_parts;
  Progress progress(kp.progress, units);
  parallel_for(plan.threads, units, [&](int64_t unit) {
    const int64_t part = unit / blocks, q0 = (unit % blocks) * plan.query_block;
    const int64_t nq = std::min(plan.query_block, q - q0);
    const int64_t r0 = std::min(n, part * part_rows), r1 = std::min(n, r0 + part_rows);
    const UnitOutput target = plan.base_parts > 1 ? parts.target(part, q0)
                                                  : UnitOutput{out.distances.data() + q0 * k,
                                                               out.indices.data() + q0 * k, k, kept.data() + q0};
    if (r1 > r0) search_unit<Selector>(*make_kernel(algorithm, in, plan), plan, k, q0, nq, r0, r1, target);
    progress.unit_done();
  });
  if (plan.base_parts > 1) merge_parts(parts, plan.base_parts, out);
  progress.finish();
  return out;
}

}  // namespace

KeyResult search_with_norms(FloatView base, const float* base_norms, FloatView queries, const SearchParams& kp) {
  const DistanceAlgorithm distance = resolve_distance(kp.distance, kp.metric);
  const SelectAlgorithm select = resolve_select(kp.select, kp.k);
  const int threads = resolve_threads(kp.threads);
  if (kp.stats) kp.stats->distance_algorithm = distance, kp.stats->select_algorithm = select;
  if (distance == DistanceAlgorithm::Reference) return reference_search(base, queries, kp, threads);

  DistanceInputs in{base, queries, kp.metric, kp.p, base_norms, nullptr};
  std::vector<float> own_base_norms, query_norms;
  std::optional<SingleThreadedBlas> blas;
  if (distance == DistanceAlgorithm::Gemm) {
    blas.emplace();
    if (kp.metric == Metric::SquaredL2) {
      if (!base_norms) own_base_norms = squared_norms(base), in.base_norms = own_base_norms.data();
      query_norms = squared_norms(queries);
      in.query_norms = query_norms.data();
    }
  }
  const TilePlan plan =
      make_plan({base.rows, queries.rows, base.cols, kp.k, distance, select}, kp.memory_budget, threads);
  return with_selector(select,
                       [&](auto tag) { return run_plan<typename decltype(tag)::type>(in, distance, plan, kp); });
}

KeyResult search(FloatView base, FloatView queries, const SearchParams& key_params) {
  return search_with_norms(base, nullptr, queries, key_params);
}

}  // namespace gknn::detail::cpu
