#include "core/validate.hpp"

#include <cmath>

#include "core/backend.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {

void validate_matrix(FloatView m, std::string_view what, bool allow_empty_rows) {
  GKNN_EXPECT(m.rows >= 0 && m.cols >= 0, ErrorCode::InvalidArgument, what, ": negative shape ", m.rows, "x", m.cols);
  GKNN_EXPECT(allow_empty_rows || m.rows > 0, ErrorCode::InvalidArgument, what, " is empty (0 rows)");
  GKNN_EXPECT(m.cols > 0, ErrorCode::InvalidArgument, what, " has dimension 0");
  GKNN_EXPECT(m.stride == 0 || m.stride >= m.cols, ErrorCode::InvalidArgument, what, ": row stride ", m.stride,
              " is smaller than the dimension ", m.cols);
  GKNN_EXPECT(m.rows == 0 || m.data != nullptr, ErrorCode::InvalidArgument, what, ": null data pointer");
  for (int64_t i = 0; i < m.rows; ++i) {
    const float* row = m.row(i);
    for (int64_t j = 0; j < m.cols; ++j)
      GKNN_EXPECT(std::isfinite(row[j]), ErrorCode::InvalidArgument, what, " row ", i, " column ", j, " is ",
                  row[j], ": NaN and Inf are not valid coordinates");
  }
}

void validate_search(FloatView base, FloatView queries, const SearchParams& params) {
  GKNN_EXPECT(params.k > 0, ErrorCode::InvalidArgument, "k must be positive (got ", params.k, ")");
  GKNN_EXPECT(params.metric != Metric::Lp || (params.p > 0 && std::isfinite(params.p)), ErrorCode::InvalidArgument,
              "metric lp needs a finite p > 0 (got p = ", params.p, ")");
  GKNN_EXPECT(params.threads >= 0 && params.threads <= kMaxThreads, ErrorCode::InvalidArgument, "threads must be in [0, ",
              kMaxThreads, "] (got ", params.threads, ")");
  validate_matrix(base, "base", false);
  validate_matrix(queries, "queries", true);
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
