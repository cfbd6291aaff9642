// search.cpp: the public entry points: validate, rewrite to key form, choose the backend, finalise.
#include "gknn/search.hpp"

#include <cmath>
#include <vector>

#include "core/backend.hpp"
#include "core/finalize.hpp"
#include "core/validate.hpp"
#include "gknn/error.hpp"

namespace gknn {
namespace {

detail::KeyResult run_backend(Backend backend, FloatView base, FloatView queries, const SearchParams& kp) {
  if (backend == Backend::Cuda) return detail::cuda::search(base, queries, kp);
  return detail::cpu::search(base, queries, kp);
}

std::vector<float> to_float(ByteView m) {
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) out[static_cast<size_t>(i * m.cols + j)] = m.row(i)[j];
  return out;
}

}  // namespace

Result search(FloatView base, FloatView queries, const SearchParams& params) {
  detail::validate_search(base, queries, params);
  const Backend backend = detail::resolve_backend(params.backend);
  const SearchParams kp = detail::key_params(params, base.rows);
  if (queries.rows == 0) return detail::finalize(Result{0, kp.k, {}, {}}, params.metric, params.p, params.k);
  if (params.metric == Metric::Cosine) {
    const std::vector<float> b = detail::normalized_rows(base), q = detail::normalized_rows(queries);
    const FloatView bn{b.data(), base.rows, base.cols, 0}, qn{q.data(), queries.rows, queries.cols, 0};
    return detail::finalize(run_backend(backend, bn, qn, kp), params.metric, params.p, params.k);
  }
  return detail::finalize(run_backend(backend, base, queries, kp), params.metric, params.p, params.k);
}

Result search(ByteView base, ByteView queries, const SearchParams& params) {
  GKNN_EXPECT(base.data || base.rows == 0, ErrorCode::InvalidArgument, "base: null data pointer");
  GKNN_EXPECT(queries.data || queries.rows == 0, ErrorCode::InvalidArgument, "queries: null data pointer");
  const std::vector<float> b = to_float(base), q = to_float(queries);
  return search(FloatView{b.data(), base.rows, base.cols, 0}, FloatView{q.data(), queries.rows, queries.cols, 0},
                params);
}

Result select_k(FloatView values, const int64_t* labels, int64_t k, Order order, const SelectParams& params) {
  GKNN_EXPECT(k > 0, ErrorCode::InvalidArgument, "select_k: k must be positive (got ", k, ")");
  GKNN_EXPECT(values.cols > 0, ErrorCode::InvalidArgument, "select_k: rows have length 0");
  GKNN_EXPECT(values.stride == 0 || values.stride >= values.cols, ErrorCode::InvalidArgument,
              "select_k: row stride ", values.stride, " is smaller than the row length ", values.cols);
  // Keys are ascending: a descending request selects on negated values (exact), then negates back.
  std::vector<float> negated;
  FloatView keys = values;
  for (int64_t i = 0; i < values.rows; ++i)
    for (int64_t j = 0; j < values.cols; ++j)
      GKNN_EXPECT(!std::isnan(values.row(i)[j]), ErrorCode::InvalidArgument, "select_k: row ", i, " column ", j,
                  " is NaN");
  if (order == Order::Descending) {
    negated.resize(static_cast<size_t>(values.rows * values.cols));
    for (int64_t i = 0; i < values.rows; ++i)
      for (int64_t j = 0; j < values.cols; ++j) negated[static_cast<size_t>(i * values.cols + j)] = -values.row(i)[j];
    keys = FloatView{negated.data(), values.rows, values.cols, 0};
  }
  const int64_t label_stride = values.row_stride();
  std::vector<int64_t> packed_labels;
  if (labels && order == Order::Descending && label_stride != values.cols) {
    packed_labels.resize(static_cast<size_t>(values.rows * values.cols));
    for (int64_t i = 0; i < values.rows; ++i)
      for (int64_t j = 0; j < values.cols; ++j)
        packed_labels[static_cast<size_t>(i * values.cols + j)] = labels[i * label_stride + j];
    labels = packed_labels.data();
  }
  const int64_t k_eff = std::min(k, values.cols);
  const Backend backend = detail::resolve_backend(params.backend);
  Result r = backend == Backend::Cuda ? detail::cuda::select_k(keys, labels, k_eff, params)
                                      : detail::cpu::select_k(keys, labels, k_eff, params);
  return detail::finalize(std::move(r), order == Order::Descending ? Metric::InnerProduct : Metric::SquaredL2, 2.0,
                          k);
}

std::vector<DistanceAlgorithm> distance_algorithms(Backend backend, Metric metric) {
  return backend_available(backend) ? compiled_distance_algorithms(backend, metric) : std::vector<DistanceAlgorithm>{};
}

std::vector<SelectCapability> select_algorithms(Backend backend) {
  return backend_available(backend) ? compiled_select_algorithms(backend) : std::vector<SelectCapability>{};
}

std::vector<DistanceAlgorithm> compiled_distance_algorithms(Backend backend, Metric metric) {
  if (backend == Backend::Cpu) return detail::cpu::distance_algorithms(metric);
  if (backend == Backend::Cuda) return detail::cuda::distance_algorithms(metric);  // {} when not compiled in
  return {};
}

std::vector<SelectCapability> compiled_select_algorithms(Backend backend) {
  if (backend == Backend::Cpu) return detail::cpu::select_algorithms();
  if (backend == Backend::Cuda) return detail::cuda::select_algorithms();
  return {};
}

bool backend_available(Backend backend) {
  if (backend == Backend::Cuda) return detail::cuda::available();
  return true;
}

bool backend_compiled(Backend backend) {
#ifdef GKNN_HAS_CUDA
  constexpr bool cuda = true;
#else
  constexpr bool cuda = false;
#endif
  return backend != Backend::Cuda || cuda;
}

}  // namespace gknn
