#include "recall_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <vector>

#include "cli_common.hpp"
#include "gknn/error.hpp"
#include "gknn/recall.hpp"

namespace gknn::cli {
namespace {

constexpr double kEpsilon = 1e-3;  // ann-benchmarks' default tolerance

std::string path_without_dataset(const std::string& path) {
  const size_t colon = path.rfind(':');
  return colon == std::string::npos || colon < path.rfind('/') + 1 ? path : path.substr(0, colon);
}

/// HDF5 distances converted to gknn's value of `metric`; empty when the units are unknown or do not match.
HostMatrix<float> hdf5_truth_values(const AnnDataset& data, int64_t k, Metric metric) {
  HostMatrix<float> out;
  if (data.distances.rows == 0 || data.distances.cols < k) return out;
  const bool euclidean = data.distance == "euclidean" && (metric == Metric::L2 || metric == Metric::SquaredL2);
  const bool angular = data.distance == "angular" && metric == Metric::Cosine;
  if (!euclidean && !angular) return out;
  out = HostMatrix<float>(data.distances.rows, k);
  for (int64_t i = 0; i < out.rows; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const double d = data.distances.row(i)[j];
      out.row(i)[j] = static_cast<float>(angular ? 1.0 - d : metric == Metric::SquaredL2 ? d * d : d);
    }
  return out;
}

}  // namespace

HostMatrix<float> exact_truth_values(FloatView base, FloatView queries, const HostMatrix<int64_t>& truth, int64_t k,
                                     Metric metric, double p, const std::string& what) {
  GKNN_EXPECT(truth.rows == queries.rows, ErrorCode::InvalidArgument, "ground truth '", what, "' has ", truth.rows,
              " rows but there are ", queries.rows, " queries");
  GKNN_EXPECT(truth.cols >= k, ErrorCode::InvalidArgument, "ground truth '", what, "' has ", truth.cols,
              " neighbours per query, fewer than k = ", k);
  HostMatrix<float> out(truth.rows, k);
  for (int64_t i = 0; i < truth.rows; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t id = truth.row(i)[j];
      GKNN_EXPECT(id >= -1 && id < base.rows, ErrorCode::Format, "ground truth '", what, "': row ", i, " column ", j,
                  " holds id ", id, ", outside the base of ", base.rows, " vectors");
      // id -1 pads rows when k > n: it stands for +inf distance (-inf similarity), as in search()'s output.
      out.row(i)[j] = id < 0 ? (is_similarity(metric) ? -INFINITY : INFINITY)
                             : exact_distance(queries.row(i), base.row(id), base.cols, metric, p);
    }
  return out;
}

HostMatrix<float> stored_truth_values(const std::string& truth_path, int64_t k, Metric metric) {
  const std::string ext = extension_of(truth_path);
  if ((ext != "hdf5" && ext != "h5") || !hdf5_supported()) return {};
  return hdf5_truth_values(read_ann_hdf5(path_without_dataset(truth_path)), k, metric);
}

HostMatrix<float> truth_values(const std::string& truth_path, FloatView base, FloatView queries,
                               const HostMatrix<int64_t>& truth, int64_t k, Metric metric, double p) {
  HostMatrix<float> stored = stored_truth_values(truth_path, k, metric);
  if (stored.rows == queries.rows) return stored;
  return exact_truth_values(base, queries, truth, k, metric, p, truth_path);
}

HostMatrix<float> first_columns(const HostMatrix<float>& m, int64_t k, const std::string& what) {
  GKNN_EXPECT(m.cols >= k, ErrorCode::InvalidArgument, what, " has ", m.cols, " columns, fewer than k = ", k);
  HostMatrix<float> out(m.rows, k);
  for (int64_t i = 0; i < m.rows; ++i) std::copy(m.row(i), m.row(i) + k, out.row(i));
  return out;
}

Result as_result(const HostMatrix<int64_t>& indices, const HostMatrix<float>* values) {
  Result r;
  r.rows = indices.rows;
  r.k = indices.cols;
  r.indices = indices.data;
  if (values) r.distances = values->data;
  else r.distances.assign(indices.data.size(), 0.f);
  return r;
}

void print_recall(std::ostream& out, const Result& result, const HostMatrix<int64_t>& truth,
                  const HostMatrix<float>& truth_values, int64_t k, Metric metric) {
  char line[256];
  std::snprintf(line, sizeof line, "recall@%lld (ids)      %.6f   mean fraction of the true k nearest ids found\n",
                static_cast<long long>(k), recall_ids(result, truth, k));
  out << line;
  if (truth_values.rows == 0) {
    out << "recall@" << k << " (distance) n/a        needs result and ground-truth distances\n";
    return;
  }
  const double r = recall_distance(result, truth_values, k, kEpsilon, is_similarity(metric));
  std::snprintf(line, sizeof line,
                "recall@%lld (distance) %.6f   mean fraction of results within the k-th true %s %s 1e-3 "
                "(ann-benchmarks)\n",
                static_cast<long long>(k), r, is_similarity(metric) ? "similarity" : "distance",
                is_similarity(metric) ? "-" : "+");
  out << line;
}

}  // namespace gknn::cli
