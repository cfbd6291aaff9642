// index.cpp: the FAISS-style Index: validation and ids here, storage and search in the backend's store.
#include "gknn/index.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/call_timer.hpp"
#include "core/env_switch.hpp"
#include "core/finalize.hpp"
#include "core/guard.hpp"
#include "core/host_parallel.hpp"
#include "core/validate.hpp"
#include "gknn/error.hpp"

namespace gknn {

struct Index::Impl {
  int64_t dim = 0;
  Metric metric = Metric::SquaredL2;
  Backend backend = Backend::Cpu;
  double p = 2.0;
  std::unique_ptr<detail::ResidentStore> store;
  std::vector<int64_t> ids;  // empty unless add_with_ids was used
  bool has_ids = false;
  // The plan's guess of the next queries' value facts when their scan overlaps the search (QueryFacts): at
  // first the facts of the rows added (a plan reads them merged with the rows' anyway), then those each search's
  // scan leaves (check_facts_guess). Searches may run concurrently.
  mutable std::mutex guess_mutex;
  mutable std::optional<detail::ValueStats> query_guess;
};

Index::Index(int64_t dimension, Metric metric, Backend backend) {
  GKNN_EXPECT(dimension > 0, ErrorCode::InvalidArgument, "Index: dimension must be positive (got ", dimension, ")");
  const Backend resolved = detail::resolve_backend(backend);
  impl_ = std::make_unique<Impl>();
  impl_->dim = dimension;
  impl_->metric = metric;
  impl_->backend = resolved;
  impl_->store = resolved == Backend::Cuda ? detail::cuda::make_store(dimension, 0) : detail::cpu::make_store(dimension);
}

Index::~Index() = default;
Index::Index(Index&&) noexcept = default;
Index& Index::operator=(Index&&) noexcept = default;

namespace detail {

ValueStats ResidentStore::append_unscanned(FloatView rows, std::string_view what) {
  const ValueStats stats =
      rows.memory == Memory::Device ? cuda::device_value_stats(rows, what) : scan_host_values(rows, what, host_team());
  append(rows, stats);
  return stats;
}

namespace {

/// 8-bit rows as contiguous floats, converted on the host team.
std::vector<float> byte_rows_to_floats(ByteView rows) {
  std::vector<float> out(static_cast<size_t>(rows.rows * rows.cols));
  const int parts = host_parts(rows.rows * rows.cols, int64_t(1) << 18);
  const int64_t per_part = (rows.rows + parts - 1) / parts;
  host_parallel(parts, [&](int part) {
    const int64_t end = std::min(rows.rows, (part + 1) * per_part);
    for (int64_t i = part * per_part; i < end; ++i)
      for (int64_t j = 0; j < rows.cols; ++j) out[static_cast<size_t>(i * rows.cols + j)] = rows.row(i)[j];
  });
  return out;
}

}  // namespace

ValueStats ResidentStore::append_bytes(ByteView rows, std::string_view what) {
  const std::vector<float> floats = byte_rows_to_floats(rows);
  return append_unscanned(FloatView{floats.data(), rows.rows, rows.cols, 0}, what);
}

}  // namespace detail

namespace {

constexpr std::string_view kAddWhat = "Index::add vectors";

void merge_query_guess(Index::Impl& impl, const detail::ValueStats& stats) {
  std::lock_guard<std::mutex> lock(impl.guess_mutex);
  const detail::ValueStats added = impl.metric == Metric::Cosine ? detail::ValueStats{false, false, 1.f} : stats;
  impl.query_guess = impl.query_guess ? impl.query_guess->merged(added) : added;
}

void append_rows(Index::Impl& impl, FloatView vectors) {
  // Where the rows are is checked before anything reads them (validation scans device memory on the device).
  GKNN_EXPECT(vectors.memory == Memory::Host || impl.backend == Backend::Cuda, ErrorCode::InvalidArgument,
              "Index::add: device-memory vectors need an index on the cuda backend");
  if (vectors.memory == Memory::Host && impl.metric != Metric::Cosine && vectors.cols == impl.dim) {
    // The checks of validate_matrix below, in its order (shape, then values), but the values are scanned by the
    // store as it stores them: the CUDA store scans them on the device after their upload, so that the host reads a
    // large base once (the pack into pinned memory) instead of twice. Same facts, same errors.
    detail::validate_shape(vectors, kAddWhat, true);
    return merge_query_guess(impl, impl.store->append_unscanned(vectors, kAddWhat));
  }
  const detail::ValueStats stats = detail::validate_matrix(vectors, kAddWhat, true);
  GKNN_EXPECT(vectors.cols == impl.dim, ErrorCode::InvalidArgument, "Index::add: vectors have dimension ",
              vectors.cols, ", the index has ", impl.dim);
  if (impl.metric == Metric::Cosine) {
    GKNN_EXPECT(vectors.memory == Memory::Host, ErrorCode::Unsupported,
                "Index::add: metric cosine with device-memory vectors: normalise them and use inner_product");
    const std::vector<float> n = detail::normalized_rows(vectors);
    // Normalised rows are no longer integers: the stats of the stored rows say so.
    impl.store->append(FloatView{n.data(), vectors.rows, vectors.cols, 0}, detail::ValueStats{false, false, 1.f});
  } else {
    impl.store->append(vectors, stats);
  }
  merge_query_guess(impl, stats);
}

void append_rows(Index::Impl& impl, ByteView vectors) {
  GKNN_EXPECT(vectors.memory == Memory::Host, ErrorCode::Unsupported,
              "Index::add: uint8 vectors in device memory are not supported: pass float32 device views");
  // validate_shape reads no value: the shape checks and messages of a float view of the same shape.
  detail::validate_shape(FloatView{reinterpret_cast<const float*>(vectors.data), vectors.rows, vectors.cols,
                                   vectors.stride},
                         kAddWhat, true);
  GKNN_EXPECT(vectors.cols == impl.dim, ErrorCode::InvalidArgument, "Index::add: vectors have dimension ",
              vectors.cols, ", the index has ", impl.dim);
  if (impl.metric == Metric::Cosine) {  // normalised on the host (as float rows are)
    const std::vector<float> floats = detail::byte_rows_to_floats(vectors);
    return append_rows(impl, FloatView{floats.data(), vectors.rows, vectors.cols, 0});
  }
  merge_query_guess(impl, impl.store->append_bytes(vectors, kAddWhat));
}

template <class View>
void add_rows(Index::Impl& impl, View vectors) {
  GKNN_EXPECT(!impl.has_ids || vectors.rows == 0, ErrorCode::InvalidArgument,
              "Index::add: this index has user ids; use add_with_ids for every batch");
  append_rows(impl, vectors);
}

template <class View>
void add_rows_with_ids(Index::Impl& impl, View vectors, const int64_t* ids) {
  GKNN_EXPECT(impl.has_ids || impl.store->size() == 0, ErrorCode::InvalidArgument,
              "Index::add_with_ids: the index already holds vectors without ids");
  GKNN_EXPECT(ids != nullptr || vectors.rows == 0, ErrorCode::InvalidArgument, "Index::add_with_ids: ids is null");
  append_rows(impl, vectors);
  impl.has_ids = true;
  impl.ids.insert(impl.ids.end(), ids, ids + vectors.rows);
}

}  // namespace

void Index::add(FloatView vectors) { add_rows(*impl_, vectors); }
void Index::add(ByteView vectors) { add_rows(*impl_, vectors); }
void Index::add_with_ids(FloatView vectors, const int64_t* ids) { add_rows_with_ids(*impl_, vectors, ids); }
void Index::add_with_ids(ByteView vectors, const int64_t* ids) { add_rows_with_ids(*impl_, vectors, ids); }

Result Index::search(FloatView queries, int64_t k) const {
  SearchParams params;
  params.k = k;
  params.metric = impl_->metric;
  params.p = impl_->p;
  return search(queries, params);
}

namespace {

/// The index's parameters for one search (metric and p from the index), validated against the queries.
SearchParams index_params(const Index::Impl& impl, FloatView queries, const SearchParams& params_in) {
  SearchParams params = params_in;
  GKNN_EXPECT(params.metric == impl.metric || params.metric == Metric::SquaredL2, ErrorCode::InvalidArgument,
              "Index::search: metric ", to_string(params.metric), " differs from the index metric ",
              to_string(impl.metric));
  params.metric = impl.metric;
  if (params.metric == Metric::Lp && params_in.metric != Metric::Lp) params.p = impl.p;
  GKNN_EXPECT(params.k > 0, ErrorCode::InvalidArgument, "Index::search: k must be positive (got ", params.k, ")");
  GKNN_EXPECT(impl.store->size() > 0, ErrorCode::InvalidArgument, "Index::search: the index is empty");
  GKNN_EXPECT(queries.memory == Memory::Host || impl.backend == Backend::Cuda, ErrorCode::InvalidArgument,
              "Index::search: device-memory queries need an index on the cuda backend");
  GKNN_EXPECT(queries.cols == impl.dim, ErrorCode::InvalidArgument, "Index::search: queries have dimension ",
              queries.cols, ", the index has ", impl.dim);
  return params;
}

/// The value facts of a search's queries. Their scan overlaps the device's search where that pays off: host
/// queries of a cuda index (the host only waits for the device meanwhile), of at least 64K values (below, the
/// scan costs less than handing it to a thread; Garcia's 4096 x 128 queries took 0.06-0.3 ms of a 0.7 ms call
/// before the device started). The search is then planned with a guess, the facts of the index's earlier queries
/// (at first, of its rows), and check() compares the scan's facts with it afterwards: NaN or Inf throws as an
/// upfront scan does (the output is then unspecified), and facts the guess does not cover (check_facts_guess:
/// fractions where it said integers, negative values, a larger magnitude) ask for the search to run again with
/// them. Every plan exact under the guess is exact under facts it covers.
class QueryFacts {
  /// GKNN_NO_SCAN_OVERLAP set (not "0"): the queries are scanned before the search, on the caller, as below 64K
  /// values (a diagnosis switch, issue 16; the search then plans with the scanned facts, never a guess).
  static bool overlap_disabled() {
    static const bool off = detail::env_switch_on("GKNN_NO_SCAN_OVERLAP");
    return off;
  }

