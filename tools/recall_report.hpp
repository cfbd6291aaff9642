// recall_report.hpp: recall@k by both definitions in use, with the ground-truth distances the second one needs.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "gknn/io.hpp"
#include "gknn/types.hpp"

namespace gknn::cli {

/// Exact (float64, then rounded once) value under `metric` of every ground-truth id of the first k columns;
/// id -1 (k > n padding) gets the padding value. `what` names the ground truth in errors (id out of range).
HostMatrix<float> exact_truth_values(FloatView base, FloatView queries, const HostMatrix<int64_t>& truth, int64_t k,
                                     Metric metric, double p, const std::string& what);

/// Ground-truth values for the distance recall: an ann-benchmarks HDF5 file's `distances` when its `distance`
/// attribute matches `metric` (converted to gknn's units: euclidean -> squared for squared_l2, angular -> cosine
/// similarity), else exact_truth_values.
HostMatrix<float> truth_values(const std::string& truth_path, FloatView base, FloatView queries,
                               const HostMatrix<int64_t>& truth, int64_t k, Metric metric, double p);

/// Only the stored HDF5 part of truth_values: empty when the file is not HDF5, has no distances or other units.
HostMatrix<float> stored_truth_values(const std::string& truth_path, int64_t k, Metric metric);

/// The first k columns of m (InvalidArgument naming `what` when it has fewer).
HostMatrix<float> first_columns(const HostMatrix<float>& m, int64_t k, const std::string& what);

/// Builds a Result from stored indices (and optional values) for the recall functions.
Result as_result(const HostMatrix<int64_t>& indices, const HostMatrix<float>* values);

/// Prints the two recall lines, each with a one-line explanation. truth_values may be empty: the distance line is
/// then omitted with a note on how to get it.
void print_recall(std::ostream& out, const Result& result, const HostMatrix<int64_t>& truth,
                  const HostMatrix<float>& truth_values, int64_t k, Metric metric);

}  // namespace gknn::cli
