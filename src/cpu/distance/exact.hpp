// exact.hpp: float64 direct sums, the ground truth of the library (the Reference algorithm and the tests).
#pragma once

#include <cstdint>

#include "gknn/types.hpp"

namespace gknn::detail::cpu {

/// Key (core/keys.hpp) of rows a and b in double precision; key_metric in {SquaredL2, InnerProduct, L1, Linf, Lp}.
double exact_key(Metric key_metric, double p, const float* a, const float* b, int64_t dim);

/// keys[c] = exact_key(key_metric, p, a, rows[c], dim) for c < count, bit for bit: several rows at a time, whose
/// independent sums (each in exact_key's order) hide the latency of the additions that one row's sum waits on.
void exact_keys_of_rows(Metric key_metric, double p, const float* a, const float* const* rows, int64_t count,
                        int64_t dim, double* keys);

}  // namespace gknn::detail::cpu