 public:
  QueryFacts(const Index::Impl& impl, FloatView queries) : impl_(impl), queries_(queries) {
    detail::validate_shape(queries, "queries", true);
    constexpr int64_t kOverlapValues = int64_t(1) << 16;
    const bool overlap = impl.backend == Backend::Cuda && queries.memory == Memory::Host &&
                         impl.metric != Metric::Cosine && queries.rows * queries.cols >= kOverlapValues &&
                         !overlap_disabled();
    if (overlap) {
      std::lock_guard<std::mutex> lock(impl.guess_mutex);
      guess_ = impl.query_guess;
    }
    if (guess_) {
      // On one thread: the pool stays free for the search's own copies, and the device takes longer anyway.
      job_.emplace([this] { scanned_ = detail::scan_host_values(queries_, "queries", 1); });
      if (job_->started()) return;
      job_.reset();
      guess_.reset();
    }
    scanned_ = detail::validate_matrix(queries, "queries", true);
  }

  /// The facts to plan with.
  const detail::ValueStats& for_plan() const { return guess_ ? *guess_ : scanned_; }

  /// After the search: throws for NaN/Inf; the scanned facts when the search must run again with them.
  std::optional<detail::ValueStats> check() {
    if (!job_) return std::nullopt;
    job_->join();
    job_.reset();
    const detail::FactsGuessCheck verdict = detail::check_facts_guess(*guess_, scanned_);
    guess_.reset();
    {
      std::lock_guard<std::mutex> lock(impl_.guess_mutex);
      impl_.query_guess = verdict.next_guess;
    }
    if (verdict.covered) return std::nullopt;
    return scanned_;
  }

