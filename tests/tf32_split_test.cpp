// tf32_split_test.cpp: the TF32 arithmetic of the tf32 / tf32x3 distance paths (src/cuda/distance/cublas/
// tf32_split.hpp, the very functions the augment kernel runs), on the CPU: rounding to TF32, the big + small split
// and its error, the exact three-piece split of a norm, and keys formed from these pieces as the tensor cores form
// them (exact products, float32 sums) staying within the error bounds the exactness guard certifies with
// (core/guard.cpp through decide_guard). Label cpu.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/guard.hpp"
#include "cuda/distance/cublas/tf32_split.hpp"
#include "testing/data.hpp"

namespace gknn::testing {
namespace {

using detail::cuda::round_to_tf32;
using detail::cuda::split_tf32;
using detail::cuda::split_tf32_exact;

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

/// Values over many binades, both signs, subnormals and the largest floats.
std::vector<float> probe_values() {
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, 2048.f, 2049.f, 4097.f, 1e-30f, FLT_MIN, 1e-40f, FLT_MAX, -FLT_MAX,
                          std::nextafter(FLT_MAX, 0.f), 3.14159265f, 16777215.f};
  const HostMatrix<float> r = random_matrix(1, 4000, 91);
  for (int64_t i = 0; i < 4000; ++i) v.push_back((r.data[size_t(i)] - 0.5f) * std::ldexp(1.f, int(i % 160) - 80));
  return v;
}

TEST(Tf32Split, RoundingKeepsTenMantissaBitsWithinHalfAUnit) {
  for (float x : probe_values()) {
    const float r = round_to_tf32(x);
    EXPECT_EQ(bits(r) & 0x1fffu, 0u) << x;
    EXPECT_TRUE(std::isfinite(r)) << x;
    // Normal values: to nearest (half a unit, 2^-11 relative); truncation near FLT_MAX (2^-10); subnormals lose
    // relative precision but stay within half a TF32 subnormal step, 2^-137 (the guard's underflow term).
    const double err = std::fabs(double(r) - x), rel = std::ldexp(std::fabs(double(x)), std::fabs(x) < 1e38f ? -11 : -10);
    EXPECT_LE(err, std::fabs(x) >= FLT_MIN ? rel : std::ldexp(1.0, -137)) << x;
  }
  EXPECT_EQ(round_to_tf32(1.f + std::ldexp(1.f, -11)), 1.f + std::ldexp(1.f, -10));  // a tie: away from zero
  EXPECT_TRUE(std::isnan(round_to_tf32(NAN)));
  EXPECT_EQ(round_to_tf32(INFINITY), INFINITY);
}

TEST(Tf32Split, BigPlusSmallIsWithinTwoToTheMinus22) {
  for (float x : probe_values()) {
    const auto [big, small] = split_tf32(x);
    EXPECT_EQ(bits(big) & 0x1fffu, 0u) << x;
    EXPECT_EQ(bits(small) & 0x1fffu, 0u) << x;
    if (std::fabs(x) > 1e-30f && std::fabs(x) < 1e38f)
      EXPECT_LE(std::fabs(double(big) + double(small) - x), std::ldexp(std::fabs(double(x)), -22)) << x;
  }
  for (int v = -2048; v <= 2048; ++v) EXPECT_EQ(split_tf32(float(v)).small, 0.f) << v;  // integers: one piece
}

TEST(Tf32Split, NormsSplitExactlyIntoThreePieces) {
  for (float x : probe_values()) {
    const float a = std::fabs(x);
    const auto [p0, p1, p2] = split_tf32_exact(a);
    if (a < FLT_MIN) {  // a subnormal norm: within the guard's underflow term, not exact
      EXPECT_LE(std::fabs(double(p0) + double(p1) + double(p2) - a), std::ldexp(1.0, -136)) << x;
      continue;
    }
    for (float piece : {p0, p1, p2}) EXPECT_EQ(bits(piece) & 0x1fffu, 0u) << x;
    EXPECT_EQ(double(p0) + double(p1) + double(p2), double(a)) << x;
  }
}

/// A key as the tf32 / tf32x3 GEMM forms it: the pieces' products exact (TF32 x TF32 fits float32), float32 sums
/// in column order, the norm pieces last, then + |q|^2 (float32), as the finaliser adds it.
float tensor_key(const float* q, const float* x, int64_t d, bool split) {
  float acc = 0.f, qq = 0.f, xx = 0.f;
  for (int64_t i = 0; i < d; ++i) {
    qq += q[i] * q[i];
    xx += x[i] * x[i];
  }
  for (int part = 0; part < (split ? 3 : 1); ++part)
    for (int64_t i = 0; i < d; ++i) {
      const auto [qb, qs] = split_tf32(-2.f * q[i]);
      const auto [xb, xs] = split_tf32(x[i]);
      const float a = split ? (part == 2 ? qs : qb) : round_to_tf32(-2.f * q[i]);
      const float b = split ? (part == 1 ? xs : xb) : round_to_tf32(x[i]);
      acc += a * b;
    }
  const auto [n0, n1, n2] = split_tf32_exact(xx);
  acc += n0;
  acc += n1;
  acc += n2;
  return acc + qq;
}

TEST(Tf32Split, KeysStayWithinTheGuardsBounds) {
  const int64_t d = 61;
  const HostMatrix<float> base = random_matrix(200, d, 92), queries = random_matrix(12, d, 93);
  SearchParams kp;
  kp.k = 10;
  const detail::ValueStats floats{false, true, 1.f};
  for (bool split : {false, true}) {
    const detail::GuardDecision g =
        detail::decide_guard(kp, split ? DistanceAlgorithm::Tf32x3 : DistanceAlgorithm::Tf32, floats, d);
    ASSERT_TRUE(g.bound.has_value()) << g.reason;
    double worst = 0;
    for (int64_t qi = 0; qi < queries.rows; ++qi)
      for (int64_t i = 0; i < base.rows; ++i) {
        double exact = 0, qn = 0, xn = 0;
        for (int64_t j = 0; j < d; ++j) {
          const double t = double(queries.row(qi)[j]) - base.row(i)[j];
          exact += t * t;
          qn += double(queries.row(qi)[j]) * queries.row(qi)[j];
          xn += double(base.row(i)[j]) * base.row(i)[j];
        }
        const double eps = g.bound->query_bound(std::sqrt(qn), std::sqrt(xn));
        const double err = std::fabs(tensor_key(queries.row(qi), base.row(i), d, split) - exact);
        ASSERT_LE(err, eps) << (split ? "tf32x3" : "tf32") << " query " << qi << " row " << i;
        worst = std::max(worst, err / eps);
      }
    EXPECT_GT(worst, 0.0);
  }
  // On integers up to 2048 the TF32 paths are exact: no guard.
  EXPECT_FALSE(detail::decide_guard(kp, DistanceAlgorithm::Tf32, detail::ValueStats{true, true, 255.f}, 128).bound);
  EXPECT_TRUE(detail::decide_guard(kp, DistanceAlgorithm::Tf32, detail::ValueStats{true, true, 4096.f}, 4).bound);
}

}  // namespace
}  // namespace gknn::testing
