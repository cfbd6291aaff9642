// sharded_index.cpp: ShardedIndex: rows cut into per-shard ResidentStores, searches run per device group on
// host threads, partial key lists merged (sharded) or concatenated (replicated), then finalised once.
#include "gknn/sharded_index.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>

#include "core/finalize.hpp"
#include "core/guard.hpp"
#include "core/validate.hpp"
#include "cpu/parallel.hpp"
#include "gknn/error.hpp"
#include "shard/merge.hpp"
#include "shard/segments.hpp"
#include "shard/shard_threads.hpp"
#include "shard/sharded_keys.hpp"

namespace gknn {
namespace {

struct Shard {
  ShardDevice where;
  std::unique_ptr<detail::ResidentStore> store;
  detail::GlobalRows rows;

  int64_t size() const { return store->size(); }
};

std::unique_ptr<detail::ResidentStore> make_store(ShardDevice where, int64_t dim) {
  if (where.backend == Backend::Cuda) return detail::cuda::make_store(dim, where.device);
  return detail::cpu::make_store(dim);
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

/// Phase times of concurrent shards: each phase's slowest shard (the critical path); the algorithms that ran are the
/// first shard's (shards of other devices or data may choose others).
void add_slowest(SearchStats& into, const SearchStats& s) {
  if (into.distance_algorithm == DistanceAlgorithm::Auto)
    into.distance_algorithm = s.distance_algorithm, into.select_algorithm = s.select_algorithm;
  into.upload_ms = std::max(into.upload_ms, s.upload_ms);
  into.distance_ms = std::max(into.distance_ms, s.distance_ms);
  into.select_ms = std::max(into.select_ms, s.select_ms);
  into.merge_ms = std::max(into.merge_ms, s.merge_ms);
  into.download_ms = std::max(into.download_ms, s.download_ms);
  into.device_ms = std::max(into.device_ms, s.device_ms);
  into.pack_ms = std::max(into.pack_ms, s.pack_ms);
  into.copy_out_ms = std::max(into.copy_out_ms, s.copy_out_ms);
  into.query_tiles = std::max(into.query_tiles, s.query_tiles);
  into.base_tiles = std::max(into.base_tiles, s.base_tiles);
  into.guard_candidates = std::max(into.guard_candidates, s.guard_candidates);
  into.rerank_ms = std::max(into.rerank_ms, s.rerank_ms);
  into.guard_retried += s.guard_retried;  // queries searched again, over the shards
  into.guard_device_rows += s.guard_device_rows;
}

/// The shards' lists merged into q x k (merge.hpp): part s has keys *keys[s] (float keys, or the guard's float64
/// ones) and parts[s]'s rows, parts[s].k a row. Into the first shard's own lists where they have the room (no q x k
/// allocations after the devices); its keys and rows then move out of it. Returns the keys; the rows go to `rows`.
template <class Keys>
Keys merge_shard_lists(const std::vector<Keys*>& keys, std::vector<detail::KeyResult>& parts, int64_t q, int64_t k,
                       int threads, HostArray<int64_t>& rows) {
  std::vector<detail::KeyListsOf<typename Keys::value_type>> views;
  for (size_t s = 0; s < parts.size(); ++s)
    views.push_back({keys[s]->data(), parts[s].indices.data(), parts[s].rows, parts[s].k});
  if (!parts.empty() && parts[0].k == k && parts[0].rows == q) {
    detail::merge_key_lists_into(views, q, k, threads, keys[0]->data(), parts[0].indices.data());
    rows = std::move(parts[0].indices);
    return std::move(*keys[0]);
  }
  Keys out(size_t(q * k));
  rows.resize(size_t(q * k));
  detail::merge_key_lists_into(views, q, k, threads, out.data(), rows.data());
  return out;
}

/// The exactness guard of a search over the shards (guard.hpp): the distance path to force in the candidate
/// passes and the bound the certificates use.
struct ShardGuard {
  detail::GuardPath resolved;
  detail::KeyErrorBound bound;
};

}  // namespace

struct ShardedIndex::Impl {
  int64_t dim;
  Metric metric;
  ShardMode mode;
  double p = 2.0;
  std::vector<ShardDevice> devices;
  std::vector<Shard> shards;
  int64_t rows = 0;