 private:
  const Index::Impl& impl_;
  FloatView queries_;
  std::optional<detail::ValueStats> guess_;
  detail::ValueStats scanned_;
  std::optional<detail::OverlapJob> job_;
};

/// The store's search of key-form queries through `spec`, under the exactness guard where its keys need it: the
/// candidates come from the store's own search, the exact keys from the rows where the store keeps them.
void guarded_store_search(const Index::Impl& impl, FloatView queries, const SearchParams& kp,
                          const detail::ValueStats& query_stats, const detail::OutputSpec& spec) {
  const detail::ResidentStore& store = *impl.store;
  detail::GuardPath resolved;
  const detail::GuardDecision guard = detail::guard_for(impl.backend, kp, queries.rows, store.size(), impl.dim,
                                                        store.facts().merged(query_stats), &resolved);
  if (!guard.bound) return store.search_into(queries, kp, query_stats, spec);
  const detail::GuardSource source =
      detail::store_guard_source(store, impl.backend, query_stats, kp.metric, kp.p, kp.threads);
  detail::write_guarded(source, queries, kp, resolved, *guard.bound, spec);
}

void search_store(const Index::Impl& impl, FloatView queries, const SearchParams& params,
                  const detail::ValueStats& query_stats, detail::OutputSpec spec) {
  const SearchParams kp = detail::key_params(params, impl.store->size());
  spec.metric = params.metric;
  spec.p = params.p;
  spec.k = params.k;
  if (impl.has_ids) {
    spec.ids = impl.ids.data();
    spec.id_count = static_cast<int64_t>(impl.ids.size());
  }
  if (queries.rows == 0) return;
  if (params.metric != Metric::Cosine) return guarded_store_search(impl, queries, kp, query_stats, spec);
  GKNN_EXPECT(queries.memory == Memory::Host, ErrorCode::Unsupported,
              "Index::search: metric cosine with device-memory queries: normalise them and use inner_product");
  const std::vector<float> n = detail::normalized_rows(queries);
  guarded_store_search(impl, FloatView{n.data(), queries.rows, queries.cols, 0}, kp,
                       detail::ValueStats{false, false, 1.f}, spec);
}


}  // namespace

Result Index::search(FloatView queries, const SearchParams& params_in) const {
  detail::CallTimer timer(params_in.stats);
  QueryFacts facts(*impl_, queries);
  const SearchParams params = index_params(*impl_, queries, params_in);
  timer.checks_done();
  Result result;
  result.rows = queries.rows;
  result.k = params.k;
  detail::OutputSpec spec;
  spec.destination = [&result, &queries, &params] {
    result = detail::allocate_result_populated(queries.rows, params.k);
    return detail::view_of(result);
  };
  search_store(*impl_, queries, params, facts.for_plan(), spec);
  if (const auto scanned = facts.check()) search_store(*impl_, queries, params, *scanned, spec);
  return result;
}

void Index::search(FloatView queries, const SearchParams& params_in, const ResultView& out) const {
  detail::CallTimer timer(params_in.stats);
  QueryFacts facts(*impl_, queries);
  const SearchParams params = index_params(*impl_, queries, params_in);
  detail::validate_result_view(out, queries.rows, params.k);
  timer.checks_done();
  GKNN_EXPECT(out.memory == Memory::Host || impl_->backend == Backend::Cuda, ErrorCode::InvalidArgument,
              "Index::search: device-memory results need an index on the cuda backend");
  detail::OutputSpec spec;
  spec.memory = out.memory;
  spec.destination = [out] { return out; };
  search_store(*impl_, queries, params, facts.for_plan(), spec);
  if (const auto scanned = facts.check()) search_store(*impl_, queries, params, *scanned, spec);
}

void Index::reset() {
  {
    std::lock_guard<std::mutex> lock(impl_->guess_mutex);
    impl_->query_guess.reset();
  }
  impl_->store->clear();
  impl_->ids.clear();
  impl_->has_ids = false;
}

int64_t Index::size() const noexcept { return impl_->store->size(); }
int64_t Index::dimension() const noexcept { return impl_->dim; }
Metric Index::metric() const noexcept { return impl_->metric; }
Backend Index::backend() const noexcept { return impl_->backend; }

void Index::set_p(double p) {
  GKNN_EXPECT(p > 0, ErrorCode::InvalidArgument, "Index::set_p: p must be > 0 (got ", p, ")");
  impl_->p = p;
}

}  // namespace gknn
