#include "cpu/distance/exact.hpp"

#include <algorithm>
#include <cmath>

namespace gknn::detail::cpu {

double exact_key(Metric key_metric, double p, const float* a, const float* b, int64_t dim) {
  double acc = 0;
  switch (key_metric) {
    case Metric::SquaredL2:
      for (int64_t j = 0; j < dim; ++j) acc += (double(a[j]) - b[j]) * (double(a[j]) - b[j]);
      return acc;
    case Metric::InnerProduct:
      for (int64_t j = 0; j < dim; ++j) acc += double(a[j]) * b[j];
      return -acc;
    case Metric::L1:
      for (int64_t j = 0; j < dim; ++j) acc += std::fabs(double(a[j]) - b[j]);
      return acc;
    case Metric::Linf:
      for (int64_t j = 0; j < dim; ++j) acc = std::max(acc, std::fabs(double(a[j]) - b[j]));
      return acc;
    case Metric::Lp:
      for (int64_t j = 0; j < dim; ++j) acc += std::pow(std::fabs(double(a[j]) - b[j]), p);
      return acc;
    default:
      return exact_key(key_metric == Metric::L2 ? Metric::SquaredL2 : Metric::InnerProduct, p, a, b, dim);
  }
}

namespace {

constexpr int kRowsAtOnce = 8;

/// kRowsAtOnce rows' squared L2 or inner-product sums, each in component order (as exact_key).
template <bool kSquared>
void sums_of_rows(const float* a, const float* const* rows, int64_t dim, double* keys) {
  double acc[kRowsAtOnce] = {};
  for (int64_t j = 0; j < dim; ++j) {
    const double x = a[j];
    for (int c = 0; c < kRowsAtOnce; ++c) {
      const double t = kSquared ? x - rows[c][j] : x * rows[c][j];
      acc[c] += kSquared ? t * t : t;
    }
  }
  for (int c = 0; c < kRowsAtOnce; ++c) keys[c] = kSquared ? acc[c] : -acc[c];
}

}  // namespace

void exact_keys_of_rows(Metric key_metric, double p, const float* a, const float* const* rows, int64_t count,
                        int64_t dim, double* keys) {
  int64_t c = 0;
  if (key_metric == Metric::SquaredL2 || key_metric == Metric::InnerProduct)
    for (; c + kRowsAtOnce <= count; c += kRowsAtOnce) {
      if (key_metric == Metric::SquaredL2)
        sums_of_rows<true>(a, rows + c, dim, keys + c);
      else
        sums_of_rows<false>(a, rows + c, dim, keys + c);
    }
  for (; c < count; ++c) keys[c] = exact_key(key_metric, p, a, rows[c], dim);
}

}  // namespace gknn::detail::cpu
