// exact_key.cuh: the float64 key of one (query, base row) pair on the device, bit-identical to the host's
// (cpu/distance/exact.cpp, built without FMA contraction): the components summed in order, each difference, product
// and sum rounded on its own (__dsub_rn, __dmul_rn, __dadd_rn), so near ties come out in the same order on either
// side. The exactness guard's keys (guard.cu) and its certificate inside a search (certify.cu) share it.
#pragma once

#include <cstdint>

#include "gknn/types.hpp"

namespace gknn::detail::cuda {

__device__ inline double exact_key(Metric metric, double p, const float* a, const float* b, int64_t dim) {
  double acc = 0;
  for (int64_t j = 0; j < dim; ++j) {
    const double t = __dsub_rn(static_cast<double>(a[j]), static_cast<double>(b[j]));
    switch (metric) {
      case Metric::SquaredL2: acc = __dadd_rn(acc, __dmul_rn(t, t)); break;
      case Metric::InnerProduct:
        acc = __dadd_rn(acc, __dmul_rn(static_cast<double>(a[j]), static_cast<double>(b[j])));
        break;
      case Metric::L1: acc = __dadd_rn(acc, fabs(t)); break;
      case Metric::Linf: acc = fmax(acc, fabs(t)); break;
      default: acc = __dadd_rn(acc, pow(fabs(t), p)); break;  // Lp
    }
  }
  return metric == Metric::InnerProduct ? -acc : acc;
}

}  // namespace gknn::detail::cuda
