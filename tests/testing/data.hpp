// data.hpp: the named datasets of the parameterised suites (fixed seeds plus adversarial shapes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gknn/io.hpp"

namespace gknn::testing {

struct Case {
  std::string name;
  HostMatrix<float> base;
  HostMatrix<float> queries;
  int64_t k = 0;
  bool exact = false;  ///< integer-valued data: every algorithm must return identical indices
};

/// Uniform [0,1) floats, fixed seed.
HostMatrix<float> random_matrix(int64_t rows, int64_t cols, uint64_t seed);
/// Small integers in [lo, hi]: float arithmetic on them is exact, so ties are real ties.
HostMatrix<float> integer_matrix(int64_t rows, int64_t cols, int lo, int hi, uint64_t seed);

/// Rows at distances one float ulp apart from the queries: base row i is query (i % q) with component (i % d)
/// moved by one ulp (a few of them by two), so most distances tie within far less than float32 or TF32 GEMM
/// rounding: the exactness guard's certificates fail and its retries must reach the exact order.
void near_ties(int64_t n, int64_t d, int64_t q, HostMatrix<float>& base, HostMatrix<float>& queries);

/// The search cases of the suite: random, ties, all-equal, duplicates, k=1, k=n, k>n, n=1, d=1, d=1000,
/// sizes that are multiples of no tile. `scale` < 1 shrinks the large cases for slow algorithms.
std::vector<Case> search_cases(bool large = true);

/// True when a distance algorithm exact only on integer data (distance_requires_integer_data) must refuse these
/// data: a value not an integer, or outside the algorithm's documented range (lp_bytes, int8_mma: 0..255, or -127..127
/// with negative values, int8_mma also d <= 131071; the fp16 paths: |x| <= 2048 and 2 d max|x|^2 < 2^24, 4 d max|x|^2
/// with negative values).
/// Written from the documentation, not from the library's check, so that a wrong refusal fails the suites.
bool outside_exact_range(DistanceAlgorithm algorithm, const HostMatrix<float>& base, const HostMatrix<float>& queries);

}  // namespace gknn::testing
