// search.cpp: the public entry points: validate, rewrite to key form, choose the backend, finalise.
#include "gknn/search.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/backend.hpp"
#include "core/call_timer.hpp"
#include "core/finalize.hpp"
#include "core/guard.hpp"
#include "core/validate.hpp"
#include "gknn/algorithms.hpp"
#include "gknn/error.hpp"

namespace gknn {
namespace {

bool on_device(FloatView v) { return v.memory == Memory::Device; }

/// Device-memory inputs or outputs can only be served by the cuda backend.
Backend backend_for(const SearchParams& params, bool device_memory) {
  if (!device_memory) return detail::resolve_backend(params);
  GKNN_EXPECT(params.backend != Backend::Cpu, ErrorCode::InvalidArgument,
              "device-memory inputs or outputs need the cuda backend (backend cpu was requested)");
  return detail::resolve_backend(Backend::Cuda);
}

/// The guarded search of rows on `backend` written through `spec`: candidates from the backend, exact keys where
/// the base is.
void guarded_search(Backend backend, FloatView base, FloatView queries, const SearchParams& kp,
                    const detail::ValueStats& bs, const detail::ValueStats& qs, const detail::GuardPath& resolved,
                    const detail::KeyErrorBound& bound, const detail::OutputSpec& spec) {
  detail::GuardSource source;
  source.backend = backend;
  source.rows = base.rows;
  if (on_device(base)) {
    source.max_row_norm_of = [&] { return detail::cuda::max_row_norm(base); };
    source.exact_keys = [&](FloatView q, const detail::KeyResult& c) {
      return detail::cuda::exact_keys(base, q, c, kp.metric, kp.p);
    };
  } else {
    source.max_row_norm_of = [&] { return detail::host_max_row_norm(base, kp.threads); };
    source.exact_keys = [&](FloatView q, const detail::KeyResult& c) {
      return detail::host_exact_keys(base, q, c, kp.metric, kp.p, kp.threads);
    };
  }
  source.candidates = [&](FloatView q, const SearchParams& pass) {
    if (backend != Backend::Cuda) return detail::cpu::search(base, q, pass);
    detail::KeyResult keys;
    detail::cuda::search_into(base, q, pass, bs, qs, detail::key_output(keys, q.rows, pass.k));
    return keys;
  };
  if (backend == Backend::Cuda)  // the certificate taken on the device, in the search (the base uploaded once per pass)
    source.search_into = [&](FloatView q, const SearchParams& pass, const detail::OutputSpec& out) {
      detail::cuda::search_into(base, q, pass, bs, qs, out);
    };
  detail::write_guarded(source, queries, kp, resolved, bound, spec);
}

/// A validated search, run on the chosen backend and written through `spec`.
void run_search(FloatView base, FloatView queries, const SearchParams& params, const detail::ValueStats& bs,
                const detail::ValueStats& qs, const detail::OutputSpec& spec, bool device_memory) {
  const Backend backend = backend_for(params, device_memory);
  const SearchParams kp = detail::key_params(params, base.rows);
  if (queries.rows == 0) return;
  auto dispatch = [&](FloatView b, FloatView q, const detail::ValueStats& b_stats, const detail::ValueStats& q_stats) {
    detail::GuardPath resolved;
    const detail::GuardDecision guard =
        detail::guard_for(backend, kp, q.rows, b.rows, b.cols, b_stats.merged(q_stats), &resolved);
    if (guard.bound) return guarded_search(backend, b, q, kp, b_stats, q_stats, resolved, *guard.bound, spec);
    if (backend == Backend::Cuda) return detail::cuda::search_into(b, q, kp, b_stats, q_stats, spec);
    detail::finalize_into(detail::cpu::search(b, q, kp), spec, kp.threads);
  };
  if (params.metric != Metric::Cosine) return dispatch(base, queries, bs, qs);
  GKNN_EXPECT(!on_device(base) && !on_device(queries), ErrorCode::Unsupported,
              "metric cosine with device-memory inputs: normalise the rows and use inner_product");
  const std::vector<float> b = detail::normalized_rows(base), q = detail::normalized_rows(queries);
  const detail::ValueStats unit{false, false, 1.f};  // normalised rows: fractions in [-1, 1]
  dispatch(FloatView{b.data(), base.rows, base.cols, 0}, FloatView{q.data(), queries.rows, queries.cols, 0}, unit,
           unit);
}

detail::OutputSpec output_spec(const SearchParams& params) {
  detail::OutputSpec spec;
  spec.metric = params.metric;
  spec.p = params.p;
  spec.k = params.k;
  return spec;
}

std::vector<float> to_float(ByteView m) {
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
#pragma omp parallel for schedule(static) if (m.rows * m.cols > (int64_t(1) << 20))
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) out[static_cast<size_t>(i * m.cols + j)] = m.row(i)[j];
  return out;
}

}  // namespace