  /// The key params one shard runs with: its backend and device, its share of the CPU threads, and k clipped
  /// to the rows it searches.
  SearchParams shard_params(const SearchParams& checked, int s, int64_t rows_searched) const {
    SearchParams kp = detail::key_params(checked, rows_searched);
    const ShardDevice& where = shards[size_t(s)].where;
    kp.backend = where.backend;
    kp.device = where.device;
    if (where.backend == Backend::Cpu) {  // the CPU shards run side by side: each gets its share of the threads
      const int cpu_shards = int(std::count_if(shards.begin(), shards.end(),
                                               [](const Shard& x) { return x.where.backend == Backend::Cpu; }));
      kp.threads = std::max(1, detail::cpu::resolve_threads(checked.threads) / std::max(1, cpu_shards));
    }
    kp.progress = s == 0 ? checked.progress : ProgressCallback{};
    kp.stats = nullptr;
    return kp;
  }

  /// Validated rows to store, normalised into `normalized` for cosine (as Index stores them); their value facts
  /// into `stats`.
  FloatView checked_rows(FloatView vectors, std::vector<float>& normalized, detail::ValueStats& stats) const {
    stats = detail::validate_matrix(vectors, "ShardedIndex::add vectors", true);
    GKNN_EXPECT(vectors.cols == dim, ErrorCode::InvalidArgument, "ShardedIndex::add: vectors have dimension ",
                vectors.cols, ", the index has ", dim);
    if (metric != Metric::Cosine) return vectors;
    normalized = detail::normalized_rows(vectors);
    stats = detail::ValueStats{false, false, 1.f};  // normalised rows: fractions
    return FloatView{normalized.data(), vectors.rows, vectors.cols, 0};
  }

  void append(int s, FloatView rows, int64_t global_begin, const detail::ValueStats& stats) {
    if (rows.rows == 0) return;
    Shard& shard = shards[size_t(s)];
    shard.rows.append(global_begin, rows.rows);
    shard.store->append(rows, stats);
  }

  /// Runs search(shard, stats) for every shard, grouped by thread_groups(); returns the slowest phases.
  template <class Search>
  SearchStats run_shards(Search&& search) const {
    const std::vector<std::vector<int>> groups = detail::device_groups(devices);
    std::vector<SearchStats> stats(shards.size());
    detail::run_concurrently(int(groups.size()), [&](int g) {
      for (int s : groups[size_t(g)]) search(s, stats[size_t(s)]);
    });
    SearchStats slowest;
    for (const SearchStats& st : stats) add_slowest(slowest, st);
    return slowest;
  }

  /// Shard s's keys of `queries` (key form, kp.k of them, the shard's own row indices): its store's search, or
  /// under the guard its guarded search (guard.hpp) with the certificate taken where the shard's rows are (the
  /// cuda store's search, which also brings back the float64 keys) and only the uncertified queries re-ranked on
  /// the host: each shard certifies its own top k, side by side with the others, as an Index does.
  detail::KeyResult shard_keys(int s, FloatView queries, const detail::ValueStats& query_stats, const SearchParams& kp,
                               const ShardGuard* guard, HostArray<double>* exact) const {
    const detail::ResidentStore& store = *shards[size_t(s)].store;
    if (!guard) return detail::search_keys(store, queries, kp, query_stats);
    const detail::GuardSource source = detail::store_guard_source(store, shards[size_t(s)].where.backend, query_stats,
                                                                  kp.metric, kp.p, kp.threads);
    return detail::guarded_keys(source, queries, kp, guard->resolved, guard->bound, exact);
  }

  /// The merge of the shards' lists on the first shard's device (backend.hpp DeviceListMerge) where every shard with
  /// rows is a CUDA device and there are two or more; part_of[s]: shard s's part (-1: no rows). Null where it
  /// cannot serve: the shards' lists then come to the host and merge there.
  std::unique_ptr<detail::cuda::DeviceListMerge> device_merge(int64_t q, int64_t k, const SearchParams& checked,
                                                        std::vector<int>& part_of) const {
    std::vector<detail::cuda::DeviceListPart> parts;
    part_of.assign(shards.size(), -1);
    for (size_t s = 0; s < shards.size(); ++s) {
      const Shard& shard = shards[s];
      if (shard.size() == 0) continue;
      if (shard.where.backend != Backend::Cuda) return nullptr;
      detail::cuda::DeviceListPart part{shard.where.device, std::min(checked.k, shard.size()), {}, {}};
      shard.rows.segments(part.local_begin, part.global_begin);
      part_of[s] = int(parts.size());
      parts.push_back(std::move(part));
    }
    if (parts.size() < 2) return nullptr;
    return detail::cuda::device_list_merge(parts, q, k);
  }

