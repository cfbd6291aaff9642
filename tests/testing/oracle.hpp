// oracle.hpp: the float64 oracle and the checks every search/selection test applies to a result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gknn/io.hpp"
#include "gknn/search.hpp"

namespace gknn::testing {

/// Search parameters of a test: k, metric and backend, the rest at their defaults.
inline SearchParams params_for(Backend backend, int64_t k, Metric metric = Metric::SquaredL2) {
  SearchParams p;
  p.k = k;
  p.metric = metric;
  p.backend = backend;
  return p;
}

/// Exact value of query q to base row i in the user's metric (double; cosine on the original rows).
double exact_value(Metric metric, double p, const float* q, const float* x, int64_t dim);

/// All n exact values of each query sorted in the total order: entries (value, index).
struct OracleRow {
  std::vector<double> values;
  std::vector<int64_t> indices;
};
std::vector<OracleRow> oracle(FloatView base, FloatView queries, Metric metric, double p);

struct CheckOptions {
  /// Require the oracle's neighbours: its top k as a set, and wherever two reported values differ, their exact
  /// values in the same order (runs of equal reported values ordered by index). On small integers that is the
  /// oracle's sequence itself; on float data it is what the exactness guard promises (distinct float64 values may
  /// round to one float).
  bool exact_indices = false;
  /// Relative tolerance on values, scaled by the query's magnitude (see oracle.cpp).
  double tolerance = 2e-4;
};

/// Checks `got` (q x k) against the oracle: shape, padding for k > n, valid unique indices, reported values
/// equal to the exact values of the reported indices, the j-th value equal to the oracle's j-th, sorted in the
/// total order. Returns "" on success, else a message naming the first failing query and rank.
std::string check_search(const Result& got, FloatView base, FloatView queries, const SearchParams& params,
                         const CheckOptions& options = {}, const std::vector<OracleRow>* truth = nullptr);

/// Every row of a select_k input sorted in the total order: (value, label) per rank. Computed once per input
/// and order, then checked against any k.
struct SelectExpectation {
  int64_t rows = 0, cols = 0;
  Order order = Order::Ascending;
  std::vector<float> values;
  std::vector<int64_t> labels;
};
SelectExpectation expected_select(FloatView values, const int64_t* labels, Order order);
std::string check_select(const Result& got, const SelectExpectation& expected, int64_t k);
/// Same for select_k: `values` rows, labels optional.
std::string check_select(const Result& got, FloatView values, const int64_t* labels, int64_t k, Order order);

}  // namespace gknn::testing