void search(FloatView base, FloatView queries, const SearchParams& params, const ResultView& out) {
  detail::CallTimer timer(params.stats);
  detail::ValueStats bs, qs;
  detail::validate_search(base, queries, params, &bs, &qs);
  detail::validate_result_view(out, queries.rows, params.k);
  timer.checks_done();
  detail::OutputSpec spec = output_spec(params);
  spec.memory = out.memory;
  spec.destination = [out] { return out; };
  run_search(base, queries, params, bs, qs, spec,
             on_device(base) || on_device(queries) || out.memory == Memory::Device);
}

Result search(FloatView base, FloatView queries, const SearchParams& params) {
  detail::CallTimer timer(params.stats);
  detail::ValueStats bs, qs;
  detail::validate_search(base, queries, params, &bs, &qs);
  timer.checks_done();
  Result result;
  result.rows = queries.rows;
  result.k = params.k;
  detail::OutputSpec spec = output_spec(params);
  spec.destination = [&result, &queries, &params] {
    result = detail::allocate_result_populated(queries.rows, params.k);
    return detail::view_of(result);
  };
  run_search(base, queries, params, bs, qs, spec, on_device(base) || on_device(queries));
  return result;
}

SearchPlan explain_search(FloatView base, FloatView queries, const SearchParams& params) {
  detail::ValueStats bs, qs;
  detail::validate_search(base, queries, params, &bs, &qs);
  SearchPlan plan;
  const bool device_memory = on_device(base) || on_device(queries);
  plan.backend = device_memory ? BackendChoice{backend_for(params, true), "device-memory inputs"} : choose_backend(params);
  const SearchParams kp = detail::key_params(params, base.rows);
  // Cosine searches normalised rows: fractions, as run_search tells the backend.
  const detail::ValueStats facts = params.metric == Metric::Cosine ? detail::ValueStats{false, false, 1.f} : bs.merged(qs);
  detail::explain_on(plan.backend.backend, kp, queries.rows, base.rows, base.cols, facts, plan);
  const detail::GuardDecision guard = detail::decide_guard(kp, plan.distance, facts, base.cols);
  plan.guarded = guard.bound.has_value();
  plan.guard_reason = guard.reason;
  if (plan.guarded)
    plan.guard_reason +=
        "; k' = " + std::to_string(detail::first_candidate_count(kp.k, base.rows, *guard.bound)) + " first";
  return plan;
}

std::string to_string(const SearchPlan& plan) {
  return "backend      " + to_string(plan.backend.backend) + " (" + plan.backend.reason + ")\n" +
         "distance     " + to_string(plan.distance) + " (" + plan.distance_reason + ")\n" +
         "select       " + (plan.selects_itself ? std::string("none") : to_string(plan.select)) + " (" +
         plan.select_reason + ")\n" +
         "guard        " + (plan.guarded ? "re-rank" : "none") + " (" + plan.guard_reason + ")\n";
}

Result search(ByteView base, ByteView queries, const SearchParams& params) {
  GKNN_EXPECT(base.data || base.rows == 0, ErrorCode::InvalidArgument, "base: null data pointer");
  GKNN_EXPECT(queries.data || queries.rows == 0, ErrorCode::InvalidArgument, "queries: null data pointer");
  GKNN_EXPECT(base.memory == Memory::Host && queries.memory == Memory::Host, ErrorCode::Unsupported,
              "uint8 views in device memory are not supported: pass float32 device views");
  const std::vector<float> b = to_float(base), q = to_float(queries);
  return search(FloatView{b.data(), base.rows, base.cols, 0}, FloatView{q.data(), queries.rows, queries.cols, 0},
                params);
}

