#include "core/validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "core/backend.hpp"
#include "core/host_parallel.hpp"
#include "core/value_facts.hpp"
#include "gknn/error.hpp"
#include "gknn/info.hpp"

namespace gknn::detail {
namespace {

/// The facts of one row (value_facts.hpp: the definition shared with the device scan).
ValueBits row_facts(const float* row, int64_t n) {
  ValueBits facts;
  for (int64_t j = 0; j < n; ++j) facts.add(row[j]);
  return facts;
}

}  // namespace

void reject_non_finite_row(const float* row, int64_t cols, std::string_view what, int64_t row_index) {
  for (int64_t j = 0; j < cols; ++j)
    GKNN_EXPECT(std::isfinite(row[j]), ErrorCode::InvalidArgument, what, " row ", row_index, " column ", j, " is ",
                row[j], ": NaN and Inf are not valid coordinates");
  fail(ErrorCode::Internal, what, " row ", row_index, " was reported non-finite, but its values are finite");
}

void reject_nan_row(const float* row, int64_t cols, std::string_view what, int64_t row_index) {
  for (int64_t j = 0; j < cols; ++j)
    GKNN_EXPECT(!std::isnan(row[j]), ErrorCode::InvalidArgument, what, ": row ", row_index, " column ", j, " is NaN");
  fail(ErrorCode::Internal, what, " row ", row_index, " was reported to hold a NaN, but it holds none");
}

void validate_shape(FloatView m, std::string_view what, bool allow_empty_rows) {
  GKNN_EXPECT(m.rows >= 0 && m.cols >= 0, ErrorCode::InvalidArgument, what, ": negative shape ", m.rows, "x", m.cols);
  GKNN_EXPECT(allow_empty_rows || m.rows > 0, ErrorCode::InvalidArgument, what, " is empty (0 rows)");
  GKNN_EXPECT(m.cols > 0, ErrorCode::InvalidArgument, what, " has dimension 0");
  GKNN_EXPECT(m.stride == 0 || m.stride >= m.cols, ErrorCode::InvalidArgument, what, ": row stride ", m.stride,
              " is smaller than the dimension ", m.cols);
  GKNN_EXPECT(m.rows == 0 || m.data != nullptr, ErrorCode::InvalidArgument, what, ": null data pointer");
}

ValueStats validate_matrix(FloatView m, std::string_view what, bool allow_empty_rows) {
  validate_shape(m, what, allow_empty_rows);
  if (m.memory == Memory::Device) return cuda::device_value_stats(m, what);  // the same facts, scanned there
  return scan_host_values(m, what, host_team());
}

ValueStats scan_host_values(FloatView m, std::string_view what, int max_parts) {
  // One pass: finiteness (required) and the value facts (for exact lower-precision paths), in row ranges over the
  // host team for large inputs. A part holds at least 256K values (~30 us of scan): waking the team's sleeping
  // threads costs tens of microseconds each, and Garcia's 4096 x 128 queries in 16 parts of 32K took 0.17-0.96 ms
  // on the H100's host against 0.06 ms on one thread. The loop only accumulates; the error path re-scans the first
  // failing row to name the column, so the message is the same whatever the thread count.
  struct Part {
    ValueBits facts;
    int64_t first_bad_row;
  };
  constexpr int64_t kValuesPerPart = int64_t(1) << 18;
  const int parts = std::min(std::max(1, max_parts), host_parts(m.rows * m.cols, kValuesPerPart));
  std::vector<Part> part_facts(static_cast<size_t>(parts), Part{ValueBits{}, m.rows});
  const int64_t rows_per_part = (m.rows + parts - 1) / parts;
  host_parallel(parts, [&](int part) {
    Part out{ValueBits{}, m.rows};  // accumulated here, stored once: the parts share cache lines
    const int64_t end = std::min(m.rows, (part + 1) * rows_per_part);
    for (int64_t i = part * rows_per_part; i < end; ++i) {
      const ValueBits row = row_facts(m.row(i), m.cols);
      out.facts.merge(row);
      if (!row.finite() && out.first_bad_row == m.rows) out.first_bad_row = i;
    }
    part_facts[static_cast<size_t>(part)] = out;
  });
  ValueBits facts;
  int64_t first_bad_row = m.rows;
  for (const Part& p : part_facts) {
    facts.merge(p.facts);
    first_bad_row = std::min(first_bad_row, p.first_bad_row);
  }
  if (first_bad_row < m.rows) reject_non_finite_row(m.row(first_bad_row), m.cols, what, first_bad_row);
  return ValueStats{facts.integral(), facts.nonnegative(), facts.max_abs(), true};
}

FactsGuessCheck check_facts_guess(const ValueStats& guess, const ValueStats& scanned) {
  // Every exact lower-precision path needs integers (fused, fp16_mma: value_facts.hpp's facts decide them), so a
  // plan made for non-integral facts relies on none of them and holds for any values; a plan made for integers
  // holds for integers within its sign and magnitude. Revisit when a float path depends on the facts.
  const bool covered = !guess.integral || (scanned.integral && (!guess.nonnegative || scanned.nonnegative) &&
                                           scanned.max_abs <= guess.max_abs);
  // The next guess widens while the queries stay of one kind (integers or not), so that batches whose largest
  // value differs do not miss in turn, and follows the queries when their kind changes.
  const ValueStats next = covered && guess.integral == scanned.integral ? guess.merged(scanned) : scanned;
  return {covered, next};
}

void validate_result_view(const ResultView& out, int64_t rows, int64_t k) {
  GKNN_EXPECT(out.rows == rows && out.k == k, ErrorCode::InvalidArgument, "result storage is shaped ", out.rows,
              " x ", out.k, ", the search returns ", rows, " x ", k);
  GKNN_EXPECT(rows == 0 || (out.distances && out.indices), ErrorCode::InvalidArgument,
              "result storage: null distances or indices pointer");
  GKNN_EXPECT(reinterpret_cast<uintptr_t>(out.distances) % alignof(float) == 0 &&
                  reinterpret_cast<uintptr_t>(out.indices) % alignof(int64_t) == 0,
              ErrorCode::InvalidArgument, "result storage: distances must be ", alignof(float),
              "-byte and indices ", alignof(int64_t), "-byte aligned");
}

void validate_search(FloatView base, FloatView queries, const SearchParams& params, ValueStats* base_stats,
                     ValueStats* query_stats) {
  GKNN_EXPECT(params.k > 0, ErrorCode::InvalidArgument, "k must be positive (got ", params.k, ")");
  GKNN_EXPECT(params.metric != Metric::Lp || (params.p > 0 && std::isfinite(params.p)), ErrorCode::InvalidArgument,
              "metric lp needs a finite p > 0 (got p = ", params.p, ")");
  GKNN_EXPECT(params.threads >= 0 && params.threads <= kMaxThreads, ErrorCode::InvalidArgument, "threads must be in [0, ",
              kMaxThreads, "] (got ", params.threads, ")");
  const ValueStats bs = validate_matrix(base, "base", false), qs = validate_matrix(queries, "queries", true);
  if (base_stats) *base_stats = bs;
  if (query_stats) *query_stats = qs;
  GKNN_EXPECT(base.cols == queries.cols, ErrorCode::InvalidArgument, "base dimension ", base.cols,
              " differs from query dimension ", queries.cols);
}

namespace {

/// The algorithms a request forces (Auto: not forced) and the metric its distance must serve (none for select_k).
struct Forced {
  Backend requested = Backend::Auto;
  DistanceAlgorithm distance = DistanceAlgorithm::Auto;
  SelectAlgorithm select = SelectAlgorithm::Auto;
  std::optional<Metric> metric;
};

std::vector<DistanceAlgorithm> distances_of(Backend b, Metric m) {
  return b == Backend::Cuda ? cuda::distance_algorithms(m) : cpu::distance_algorithms(m);
}

bool has_select(Backend b, SelectAlgorithm a) {
  const std::vector<SelectCapability> all = b == Backend::Cuda ? cuda::select_algorithms() : cpu::select_algorithms();
  return std::any_of(all.begin(), all.end(), [a](const SelectCapability& c) { return c.algorithm == a; });
}

/// What `b` lacks of the forced algorithms, e.g. "heap has no CUDA implementation"; "" when it has them all.
/// Limits on k are left to the backend: they depend on the base size, and no other backend lifts them.
std::string lacking(Backend b, const Forced& f) {
  const std::string label = b == Backend::Cuda ? "CUDA" : "CPU";
  if (f.metric) {
    const std::vector<DistanceAlgorithm> ds = distances_of(b, *f.metric);
    if (f.distance == DistanceAlgorithm::Auto && ds.empty())
      return "metric " + to_string(*f.metric) + " has no " + label + " distance algorithm";
    if (f.distance != DistanceAlgorithm::Auto && std::find(ds.begin(), ds.end(), f.distance) == ds.end()) {
      const std::vector<DistanceAlgorithm> any = distances_of(b, Metric::SquaredL2);  // every algorithm serves it
      const bool other_metrics = std::find(any.begin(), any.end(), f.distance) != any.end();
      return to_string(f.distance) + " has no " + label + " implementation" +
             (other_metrics ? " for metric " + to_string(*f.metric) : "");
    }
  }
  if (f.select != SelectAlgorithm::Auto && !has_select(b, f.select))
    return to_string(f.select) + " has no " + label + " implementation";
  return "";
}

BackendChoice choose(const Forced& f) {
  if (f.requested == Backend::Cpu) return {Backend::Cpu, "requested"};
  const bool cuda_ok = cuda::available();
  if (f.requested == Backend::Cuda) {
    GKNN_EXPECT(cuda_ok, ErrorCode::Unsupported,
                "backend cuda requested, but this build has no CUDA backend or no CUDA device is visible");
    return {Backend::Cuda, "requested"};
  }
  if (!cuda_ok)
    return {Backend::Cpu, build_info().cuda ? "auto: no CUDA device is visible" : "auto: this build has no CUDA backend"};
  const std::string cuda_lacks = lacking(Backend::Cuda, f);
  if (cuda_lacks.empty()) return {Backend::Cuda, "auto"};
  const std::string cpu_lacks = lacking(Backend::Cpu, f);
  GKNN_EXPECT(cpu_lacks.empty(), ErrorCode::Unsupported, "backend auto: no backend implements this combination (",
              cuda_lacks, "; ", cpu_lacks, ")");
  return {Backend::Cpu, "auto: " + cuda_lacks};
}

}  // namespace

Backend resolve_backend(Backend requested) {
  return choose({requested, DistanceAlgorithm::Auto, SelectAlgorithm::Auto, std::nullopt}).backend;
}
Backend resolve_backend(const SearchParams& params) { return choose_backend(params).backend; }
Backend resolve_backend(const SelectParams& params) { return choose_backend(params).backend; }

std::vector<float> normalized_rows(FloatView m) {
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
  for (int64_t i = 0; i < m.rows; ++i) {
    const float* row = m.row(i);
    double sum = 0;
    for (int64_t j = 0; j < m.cols; ++j) sum += static_cast<double>(row[j]) * row[j];
    const double inv = sum > 0 ? 1.0 / std::sqrt(sum) : 0.0;
    for (int64_t j = 0; j < m.cols; ++j) out[static_cast<size_t>(i * m.cols + j)] = static_cast<float>(row[j] * inv);
  }
  return out;
}

}  // namespace gknn::detail

namespace gknn {

BackendChoice choose_backend(const SearchParams& params) {
  return detail::choose({params.backend, params.distance, params.select, params.metric});
}

BackendChoice choose_backend(const SelectParams& params) {
  return detail::choose({params.backend, DistanceAlgorithm::Auto, params.algorithm, std::nullopt});
}

}  // namespace gknn
