#include "testing/oracle.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <sstream>

#include "core/keys.hpp"
#include "cpu/distance/exact.hpp"

namespace gknn::testing {
namespace {

double worst(Metric m) { return is_similarity(m) ? -INFINITY : INFINITY; }

/// The metric whose magnitude bounds a metric's values: similarities are scaled by the norms (the value against
/// the zero row would be 0): |q.x| <= |q| |x|.
Metric norm_metric(Metric metric) { return is_similarity(metric) ? Metric::SquaredL2 : metric; }

/// Magnitude of a row: its value against the zero row in norm_metric.
double magnitude(FloatView base, const float* row, Metric metric, double p) {
  const std::vector<float> zero(static_cast<size_t>(base.cols), 0.f);
  return std::fabs(exact_value(norm_metric(metric), p, row, zero.data(), base.cols));
}

/// The largest magnitude of a base row: the same for every query, so computed once per oracle.
double base_magnitude(FloatView base, Metric metric, double p) {
  double xn = 0;
  for (int64_t i = 0; i < base.rows; ++i) xn = std::max(xn, magnitude(base, base.row(i), metric, p));
  return xn;
}

/// Magnitude of the values a query can produce: float rounding errors scale with it (GEMM cancellation).
double query_scale(FloatView base, double base_mag, const float* q, Metric metric, double p) {
  const double qn = magnitude(base, q, metric, p), xn = base_mag;
  if (metric == Metric::InnerProduct) return 1.0 + std::sqrt(qn * xn) * 4;  // |-x.x| = |x|^2 for the zero row
  if (metric == Metric::Cosine) return 1.0;
  return 1.0 + 2 * (qn + xn);
}

template <class... Parts>
std::string message(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

}  // namespace

double exact_value(Metric metric, double p, const float* q, const float* x, int64_t dim) {
  using detail::cpu::exact_key;
  switch (metric) {
    case Metric::L2: return std::sqrt(exact_key(Metric::SquaredL2, p, q, x, dim));
    case Metric::InnerProduct: return -exact_key(Metric::InnerProduct, p, q, x, dim);
    case Metric::Cosine: {
      const double qq = -exact_key(Metric::InnerProduct, p, q, q, dim), xx = -exact_key(Metric::InnerProduct, p, x, x, dim);
      if (qq == 0 || xx == 0) return 0.0;
      return -exact_key(Metric::InnerProduct, p, q, x, dim) / std::sqrt(qq * xx);
    }
    case Metric::Lp: return std::pow(exact_key(Metric::Lp, p, q, x, dim), 1.0 / p);
    default: return exact_key(metric, p, q, x, dim);
  }
}

std::vector<OracleRow> oracle(FloatView base, FloatView queries, Metric metric, double p) {
  std::vector<OracleRow> rows(static_cast<size_t>(queries.rows));
  const bool sim = is_similarity(metric);
  for (int64_t qi = 0; qi < queries.rows; ++qi) {
    std::vector<double> v(static_cast<size_t>(base.rows));
    for (int64_t i = 0; i < base.rows; ++i) v[size_t(i)] = exact_value(metric, p, queries.row(qi), base.row(i), base.cols);
    std::vector<int64_t> order(static_cast<size_t>(base.rows));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const double ka = sim ? -v[size_t(a)] : v[size_t(a)], kb = sim ? -v[size_t(b)] : v[size_t(b)];
      return ka < kb || (ka == kb && a < b);
    });
    OracleRow& r = rows[size_t(qi)];
    r.indices = order;
    for (int64_t i : order) r.values.push_back(v[size_t(i)]);
  }
  return rows;
}