namespace {

void check_select(FloatView values, int64_t k) {
  GKNN_EXPECT(k > 0, ErrorCode::InvalidArgument, "select_k: k must be positive (got ", k, ")");
  GKNN_EXPECT(values.cols > 0, ErrorCode::InvalidArgument, "select_k: rows have length 0");
  GKNN_EXPECT(values.rows >= 0, ErrorCode::InvalidArgument, "select_k: negative row count ", values.rows);
  GKNN_EXPECT(values.stride == 0 || values.stride >= values.cols, ErrorCode::InvalidArgument,
              "select_k: row stride ", values.stride, " is smaller than the row length ", values.cols);
  GKNN_EXPECT(values.rows == 0 || values.data, ErrorCode::InvalidArgument, "select_k: null values pointer");
}

/// NaN check over all threads for large inputs (a 1024 x 2^20 select is 1G values); the first NaN row is then
/// re-scanned to name the column, so the message does not depend on the thread count. Device views are scanned
/// on their device, with the same message.
void reject_nan(FloatView values) {
  if (values.memory == Memory::Device) return detail::cuda::device_reject_nan(values, "select_k");
  const bool large = values.rows * values.cols > (int64_t(1) << 18);
  int64_t first_nan_row = values.rows;
#pragma omp parallel for schedule(static) reduction(min : first_nan_row) if (large)
  for (int64_t i = 0; i < values.rows; ++i) {
    bool nan = false;
    for (int64_t j = 0; j < values.cols; ++j) nan |= std::isnan(values.row(i)[j]);
    if (nan) first_nan_row = std::min(first_nan_row, i);
  }
  if (first_nan_row < values.rows)
    detail::reject_nan_row(values.row(first_nan_row), values.cols, "select_k", first_nan_row);
}

/// How select_k's keys become values: Ascending keys are the values, Descending selects on negated values (exact)
/// and negates back (inner product's key -> value), padding +inf / -inf.
detail::OutputSpec select_output(Order order, int64_t k) {
  detail::OutputSpec spec;
  spec.metric = order == Order::Descending ? Metric::InnerProduct : Metric::SquaredL2;
  spec.k = k;
  return spec;
}

/// The selection on the device, written through `spec`: device views (or a device destination) need the cuda
/// backend, whatever Auto would choose for host rows.
void select_on_device(FloatView values, const int64_t* labels, int64_t k, Order order, const SelectParams& params,
                      const detail::OutputSpec& spec) {
  GKNN_EXPECT(params.backend != Backend::Cpu, ErrorCode::InvalidArgument,
              "select_k: device-memory values or outputs need the cuda backend (backend cpu was requested)");
  (void)detail::resolve_backend(Backend::Cuda);  // Unsupported when CUDA is not built or no device is visible
  reject_nan(values);
  if (values.rows == 0) return;
  detail::cuda::select_into(values, labels, std::min(k, values.cols), order == Order::Descending, params, spec);
}

}  // namespace

Result select_k(FloatView values, const int64_t* labels, int64_t k, Order order, const SelectParams& params) {
  check_select(values, k);
  // Device views, and host rows that the cuda backend selects (staged in row tiles, negated and finalised on the
  // device, copied out through pinned slots): one path.
  if (values.memory == Memory::Device || detail::resolve_backend(params) == Backend::Cuda) {
    Result result;  // 0 rows stay empty; else the destination makes it while the device selects
    result.k = k;
    detail::OutputSpec spec = select_output(order, k);
    spec.destination = [&result, &values, k] {
      result = detail::allocate_result_populated(values.rows, k);
      return detail::view_of(result);
    };
    select_on_device(values, labels, k, order, params, spec);
    return result;
  }
  reject_nan(values);
  // The CPU's keys are ascending: a descending request selects on negated values (exact), then negates back.
  std::vector<float> negated;
  FloatView keys = values;
  const bool large = values.rows * values.cols > (int64_t(1) << 18);
  if (order == Order::Descending) {
    negated.resize(static_cast<size_t>(values.rows * values.cols));
#pragma omp parallel for schedule(static) if (large)
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
  Result r = detail::cpu::select_k(keys, labels, std::min(k, values.cols), params);
  return detail::finalize(std::move(r), order == Order::Descending ? Metric::InnerProduct : Metric::SquaredL2, 2.0,
                          k);
}

void select_k(FloatView values, const int64_t* labels, int64_t k, Order order, const SelectParams& params,
              const ResultView& out) {
  check_select(values, k);
  detail::validate_result_view(out, values.rows, k);
  if (values.memory == Memory::Device || out.memory == Memory::Device) {
    detail::OutputSpec spec = select_output(order, k);
    spec.memory = out.memory;
    spec.destination = [out] { return out; };
    return select_on_device(values, labels, k, order, params, spec);
  }
  const Result r = select_k(values, labels, k, order, params);  // host rows into host storage: one copy
  std::copy(r.distances.begin(), r.distances.end(), out.distances);
  std::copy(r.indices.begin(), r.indices.end(), out.indices);
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

bool distance_requires_integer_data(DistanceAlgorithm algorithm) {
  const catalogue::DistanceInfo* info = catalogue::find(algorithm);  // algorithms.def's precision column
  return info && (info->precision == catalogue::integer_only || info->precision == catalogue::integer_keys);
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
