#include "core/validate.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/backend.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {

ValueStats validate_matrix(FloatView m, std::string_view what, bool allow_empty_rows) {
  GKNN_EXPECT(m.rows >= 0 && m.cols >= 0, ErrorCode::InvalidArgument, what, ": negative shape ", m.rows, "x", m.cols);
  GKNN_EXPECT(allow_empty_rows || m.rows > 0, ErrorCode::InvalidArgument, what, " is empty (0 rows)");
  GKNN_EXPECT(m.cols > 0, ErrorCode::InvalidArgument, what, " has dimension 0");
  GKNN_EXPECT(m.stride == 0 || m.stride >= m.cols, ErrorCode::InvalidArgument, what, ": row stride ", m.stride,
              " is smaller than the dimension ", m.cols);
  GKNN_EXPECT(m.rows == 0 || m.data != nullptr, ErrorCode::InvalidArgument, what, ": null data pointer");
  if (m.memory == Memory::Device) return ValueStats{false, false, 0.f, false};
  // One pass: finiteness (required) and the value facts (for exact lower-precision paths). The row loop only
  // accumulates; the error path re-scans the failing row to name the column.
  bool integral = true, nonnegative = true;
  float max_abs = 0.f;
  for (int64_t i = 0; i < m.rows; ++i) {
    const float* row = m.row(i);
    bool finite = true;
    for (int64_t j = 0; j < m.cols; ++j) {
      const float v = row[j], a = std::fabs(v);
      finite &= a <= std::numeric_limits<float>::max();
      integral &= v == std::nearbyint(v);
      nonnegative &= v >= 0.f;
      max_abs = a > max_abs ? a : max_abs;
    }
    if (finite) continue;
    for (int64_t j = 0; j < m.cols; ++j)
      GKNN_EXPECT(std::isfinite(row[j]), ErrorCode::InvalidArgument, what, " row ", i, " column ", j, " is ",
                  row[j], ": NaN and Inf are not valid coordinates");
  }
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

Backend resolve_backend(Backend requested) {
  if (requested == Backend::Cpu) return Backend::Cpu;
  const bool cuda_ok = cuda::available();
  if (requested == Backend::Cuda) {
    GKNN_EXPECT(cuda_ok, ErrorCode::Unsupported,
                "backend cuda requested, but this build has no CUDA backend or no CUDA device is visible");
    return Backend::Cuda;
  }
  return cuda_ok ? Backend::Cuda : Backend::Cpu;
}

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