std::string check_search(const Result& got, FloatView base, FloatView queries, const SearchParams& params,
                         const CheckOptions& options, const std::vector<OracleRow>* precomputed) {
  const int64_t k = params.k, n = base.rows;
  if (got.rows != queries.rows || got.k != k) return message("shape ", got.rows, "x", got.k, ", expected ", queries.rows, "x", k);
  if (got.distances.size() != size_t(got.rows * k) || got.indices.size() != size_t(got.rows * k)) return "result vectors have the wrong size";
  const std::vector<OracleRow> computed = precomputed ? std::vector<OracleRow>{} : oracle(base, queries, params.metric, params.p);
  const std::vector<OracleRow>& truth = precomputed ? *precomputed : computed;
  const bool sim = is_similarity(params.metric);
  const double base_mag = base_magnitude(base, params.metric, params.p);
  for (int64_t qi = 0; qi < queries.rows; ++qi) {
    const double tol = options.tolerance * query_scale(base, base_mag, queries.row(qi), params.metric, params.p);
    std::set<int64_t> seen;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t idx = got.index(qi, j);
      const double val = got.distance(qi, j);
      const std::string where = message("query ", qi, " rank ", j, ": ");
      if (j >= n) {
        if (idx != -1 || val != worst(params.metric)) return message(where, "expected padding (-1, ", worst(params.metric), "), got (", idx, ", ", val, ")");
        continue;
      }
      if (idx < 0 || idx >= n) return message(where, "index ", idx, " out of range [0, ", n, ")");
      if (!seen.insert(idx).second) return message(where, "index ", idx, " returned twice");
      const double exact = exact_value(params.metric, params.p, queries.row(qi), base.row(idx), base.cols);
      if (std::isnan(val) || std::fabs(val - exact) > tol) return message(where, "reported value ", val, " but index ", idx, " has exact value ", exact);
      const double want = truth[size_t(qi)].values[size_t(j)];
      if (std::fabs(exact - want) > tol) return message(where, "index ", idx, " (value ", exact, ") is not the rank-", j, " neighbour ", truth[size_t(qi)].indices[size_t(j)], " (value ", want, ")");
      if (j > 0) {
        const double prev = got.distance(qi, j - 1);
        const bool ordered = sim ? (prev > val || (prev == val && got.index(qi, j - 1) < idx)) : (prev < val || (prev == val && got.index(qi, j - 1) < idx));
        if (!ordered) return message(where, "not in the total order after (", got.index(qi, j - 1), ", ", prev, ")");
        // Exact: where the reported values differ, the exact values must agree with their order.
        const double prev_exact = exact_value(params.metric, params.p, queries.row(qi), base.row(got.index(qi, j - 1)), base.cols);
        const bool exact_ordered = sim ? (prev_exact > exact || (prev_exact == exact && got.index(qi, j - 1) < idx)) : (prev_exact < exact || (prev_exact == exact && got.index(qi, j - 1) < idx));
        if (options.exact_indices && prev != val && !exact_ordered) return message(where, "index ", idx, " (exact ", exact, ") after index ", got.index(qi, j - 1), " (exact ", prev_exact, ")");
      }
    }
    if (options.exact_indices) {
      // The oracle's top k as a set (the order is checked above): its first k by (exact value, index).
      const int64_t kept = std::min(k, n);
      std::vector<int64_t> mine(got.indices.begin() + qi * k, got.indices.begin() + qi * k + kept);
      std::vector<int64_t> theirs(truth[size_t(qi)].indices.begin(), truth[size_t(qi)].indices.begin() + kept);
      std::sort(mine.begin(), mine.end());
      std::sort(theirs.begin(), theirs.end());
      for (int64_t j = 0; j < kept; ++j)
        if (mine[size_t(j)] != theirs[size_t(j)]) return message("query ", qi, ": the top ", kept, " ids differ from the oracle's (first difference: ", mine[size_t(j)], " vs ", theirs[size_t(j)], " in sorted order)");
    }
  }
  return "";
}

SelectExpectation expected_select(FloatView values, const int64_t* labels, Order order) {
  SelectExpectation e{values.rows, values.cols, order, {}, {}};
  const bool desc = order == Order::Descending;
  e.values.reserve(size_t(values.rows * values.cols));
  e.labels.reserve(size_t(values.rows * values.cols));
  for (int64_t r = 0; r < values.rows; ++r) {
    std::vector<int64_t> cols(static_cast<size_t>(values.cols));
    std::iota(cols.begin(), cols.end(), 0);
    auto label = [&](int64_t c) { return labels ? labels[r * values.row_stride() + c] : c; };
    auto key = [&](int64_t c) { return desc ? -double(values.row(r)[c]) : double(values.row(r)[c]); };
    std::sort(cols.begin(), cols.end(), [&](int64_t a, int64_t b) { return key(a) < key(b) || (key(a) == key(b) && label(a) < label(b)); });
    for (int64_t c : cols) {
      e.values.push_back(values.row(r)[c]);
      e.labels.push_back(label(c));
    }
  }
  return e;
}

std::string check_select(const Result& got, const SelectExpectation& e, int64_t k) {
  if (got.rows != e.rows || got.k != k) return message("shape ", got.rows, "x", got.k, ", expected ", e.rows, "x", k);
  const bool desc = e.order == Order::Descending;
  for (int64_t r = 0; r < e.rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const bool pad = j >= e.cols;
      const int64_t want_label = pad ? -1 : e.labels[size_t(r * e.cols + j)];
      const float want_value = pad ? (desc ? -INFINITY : INFINITY) : e.values[size_t(r * e.cols + j)];
      if (got.index(r, j) != want_label || !(got.distance(r, j) == want_value))
        return message("row ", r, " rank ", j, ": got (", got.index(r, j), ", ", got.distance(r, j), "), expected (", want_label, ", ", want_value, ")");
    }
  return "";
}

std::string check_select(const Result& got, FloatView values, const int64_t* labels, int64_t k, Order order) {
  return check_select(got, expected_select(values, labels, order), k);
}

}  // namespace gknn::testing
