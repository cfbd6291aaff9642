// recall.cpp: recall@k by id overlap and by distance threshold (definitions in gknn/recall.hpp).
#include <algorithm>
#include <iterator>
#include <vector>

#include "gknn/error.hpp"
#include "gknn/recall.hpp"

namespace gknn {
namespace {

/// Shapes both definitions need: k in [1, result.k], one truth row per result row, >= k truth columns.
template <class T>
void check_shapes(const Result& result, const HostMatrix<T>& truth, int64_t k, const char* what) {
  const auto cells = static_cast<size_t>(result.rows * result.k);
  GKNN_EXPECT(result.rows >= 0 && result.k >= 0 && result.indices.size() == cells &&
                  (result.distances.size() == cells || result.distances.empty()),
              ErrorCode::InvalidArgument, "recall: the result's arrays do not match its ", result.rows, " x ",
              result.k, " shape");
  GKNN_EXPECT(k >= 1, ErrorCode::InvalidArgument, "recall: k must be >= 1, got ", k);
  GKNN_EXPECT(result.rows >= 1, ErrorCode::InvalidArgument, "recall: the result has no rows (recall is undefined)");
  GKNN_EXPECT(k <= result.k, ErrorCode::InvalidArgument, "recall: k = ", k, " exceeds the result's ", result.k,
              " columns");
  GKNN_EXPECT(truth.rows == result.rows, ErrorCode::InvalidArgument, "recall: ", what, " has ", truth.rows,
              " rows but the result has ", result.rows);
  GKNN_EXPECT(truth.cols >= k, ErrorCode::InvalidArgument, "recall: every row of ", what, " needs k = ", k,
              " columns, it has ", truth.cols);
}

/// Sorted distinct valid (>= 0) ids of the first k entries.
std::vector<int64_t> id_set(const int64_t* ids, int64_t k) {
  std::vector<int64_t> out;
  for (int64_t j = 0; j < k; ++j)
    if (ids[j] >= 0) out.push_back(ids[j]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

double recall_ids(const Result& result, const HostMatrix<int64_t>& truth, int64_t k) {
  check_shapes(result, truth, k, "the ground truth");
  double total = 0.0;
  for (int64_t q = 0; q < result.rows; ++q) {
    std::vector<int64_t> found = id_set(result.indices.data() + q * result.k, k);
    std::vector<int64_t> expected = id_set(truth.row(q), k);
    std::vector<int64_t> common;
    std::set_intersection(found.begin(), found.end(), expected.begin(), expected.end(), std::back_inserter(common));
    total += static_cast<double>(common.size()) / static_cast<double>(k);
  }
  return total / static_cast<double>(result.rows);
}

double recall_distance(const Result& result, const HostMatrix<float>& truth_distances, int64_t k, double epsilon,
                       bool similarity) {
  check_shapes(result, truth_distances, k, "the ground-truth distances");
  GKNN_EXPECT(result.distances.size() == result.indices.size(), ErrorCode::InvalidArgument,
              "recall: the result has no distances");
  double total = 0.0;
  for (int64_t q = 0; q < result.rows; ++q) {
    const double kth = truth_distances.row(q)[k - 1];
    int64_t hits = 0;
    for (int64_t j = 0; j < k; ++j) {
      if (result.index(q, j) < 0) continue;  // padding is never a neighbour, whatever the threshold
      const double d = result.distance(q, j);
      hits += similarity ? (d >= kth - epsilon) : (d <= kth + epsilon);
    }
    total += static_cast<double>(hits) / static_cast<double>(k);
  }
  return total / static_cast<double>(result.rows);
}

}  // namespace gknn