  /// Sharded, merged on a device: each shard writes its keys (key form, as search_keys) into its part of `merge`.
  detail::KeyResult sharded_keys_on_device(FloatView queries, const detail::ValueStats& query_stats,
                                           const SearchParams& checked, SearchStats& stats,
                                           detail::cuda::DeviceListMerge& merge,
                                           const std::vector<int>& part_of) const {
    stats = run_shards([&](int s, SearchStats& st) {
      if (part_of[size_t(s)] < 0) return;
      SearchParams kp = shard_params(checked, s, shards[size_t(s)].size());
      kp.stats = &st;
      shards[size_t(s)].store->search_into(queries, kp, query_stats,
                                           detail::key_output_into(merge.part(part_of[size_t(s)])));
    });
    const auto merge_start = std::chrono::steady_clock::now();
    detail::KeyResult merged = merge.merge();
    stats.merge_ms += elapsed_ms(merge_start);
    return merged;
  }

  /// Sharded, unguarded, all rows on one CUDA shard: its keys (key form, its own row indices) written into the
  /// target's lists on its device, nothing returned; false (nothing done) where that does not apply or the lists
  /// have no room there.
  bool keys_left_on_device(FloatView queries, const detail::ValueStats& query_stats, const SearchParams& checked,
                           SearchStats& stats, detail::DeviceListsTarget& target) const {
    const auto with_rows = [](const Shard& s) { return s.size() > 0; };
    const auto only = std::find_if(shards.begin(), shards.end(), with_rows);
    if (only == shards.end() || only->where.backend != Backend::Cuda ||
        std::find_if(only + 1, shards.end(), with_rows) != shards.end())
      return false;
    const int s = int(only - shards.begin());
    const std::optional<ResultView> dest =
        target.lists->own(only->where.device, queries.rows, std::min(checked.k, only->size()));
    if (!dest) return false;
    SearchParams kp = shard_params(checked, s, only->size());
    kp.stats = &stats;
    only->store->search_into(queries, kp, query_stats, detail::key_output_into(*dest));
    target.rows = only->rows;
    target.written = true;
    return true;
  }

  /// Sharded: every shard's top k of every query, merged (on the float64 keys under the guard: two shards' rows
  /// whose float64 keys differ may round to one float key, and only the float64 keys order them as one device does).
  detail::KeyResult sharded_keys(FloatView queries, const detail::ValueStats& query_stats, const SearchParams& checked,
                                 SearchStats& stats, const ShardGuard* guard, HostArray<double>* exact) const {
    const int64_t q = queries.rows;
    std::vector<int> part_of;
    if (std::unique_ptr<detail::cuda::DeviceListMerge> merge =
            guard ? nullptr : device_merge(q, std::min(checked.k, rows), checked, part_of))
      return sharded_keys_on_device(queries, query_stats, checked, stats, *merge, part_of);
    std::vector<detail::KeyResult> parts(shards.size());
    std::vector<HostArray<double>> exact_parts(shards.size());
    stats = run_shards([&](int s, SearchStats& st) {
      const Shard& shard = shards[size_t(s)];
      if (shard.size() == 0) {
        parts[size_t(s)] = detail::KeyResult{q, 0, {}, {}};
        return;
      }
      SearchParams kp = shard_params(checked, s, shard.size());
      kp.stats = &st;
      detail::KeyResult keys = shard_keys(s, queries, query_stats, kp, guard, &exact_parts[size_t(s)]);
      shard.rows.to_global(keys.indices);
      parts[size_t(s)] = std::move(keys);
    });
    const auto merge_start = std::chrono::steady_clock::now();
    const int64_t k = std::min(checked.k, rows);
    detail::KeyResult merged{q, k, {}, {}};
    if (guard) {
      std::vector<HostArray<double>*> keys;
      for (HostArray<double>& e : exact_parts) keys.push_back(&e);
      HostArray<double> wide = merge_shard_lists(keys, parts, q, k, checked.threads, merged.indices);
      merged.distances = std::move(parts[0].distances);  // its room, where it has it
      merged.distances.resize(size_t(q * k));
      detail::round_keys_into(wide.data(), merged.distances.data(), q * k);
      if (exact) *exact = std::move(wide);
    } else {
      std::vector<HostArray<float>*> keys;
      for (detail::KeyResult& part : parts) keys.push_back(&part.distances);
      merged.distances = merge_shard_lists(keys, parts, q, k, checked.threads, merged.indices);
    }
    stats.merge_ms += elapsed_ms(merge_start);
    return merged;
  }

