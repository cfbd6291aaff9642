// exact_key.cuh: the float64 key of one (query, base row) pair on the device, bit-identical to the host's
// (cpu/distance/exact.cpp, built without FMA contraction): the components summed in order, each difference, product
// and sum rounded on its own (__dsub_rn, __dmul_rn, __dadd_rn), so near ties come out in the same order on either
// side. The exactness guard's keys (guard.cu) and its certificate inside a search (certify.cu) share it; the
// certificate's staged kernel feeds the same steps from shared memory, component by component in the same order.
#pragma once

#include <cstdint>

#include "gknn/types.hpp"

namespace gknn::detail::cuda {

/// One component (a of the query, b of the row) added to the running key `acc`; `p` for Lp only.
template <Metric kMetric>
__device__ inline double exact_key_step(double acc, float a, float b, double p = 2.0) {
  const double t = __dsub_rn(static_cast<double>(a), static_cast<double>(b));
  if constexpr (kMetric == Metric::SquaredL2) return __dadd_rn(acc, __dmul_rn(t, t));
  else if constexpr (kMetric == Metric::InnerProduct)
    return __dadd_rn(acc, __dmul_rn(static_cast<double>(a), static_cast<double>(b)));
  else if constexpr (kMetric == Metric::L1) return __dadd_rn(acc, fabs(t));
  else if constexpr (kMetric == Metric::Linf) return fmax(acc, fabs(t));
  else return __dadd_rn(acc, pow(fabs(t), p));  // Lp
}

/// The key of the summed components (inner product: negated, so that keys ascend).
template <Metric kMetric>
__device__ inline double exact_key_finish(double acc) {
  return kMetric == Metric::InnerProduct ? -acc : acc;
}

template <Metric kMetric>
__device__ inline double exact_key_of(double p, const float* a, const float* b, int64_t dim) {
  double acc = 0;
  for (int64_t j = 0; j < dim; ++j) acc = exact_key_step<kMetric>(acc, a[j], b[j], p);
  return exact_key_finish<kMetric>(acc);
}

__device__ inline double exact_key(Metric metric, double p, const float* a, const float* b, int64_t dim) {
  switch (metric) {
    case Metric::SquaredL2: return exact_key_of<Metric::SquaredL2>(p, a, b, dim);
    case Metric::InnerProduct: return exact_key_of<Metric::InnerProduct>(p, a, b, dim);
    case Metric::L1: return exact_key_of<Metric::L1>(p, a, b, dim);
    case Metric::Linf: return exact_key_of<Metric::Linf>(p, a, b, dim);
    default: return exact_key_of<Metric::Lp>(p, a, b, dim);
  }
}

}  // namespace gknn::detail::cuda
