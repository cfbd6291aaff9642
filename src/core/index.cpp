// index.cpp: the FAISS-style Index: validation and ids here, storage and search in the backend's store.
#include "gknn/index.hpp"

#include <vector>

#include "core/backend.hpp"
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
  detail::validate_matrix(vectors, "Index::add vectors", true);
  GKNN_EXPECT(vectors.cols == impl.dim, ErrorCode::InvalidArgument, "Index::add: vectors have dimension ",
              vectors.cols, ", the index has ", impl.dim);
  if (impl.metric == Metric::Cosine) {
    const std::vector<float> n = detail::normalized_rows(vectors);
    impl.store->append(FloatView{n.data(), vectors.rows, vectors.cols, 0});
  } else {
    impl.store->append(vectors);
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

Result Index::search(FloatView queries, const SearchParams& params_in) const {
  SearchParams params = params_in;
  GKNN_EXPECT(params.metric == impl_->metric || params.metric == Metric::SquaredL2, ErrorCode::InvalidArgument,
              "Index::search: metric ", to_string(params.metric), " differs from the index metric ",
              to_string(impl_->metric));
  params.metric = impl_->metric;
  if (params.metric == Metric::Lp && params_in.metric != Metric::Lp) params.p = impl_->p;
  GKNN_EXPECT(params.k > 0, ErrorCode::InvalidArgument, "Index::search: k must be positive (got ", params.k, ")");
  GKNN_EXPECT(impl_->store->size() > 0, ErrorCode::InvalidArgument, "Index::search: the index is empty");
  detail::validate_matrix(queries, "queries", true);
  GKNN_EXPECT(queries.cols == impl_->dim, ErrorCode::InvalidArgument, "Index::search: queries have dimension ",
              queries.cols, ", the index has ", impl_->dim);
  const SearchParams kp = detail::key_params(params, impl_->store->size());
  detail::KeyResult keys;
  if (queries.rows == 0) {
    keys = Result{0, kp.k, {}, {}};
  } else if (params.metric == Metric::Cosine) {
    const std::vector<float> n = detail::normalized_rows(queries);
    keys = impl_->store->search(FloatView{n.data(), queries.rows, queries.cols, 0}, kp);
  } else {
    keys = impl_->store->search(queries, kp);
  }
  Result out = detail::finalize(std::move(keys), params.metric, params.p, params.k);
  if (impl_->has_ids)
    for (auto& i : out.indices)
      if (i >= 0) i = impl_->ids[static_cast<size_t>(i)];
  return out;
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
