// index.cpp: the FAISS-style Index: validation and ids here, storage and search in the backend's store.
#include "gknn/index.hpp"

#include <vector>

#include "core/backend.hpp"
#include "core/call_timer.hpp"
#include "core/finalize.hpp"
#include "core/validate.hpp"
#include "gknn/error.hpp"

namespace gknn {

struct Index::Impl {
  int64_t dim;
  Metric metric;
  Backend backend;
  double p = 2.0;
  std::unique_ptr<detail::ResidentStore> store;
  std::vector<int64_t> ids;  // empty unless add_with_ids was used
  bool has_ids = false;
};

Index::Index(int64_t dimension, Metric metric, Backend backend) {
  GKNN_EXPECT(dimension > 0, ErrorCode::InvalidArgument, "Index: dimension must be positive (got ", dimension, ")");
  const Backend resolved = detail::resolve_backend(backend);
  impl_ = std::make_unique<Impl>(Impl{dimension, metric, resolved, 2.0, nullptr, {}, false});
  impl_->store = resolved == Backend::Cuda ? detail::cuda::make_store(dimension, 0) : detail::cpu::make_store(dimension);
}

Index::~Index() = default;
Index::Index(Index&&) noexcept = default;
Index& Index::operator=(Index&&) noexcept = default;

namespace {
void append_rows(Index::Impl& impl, FloatView vectors) {
  // Where the rows are is checked before anything reads them (validation scans device memory on the device).
  GKNN_EXPECT(vectors.memory == Memory::Host || impl.backend == Backend::Cuda, ErrorCode::InvalidArgument,
              "Index::add: device-memory vectors need an index on the cuda backend");
  const detail::ValueStats stats = detail::validate_matrix(vectors, "Index::add vectors", true);
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
}
}  // namespace

void Index::add(FloatView vectors) {
  GKNN_EXPECT(!impl_->has_ids || vectors.rows == 0, ErrorCode::InvalidArgument,
              "Index::add: this index has user ids; use add_with_ids for every batch");
  append_rows(*impl_, vectors);
}

void Index::add_with_ids(FloatView vectors, const int64_t* ids) {
  GKNN_EXPECT(impl_->has_ids || impl_->store->size() == 0, ErrorCode::InvalidArgument,
              "Index::add_with_ids: the index already holds vectors without ids");
  GKNN_EXPECT(ids != nullptr || vectors.rows == 0, ErrorCode::InvalidArgument, "Index::add_with_ids: ids is null");
  append_rows(*impl_, vectors);
  impl_->has_ids = true;
  impl_->ids.insert(impl_->ids.end(), ids, ids + vectors.rows);
}

Result Index::search(FloatView queries, int64_t k) const {
  SearchParams params;
  params.k = k;
  params.metric = impl_->metric;
  params.p = impl_->p;
  return search(queries, params);
}

namespace {

/// The index's parameters for one search (metric and p from the index), validated against the queries.
SearchParams index_params(const Index::Impl& impl, FloatView queries, const SearchParams& params_in,
                          detail::ValueStats* query_stats) {
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
  *query_stats = detail::validate_matrix(queries, "queries", true);
  GKNN_EXPECT(queries.cols == impl.dim, ErrorCode::InvalidArgument, "Index::search: queries have dimension ",
              queries.cols, ", the index has ", impl.dim);
  return params;
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
  if (params.metric != Metric::Cosine) return impl.store->search_into(queries, kp, query_stats, spec);
  GKNN_EXPECT(queries.memory == Memory::Host, ErrorCode::Unsupported,
              "Index::search: metric cosine with device-memory queries: normalise them and use inner_product");
  const std::vector<float> n = detail::normalized_rows(queries);
  impl.store->search_into(FloatView{n.data(), queries.rows, queries.cols, 0}, kp, detail::ValueStats{false, false, 1.f},
                          spec);
}


}  // namespace

Result Index::search(FloatView queries, const SearchParams& params_in) const {
  detail::CallTimer timer(params_in.stats);
  detail::ValueStats qs;
  const SearchParams params = index_params(*impl_, queries, params_in, &qs);
  timer.checks_done();
  Result result;
  result.rows = queries.rows;
  result.k = params.k;
  detail::OutputSpec spec;
  spec.destination = [&result, &queries, &params] {
    result = detail::allocate_result_populated(queries.rows, params.k);
    return detail::view_of(result);
  };
  search_store(*impl_, queries, params, qs, spec);
  return result;
}

void Index::search(FloatView queries, const SearchParams& params_in, const ResultView& out) const {
  detail::CallTimer timer(params_in.stats);
  detail::ValueStats qs;
  const SearchParams params = index_params(*impl_, queries, params_in, &qs);
  detail::validate_result_view(out, queries.rows, params.k);
  timer.checks_done();
  GKNN_EXPECT(out.memory == Memory::Host || impl_->backend == Backend::Cuda, ErrorCode::InvalidArgument,
              "Index::search: device-memory results need an index on the cuda backend");
  detail::OutputSpec spec;
  spec.memory = out.memory;
  spec.destination = [out] { return out; };
  search_store(*impl_, queries, params, qs, spec);
}

void Index::reset() {
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
