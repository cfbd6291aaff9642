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
#include "gknn/error.hpp"
#include "gknn/info.hpp"

namespace gknn::detail {
namespace {

/// Finiteness and value facts of one row, from the bits of its floats: integer compares and one float -> int ->
/// float round trip per value, a loop without branches that the compiler vectorises (this file is built with
/// -fno-trapping-math, which lets it if-convert the conversion; results are those of the IEEE comparisons:
/// finite = |v| <= FLT_MAX, integral = (v == nearbyint(v)) for finite v, nonnegative = (v >= 0), -0.0 included).
struct RowFacts {
  bool finite, integral, nonnegative;
  uint32_t max_abs_bits;  ///< bits of the largest |v| (ordered as the values for finite v)
};

RowFacts row_facts(const float* row, int64_t n) {
  uint32_t not_finite = 0, fraction = 0, negative = 0, max_bits = 0;
  for (int64_t j = 0; j < n; ++j) {
    uint32_t bits;
    std::memcpy(&bits, row + j, sizeof bits);
    const uint32_t magnitude = bits & 0x7fffffffu;
    not_finite |= magnitude >= 0x7f800000u;  // Inf, NaN
    // |v| >= 2^23 (0x4b000000): every float is an integer; below, v is one iff the int32 round trip keeps it
    const float small = magnitude < 0x4b000000u ? row[j] : 0.f;
    fraction |= small != static_cast<float>(static_cast<int32_t>(small));
    negative |= (bits >> 31) & (magnitude != 0u);  // -0.0 >= 0
    max_bits = magnitude > max_bits ? magnitude : max_bits;
  }
  return {not_finite == 0, fraction == 0, negative == 0, max_bits};
}

}  // namespace

ValueStats validate_matrix(FloatView m, std::string_view what, bool allow_empty_rows) {
  GKNN_EXPECT(m.rows >= 0 && m.cols >= 0, ErrorCode::InvalidArgument, what, ": negative shape ", m.rows, "x", m.cols);
  GKNN_EXPECT(allow_empty_rows || m.rows > 0, ErrorCode::InvalidArgument, what, " is empty (0 rows)");
  GKNN_EXPECT(m.cols > 0, ErrorCode::InvalidArgument, what, " has dimension 0");
  GKNN_EXPECT(m.stride == 0 || m.stride >= m.cols, ErrorCode::InvalidArgument, what, ": row stride ", m.stride,
              " is smaller than the dimension ", m.cols);
  GKNN_EXPECT(m.rows == 0 || m.data != nullptr, ErrorCode::InvalidArgument, what, ": null data pointer");
  if (m.memory == Memory::Device) return ValueStats{false, false, 0.f, false};
  // One pass: finiteness (required) and the value facts (for exact lower-precision paths), in row ranges over the
  // host team for large inputs (a 1M x 128 base is 128M values; a part holds at least 32K values, ~7 us of scan, so
  // that small query batches are not split: q = 128 x 128 runs on the caller). The loop only accumulates; the error
  // path re-scans the first failing row to name the column, so the message is the same whatever the thread count.
  struct Part {
    RowFacts facts{true, true, true, 0};
    int64_t first_bad_row;
  };
  constexpr int64_t kValuesPerPart = int64_t(1) << 15;
  const int parts = host_parts(m.rows * m.cols, kValuesPerPart);
  std::vector<Part> part_facts(static_cast<size_t>(parts), Part{{true, true, true, 0}, m.rows});
  const int64_t rows_per_part = (m.rows + parts - 1) / parts;
  host_parallel(parts, [&](int part) {
    Part out{{true, true, true, 0}, m.rows};  // accumulated here, stored once: the parts share cache lines
    const int64_t end = std::min(m.rows, (part + 1) * rows_per_part);
    for (int64_t i = part * rows_per_part; i < end; ++i) {
      const RowFacts row = row_facts(m.row(i), m.cols);
      out.facts.integral = out.facts.integral && row.integral;
      out.facts.nonnegative = out.facts.nonnegative && row.nonnegative;
      out.facts.max_abs_bits = std::max(out.facts.max_abs_bits, row.max_abs_bits);
      if (!row.finite && out.first_bad_row == m.rows) out.first_bad_row = i;
    }
    part_facts[static_cast<size_t>(part)] = out;
  });
  bool integral = true, nonnegative = true;
  uint32_t max_abs_bits = 0;
  int64_t first_bad_row = m.rows;
  for (const Part& p : part_facts) {
    integral = integral && p.facts.integral;
    nonnegative = nonnegative && p.facts.nonnegative;
    max_abs_bits = std::max(max_abs_bits, p.facts.max_abs_bits);
    first_bad_row = std::min(first_bad_row, p.first_bad_row);
  }
  if (first_bad_row < m.rows) {
    const float* row = m.row(first_bad_row);
    for (int64_t j = 0; j < m.cols; ++j)
      GKNN_EXPECT(std::isfinite(row[j]), ErrorCode::InvalidArgument, what, " row ", first_bad_row, " column ", j,
                  " is ", row[j], ": NaN and Inf are not valid coordinates");
  }
  float max_abs;
  std::memcpy(&max_abs, &max_abs_bits, sizeof max_abs);
  return ValueStats{integral, nonnegative, max_abs, true};
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
