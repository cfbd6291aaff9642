// key_ops.cuh: the per-metric arithmetic every distance kernel shares, and the metric -> template dispatch.
//
// A key is a fold of per-component terms: key = combine(term(q0, x0), term(q1, x1), ...), starting from 0.
//   SquaredL2:    term = (q-x)^2,      combine = +
//   InnerProduct: term = -(q*x),       combine = +   (negating each term equals negating the sum exactly:
//                                                      IEEE rounding is symmetric, so the key is -(q.x))
//   L1:           term = |q-x|,        combine = +
//   Linf:         term = |q-x|,        combine = max
//   Lp:           term = |q-x|^p,      combine = +
// Zero-padded components (q = x = 0) contribute the identity 0 for every metric, which lets tiled kernels pad
// partial tiles instead of branching. Every term is >= 0 except InnerProduct's, which matters for Linf's
// atomicMax on the float bit pattern (atomic kernel).
#pragma once

#include <type_traits>

#include "gknn/error.hpp"
#include "gknn/types.hpp"

namespace gknn::detail::cuda {

template <Metric M>
struct KeyOp {
  __device__ __forceinline__ static float term(float q, float x, float p) {
    if constexpr (M == Metric::SquaredL2) {
      const float d = q - x;
      return d * d;
    } else if constexpr (M == Metric::InnerProduct) {
      return -(q * x);
    } else if constexpr (M == Metric::L1 || M == Metric::Linf) {
      return fabsf(q - x);
    } else {
      static_assert(M == Metric::Lp, "not a key metric");
      return powf(fabsf(q - x), p);
    }
  }
  __device__ __forceinline__ static float combine(float a, float b) {
    if constexpr (M == Metric::Linf) return fmaxf(a, b);
    else return a + b;
  }
};

template <Metric M>
using MetricTag = std::integral_constant<Metric, M>;

/// Calls f(MetricTag<M>{}) for the key metric m, so a host launcher instantiates one kernel per metric.
template <class F>
void dispatch_key_metric(Metric m, F&& f) {
  switch (m) {
    case Metric::SquaredL2: f(MetricTag<Metric::SquaredL2>{}); return;
    case Metric::InnerProduct: f(MetricTag<Metric::InnerProduct>{}); return;
    case Metric::L1: f(MetricTag<Metric::L1>{}); return;
    case Metric::Linf: f(MetricTag<Metric::Linf>{}); return;
    case Metric::Lp: f(MetricTag<Metric::Lp>{}); return;
    default: detail::fail(ErrorCode::Internal, "distance kernel called with metric ", to_string(m), ", not a key metric");
  }
}

/// Largest grid.y a launch may use; launchers split longer query ranges into chunks of this many rows/tiles.
constexpr int64_t kMaxGridY = 65535;

}  // namespace gknn::detail::cuda
