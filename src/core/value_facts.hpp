// value_facts.hpp: the value facts of a matrix (ValueStats, core/backend.hpp) from the bits of its floats. One
// definition for the host scan (core/validate.cpp) and the device scan of device views (cuda/pipeline/
// value_scan.cu), so that a base gets the same facts, hence the same plan, wherever it lives.
//
// Per value: integer compares and one float -> int -> float round trip, without branches (the host loop
// vectorises; validate.cpp is built with -fno-trapping-math, which lets the compiler if-convert the conversion).
// The facts are those of the IEEE comparisons: finite = |v| <= FLT_MAX, integral = (v == nearbyint(v)) for finite
// v, nonnegative = (v >= 0), -0.0 included.
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace gknn::detail {

/// Accumulated facts of some values; merge() combines two parts (any order: the operations are OR and max).
struct ValueBits {
  uint32_t not_finite = 0;    ///< nonzero when some value is Inf or NaN
  uint32_t fraction = 0;      ///< nonzero when some finite value is not an integer
  uint32_t negative = 0;      ///< nonzero when some value is < 0 (-0.0 is not)
  uint32_t max_abs_bits = 0;  ///< bits of the largest |v| (ordered as the values for finite v)

  GKNN_HD void add(float v) {
    const uint32_t bits = float_bits(v);
    const uint32_t magnitude = bits & 0x7fffffffu;
    not_finite |= magnitude >= 0x7f800000u;  // Inf, NaN
    // |v| >= 2^23 (0x4b000000): every float is an integer; below, v is one iff the int32 round trip keeps it
    const float small = magnitude < 0x4b000000u ? v : 0.f;
    fraction |= small != static_cast<float>(static_cast<int32_t>(small));
    negative |= (bits >> 31) & (magnitude != 0u);  // -0.0 >= 0
    max_abs_bits = magnitude > max_abs_bits ? magnitude : max_abs_bits;
  }
  GKNN_HD void merge(const ValueBits& o) {
    not_finite |= o.not_finite;
    fraction |= o.fraction;
    negative |= o.negative;
    max_abs_bits = o.max_abs_bits > max_abs_bits ? o.max_abs_bits : max_abs_bits;
  }
  GKNN_HD bool finite() const { return not_finite == 0; }
  GKNN_HD bool integral() const { return fraction == 0; }
  GKNN_HD bool nonnegative() const { return negative == 0; }
  GKNN_HD float max_abs() const { return float_of_bits(max_abs_bits); }
};

}  // namespace gknn::detail