  /// The exactness guard's decision over the shards (guard.hpp): each backend's resolved path on the merged facts
  /// of every stored row and the queries; the loosest bound where several backends need one. *resolved is the
  /// path to force in the candidate passes: its distance or selection Auto where the shards resolve it differently.
  detail::GuardDecision guard_decision(const SearchParams& kp, int64_t nq, const detail::ValueStats& query_stats,
                                       detail::GuardPath* resolved) const {
    detail::ValueStats facts = query_stats;
    for (const Shard& shard : shards)
      if (shard.size() > 0) facts = facts.merged(shard.store->facts());
    detail::GuardDecision decision;
    bool first = true;
    for (const Shard& shard : shards) {
      if (shard.size() == 0) continue;
      detail::GuardPath a;
      const detail::GuardDecision d = detail::guard_for(shard.where.backend, kp, nq, shard.size(), dim, facts, &a);
      if (first) *resolved = a;
      if (resolved->distance != a.distance) resolved->distance = DistanceAlgorithm::Auto;
      if (resolved->select != a.select) resolved->select = SelectAlgorithm::Auto;
      first = false;
      if (!d.bound) continue;
      if (decision.bound) {
        decision.bound->input_error = std::max(decision.bound->input_error, d.bound->input_error);
        decision.bound->terms = std::max(decision.bound->terms, d.bound->terms);
      } else {
        decision = d;
      }
    }
    return decision;
  }

  /// Replicated without the guard: each shard writes its keys (key form, as search_keys) straight into its rows of
  /// one result, page-locked where the CUDA backend has the blocks (its downloads then land there directly): no
  /// per-shard result and no copy after the devices (10k x 1000 from two H200s: 165 ms of host work before).
  detail::KeyResult replicated_keys_in_place(FloatView queries, const detail::ValueStats& query_stats,
                                             const SearchParams& checked, SearchStats& stats) const {
    const int64_t q = queries.rows, k = std::min(checked.k, rows), parts = int64_t(shards.size());
    detail::KeyResult out;
    {
      const detail::PageLockedResults page_locked;
      out = detail::allocate_result_populated(q, k);
    }
    stats = run_shards([&](int s, SearchStats& st) {
      const auto [first, last] = detail::near_equal_part(q, s, parts);
      if (last == first) return;
      SearchParams kp = shard_params(checked, s, rows);
      kp.stats = &st;
      const ResultView rows_of_part{out.distances.data() + first * k, out.indices.data() + first * k, last - first, k,
                                    Memory::Host};
      const FloatView range{queries.row(first), last - first, queries.cols, queries.row_stride()};
      shards[size_t(s)].store->search_into(range, kp, query_stats, detail::key_output_into(rows_of_part));
    });
    return out;
  }

