// exact.hpp: float64 direct sums, the ground truth of the library (the Reference algorithm and the tests).
#pragma once

#include <cstdint>

#include "gknn/types.hpp"

namespace gknn::detail::cpu {

/// Key (core/keys.hpp) of rows a and b in double precision; key_metric in {SquaredL2, InnerProduct, L1, Linf, Lp}.
double exact_key(Metric key_metric, double p, const float* a, const float* b, int64_t dim);

}  // namespace gknn::detail::cpu
