// keys.hpp: how metrics become ascending selection keys, and keys become reported values.
//
// Backends never see L2, Cosine or similarity order: the core rewrites them so that every backend and every
// kernel only minimises a key (one order, one code path per kernel):
//   SquaredL2 -> key = sum (x-y)^2            reported as is
//   L2        -> computed as SquaredL2        reported sqrt(key)
//   InnerProduct -> key = -(x.y)              reported -key
//   Cosine    -> rows normalised by the core, then InnerProduct
//   L1, Linf  -> key = sum |x-y| / max |x-y|  reported as is
//   Lp        -> key = sum |x-y|^p            reported key^(1/p)
// The transforms are monotone, so selecting by key selects by the metric.
#pragma once

#include <cmath>

#include "core/hd.hpp"
#include "gknn/types.hpp"

namespace gknn::detail {

/// The metric a backend computes keys for (one of SquaredL2, InnerProduct, L1, Linf, Lp).
GKNN_HD Metric key_metric(Metric m) {
  if (m == Metric::L2) return Metric::SquaredL2;
  if (m == Metric::Cosine) return Metric::InnerProduct;
  return m;
}

/// Reported value of a key under the user's metric.
GKNN_HD float key_to_value(Metric m, double p, float key) {
  switch (m) {
    case Metric::L2: return sqrtf(key > 0.f ? key : 0.f);
    case Metric::InnerProduct:
    case Metric::Cosine: return -key;
    case Metric::Lp: return key > 0.f ? static_cast<float>(pow(static_cast<double>(key), 1.0 / p)) : 0.f;
    default: return key;
  }
}

/// Padding value for k > n in the user's metric: worst possible.
GKNN_HD float padding_value(Metric m) { return is_similarity(m) ? -INFINITY : INFINITY; }

}  // namespace gknn::detail
