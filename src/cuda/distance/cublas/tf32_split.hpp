// tf32_split.hpp: float32 values as sums of TF32 values (10 explicit mantissa bits), for the split-precision GEMM
// of tf32x3 (gemm_keys.cuh). Host and device share these functions, so the CPU tests check the very arithmetic the
// augment kernel runs (tests/tf32_split_test.cpp).
//
// Why the operands are rounded here and not by the tensor core: an MMA on fp32 registers in TF32 mode ignores the 13
// low mantissa bits (truncation, relative error up to 2^-10). A value already rounded to TF32 passes unchanged, so
// every product the GEMM forms is the exact product of the pieces below.
//
// Error of tf32x3 (d = dimension, u = 2^-23, the unit of a float32 accumulation that may truncate; one term per
// component of the GEMM's inner dimension): with v = big(v) + small(v) + r(v), |r(v)| <= 2^-22 |v| (big rounds to
// nearest: |v - big| <= 2^-11 |v|; small rounds v - big, exact in float32, to nearest: |r| <= 2^-11 |v - big|),
// the GEMM sums big(a)big(b) + big(a)small(b) + small(a)big(b) per component, which differs from a.b by at most
// (|small(a)||small(b)| + |a||r(b)| + |r(a)||b| + ...) <= 2^-20 |a||b| (the few 2^-44 cross terms included). By
// Cauchy-Schwarz the dot product's representation error is at most 2^-20 |q||x|, and the 3d products, each exact,
// are summed in float32 (error <= gamma_3d (1 + 2^-10) |q||x|, gamma_n = n u / (1 - n u)). The squared norm |x|^2
// is split into three TF32 pieces whose sum is exactly the float32 value (below), so the folded norm column adds
// no representation error. Total for the key |x|^2 - 2 q.x: <= gamma_{3d+3} (|x|^2 + 2 |q||x| (1 + 2^-10)) +
// 2^-19 |q||x|: float32 SGEMM's error (gamma_d (|x|^2 + 2 |q||x|)) with three times the terms, not TF32's 2^-10.
// On integer data with |v| <= 2048 the small pieces are 0 and the products and sums exact (as fp16_mma).
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace gknn::detail::cuda {

/// x rounded to the nearest TF32 value (ties away from zero, as cvt.rna.tf32.f32), low 13 bits zero. Adding half a
/// TF32 unit to the magnitude bits carries into the exponent where it should. A finite x whose rounding would
/// overflow to infinity (within half a TF32 unit of FLT_MAX) is truncated instead: still finite, error < 2^-10 |x|.
GKNN_HD float round_to_tf32(float x) {
  constexpr uint32_t kLow = (1u << 13) - 1u;
  const uint32_t u = float_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf or NaN: unchanged (inputs are validated finite)
  uint32_t r = (u + (1u << 12)) & ~kLow;
  if ((r & 0x7f800000u) == 0x7f800000u) r = u & ~kLow;
  return float_of_bits(r);
}

/// v = big + small + r with big, small TF32 values and |r| <= 2^-22 |v| (see above).
struct Tf32Pair {
  float big, small;
};

GKNN_HD Tf32Pair split_tf32(float v) {
  const float big = round_to_tf32(v);
  return {big, round_to_tf32(v - big)};  // v - big is exact in float32: at most 13 significant bits
}

/// v = p0 + p1 + p2 exactly, each a TF32 value: 11 + 11 + 11 significant bits hold float32's 24.
struct Tf32Triple {
  float p0, p1, p2;
};

GKNN_HD Tf32Triple split_tf32_exact(float v) {
  const float p0 = round_to_tf32(v);
  const float rest = v - p0;  // exact
  const float p1 = round_to_tf32(rest);
  return {p0, p1, rest - p1};  // rest - p1 is exact and has at most 2 significant bits: a TF32 value
}

}  // namespace gknn::detail::cuda