  /// Replicated: shard s answers its near-equal part of the queries against its full copy of the base.
  detail::KeyResult replicated_keys(FloatView queries, const detail::ValueStats& query_stats,
                                    const SearchParams& checked, SearchStats& stats, const ShardGuard* guard,
                                    HostArray<double>* exact) const {
    const int64_t q = queries.rows, k = std::min(checked.k, rows), parts = int64_t(shards.size());
    if (!guard) return replicated_keys_in_place(queries, query_stats, checked, stats);
    // Each shard's query range gets its rows' keys, row indices and float64 keys below: every entry is written.
    detail::KeyResult out{q, k, HostArray<float>::for_overwrite(size_t(q * k)),
                          HostArray<int64_t>::for_overwrite(size_t(q * k))};
    if (exact) *exact = HostArray<double>::for_overwrite(size_t(q * k));
    stats = run_shards([&](int s, SearchStats& st) {
      const auto [first, last] = detail::near_equal_part(q, s, parts);
      if (last == first) return;
      SearchParams kp = shard_params(checked, s, rows);
      kp.stats = &st;
      const FloatView range{queries.row(first), last - first, queries.cols, queries.row_stride()};
      HostArray<double> part_exact;
      const detail::KeyResult keys = shard_keys(s, range, query_stats, kp, guard, &part_exact);
      std::copy(keys.distances.begin(), keys.distances.end(), out.distances.begin() + first * k);
      std::copy(keys.indices.begin(), keys.indices.end(), out.indices.begin() + first * k);
      if (exact) std::copy(part_exact.begin(), part_exact.end(), exact->begin() + first * k);
    });
    return out;
  }
};

ShardedIndex::ShardedIndex(int64_t dimension, std::vector<ShardDevice> shards, ShardMode mode, Metric metric) {
  GKNN_EXPECT(dimension > 0, ErrorCode::InvalidArgument, "ShardedIndex: dimension must be positive (got ", dimension,
              ")");
  GKNN_EXPECT(!shards.empty(), ErrorCode::InvalidArgument, "ShardedIndex: the list of shards is empty");
  impl_ = std::make_unique<Impl>(Impl{dimension, metric, mode, 2.0, {}, {}, 0});
  for (ShardDevice& where : shards) {
    where.backend = detail::resolve_backend(where.backend);
    if (where.backend == Backend::Cpu) where.device = 0;
    impl_->shards.push_back({where, make_store(where, dimension), {}});
  }
  impl_->devices = std::move(shards);
}

ShardedIndex::~ShardedIndex() = default;
ShardedIndex::ShardedIndex(ShardedIndex&&) noexcept = default;
ShardedIndex& ShardedIndex::operator=(ShardedIndex&&) noexcept = default;

void ShardedIndex::add(FloatView vectors) {
  const int64_t parts = shard_count();
  std::vector<int64_t> cut(static_cast<size_t>(parts));
  for (int64_t s = 0; s < parts; ++s) {
    const detail::PartRange range = detail::near_equal_part(vectors.rows, s, parts);
    cut[size_t(s)] = range.end - range.begin;
  }
  if (impl_->mode == ShardMode::Sharded) return add(vectors, cut);
  std::vector<float> normalized;
  detail::ValueStats stats;
  const FloatView rows = impl_->checked_rows(vectors, normalized, stats);
  for (int s = 0; s < shard_count(); ++s) impl_->append(s, rows, impl_->rows, stats);
  impl_->rows += vectors.rows;
}

void ShardedIndex::add(FloatView vectors, const std::vector<int64_t>& rows_per_shard) {
  GKNN_EXPECT(impl_->mode == ShardMode::Sharded, ErrorCode::InvalidArgument,
              "ShardedIndex::add: an explicit cut needs sharded mode (a replicated index copies every row)");
  GKNN_EXPECT(int64_t(rows_per_shard.size()) == shard_count(), ErrorCode::InvalidArgument,
              "ShardedIndex::add: rows_per_shard has ", rows_per_shard.size(), " entries for ", shard_count(),
              " shards");
  for (size_t s = 0; s < rows_per_shard.size(); ++s)
    GKNN_EXPECT(rows_per_shard[s] >= 0, ErrorCode::InvalidArgument, "ShardedIndex::add: rows_per_shard[", s,
                "] = ", rows_per_shard[s], " is negative");
  const int64_t total = std::accumulate(rows_per_shard.begin(), rows_per_shard.end(), int64_t(0));
  GKNN_EXPECT(total == vectors.rows, ErrorCode::InvalidArgument, "ShardedIndex::add: rows_per_shard sums to ", total,
              " but ", vectors.rows, " rows were given");
  std::vector<float> normalized;
  detail::ValueStats stats;
  const FloatView rows = impl_->checked_rows(vectors, normalized, stats);
  int64_t first = 0;
  for (int s = 0; s < shard_count(); ++s) {
    const int64_t count = rows_per_shard[size_t(s)];
    impl_->append(s, FloatView{rows.row(first), count, rows.cols, rows.row_stride()}, impl_->rows + first, stats);
    first += count;
  }
  impl_->rows += vectors.rows;
}

Result ShardedIndex::search(FloatView queries, int64_t k) const {
  SearchParams params;
  params.k = k;
  params.metric = impl_->metric;
  params.p = impl_->p;
  return search(queries, params);
}

Result ShardedIndex::search(FloatView queries, const SearchParams& params) const {
  const auto start = std::chrono::steady_clock::now();
  const SearchParams checked = detail::ShardedAccess::checked_params(*this, params);
  GKNN_EXPECT(impl_->rows > 0, ErrorCode::InvalidArgument, "ShardedIndex::search: the index is empty");
  Result out = detail::finalize(detail::ShardedAccess::search_keys(*this, queries, checked), checked.metric,
                                checked.p, checked.k);
  if (params.stats) params.stats->total_ms = elapsed_ms(start);
  return out;
}

void ShardedIndex::reset() {
  for (Shard& shard : impl_->shards) {
    shard.store->clear();
    shard.rows.clear();
  }
  impl_->rows = 0;
}

int64_t ShardedIndex::size() const noexcept { return impl_->rows; }
int64_t ShardedIndex::dimension() const noexcept { return impl_->dim; }
Metric ShardedIndex::metric() const noexcept { return impl_->metric; }
ShardMode ShardedIndex::mode() const noexcept { return impl_->mode; }
int ShardedIndex::shard_count() const noexcept { return int(impl_->shards.size()); }
const std::vector<ShardDevice>& ShardedIndex::shards() const noexcept { return impl_->devices; }

int64_t ShardedIndex::shard_size(int shard) const {
  GKNN_EXPECT(shard >= 0 && shard < shard_count(), ErrorCode::InvalidArgument, "ShardedIndex::shard_size: shard ",
              shard, " is outside [0, ", shard_count(), ")");
  return impl_->shards[size_t(shard)].size();
}

void ShardedIndex::set_p(double p) {
  GKNN_EXPECT(p > 0, ErrorCode::InvalidArgument, "ShardedIndex::set_p: p must be > 0 (got ", p, ")");
  impl_->p = p;
}

namespace detail {

SearchParams ShardedAccess::checked_params(const ShardedIndex& index, const SearchParams& params_in) {
  const ShardedIndex::Impl& impl = *index.impl_;
  SearchParams params = params_in;
  GKNN_EXPECT(params.metric == impl.metric || params.metric == Metric::SquaredL2, ErrorCode::InvalidArgument,
              "ShardedIndex::search: metric ", to_string(params.metric), " differs from the index metric ",
              to_string(impl.metric));
  params.metric = impl.metric;
  if (params.metric == Metric::Lp && params_in.metric != Metric::Lp) params.p = impl.p;
  GKNN_EXPECT(params.k > 0, ErrorCode::InvalidArgument, "ShardedIndex::search: k must be positive (got ", params.k,
              ")");
  GKNN_EXPECT(params.metric != Metric::Lp || (params.p > 0 && std::isfinite(params.p)), ErrorCode::InvalidArgument,
              "ShardedIndex::search: metric lp needs a finite p > 0 (got p = ", params.p, ")");
  GKNN_EXPECT(params.threads >= 0 && params.threads <= kMaxThreads, ErrorCode::InvalidArgument,
              "ShardedIndex::search: threads must be in [0, ", kMaxThreads, "] (got ", params.threads, ")");
  return params;
}

KeyResult ShardedAccess::search_keys(const ShardedIndex& index, FloatView queries, const SearchParams& checked,
                                     HostArray<double>* exact, DeviceListsTarget* on_device) {
  const ShardedIndex::Impl& impl = *index.impl_;
  ValueStats query_stats = validate_matrix(queries, "queries", true);
  GKNN_EXPECT(queries.cols == impl.dim, ErrorCode::InvalidArgument, "ShardedIndex::search: queries have dimension ",
              queries.cols, ", the index has ", impl.dim);
  const int64_t k = std::min(checked.k, impl.rows);
  if (queries.rows == 0 || impl.rows == 0)
    return KeyResult{queries.rows, k, std::vector<float>(size_t(queries.rows * k)),
                     std::vector<int64_t>(size_t(queries.rows * k))};
  std::vector<float> normalized;
  if (checked.metric == Metric::Cosine) {
    normalized = normalized_rows(queries);
    query_stats = ValueStats{false, false, 1.f};
  }
  const FloatView q = normalized.empty() ? queries : FloatView{normalized.data(), queries.rows, queries.cols, 0};
  const SearchParams kp = key_params(checked, impl.rows);
  detail::GuardPath resolved;
  const GuardDecision decision = impl.guard_decision(kp, q.rows, query_stats, &resolved);
  std::optional<ShardGuard> guard;
  if (decision.bound) guard = ShardGuard{resolved, *decision.bound};
  const ShardGuard* g = guard ? &*guard : nullptr;
  SearchStats stats;
  if (on_device && !g && impl.mode == ShardMode::Sharded &&
      impl.keys_left_on_device(q, query_stats, checked, stats, *on_device)) {
    if (checked.stats) *checked.stats = stats;
    return KeyResult{q.rows, k, {}, {}};
  }
  KeyResult keys = impl.mode == ShardMode::Sharded ? impl.sharded_keys(q, query_stats, checked, stats, g, exact)
                                                   : impl.replicated_keys(q, query_stats, checked, stats, g, exact);
  if (checked.stats) *checked.stats = stats;
  return keys;
}

}  // namespace detail
}  // namespace gknn
