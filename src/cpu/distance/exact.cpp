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

}  // namespace gknn::detail::cpu
