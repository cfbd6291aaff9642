#include "testing/data.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "gknn/search.hpp"

#include "testing/sanitize.hpp"

namespace gknn::testing {

HostMatrix<float> random_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  HostMatrix<float> m(rows, cols);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (auto& v : m.data) v = u(rng);
  return m;
}

HostMatrix<float> integer_matrix(int64_t rows, int64_t cols, int lo, int hi, uint64_t seed) {
  HostMatrix<float> m(rows, cols);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  for (auto& v : m.data) v = static_cast<float>(u(rng));
  return m;
}

void near_ties(int64_t n, int64_t d, int64_t q, HostMatrix<float>& base, HostMatrix<float>& queries) {
  queries = random_matrix(q, d, 5);
  for (int64_t i = 0; i < q; ++i)
    for (int64_t j = 0; j < d; ++j) queries.row(i)[j] = 4.f + 8.f * queries.row(i)[j];  // norms far from 0
  base = HostMatrix<float>(n, d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const float v = queries.row(i % q)[j];
      float moved = j == i % d ? std::nextafter(v, 100.f) : v;
      if (i % 7 == 0 && j == (i + 1) % d) moved = std::nextafter(std::nextafter(v, -100.f), -100.f);
      base.row(i)[j] = moved;
    }
}

namespace {
HostMatrix<float> constant_matrix(int64_t rows, int64_t cols, float value) {
  HostMatrix<float> m(rows, cols);
  for (auto& v : m.data) v = value;
  return m;
}

HostMatrix<float> with_duplicates(HostMatrix<float> m) {
  for (int64_t i = 1; i < m.rows; i += 3)
    for (int64_t j = 0; j < m.cols; ++j) m.row(i)[j] = m.row(i - 1)[j];
  return m;
}
}  // namespace

std::vector<Case> search_cases(bool large) {
  std::vector<Case> c;
  c.push_back({"random_k10", random_matrix(1000, 32, 1), random_matrix(37, 32, 2), 10, false});
  c.push_back({"random_odd_sizes", random_matrix(1237, 77, 3), random_matrix(53, 77, 4), 33, false});
  c.push_back({"integer_ties", integer_matrix(700, 8, 0, 3, 5), integer_matrix(29, 8, 0, 3, 6), 17, true});
  c.push_back({"all_equal", constant_matrix(300, 16, 0.5f), constant_matrix(5, 16, 0.5f), 20, true});
  c.push_back({"duplicates", with_duplicates(integer_matrix(400, 12, -4, 4, 7)), integer_matrix(9, 12, -4, 4, 8), 25, true});
  c.push_back({"k1", random_matrix(513, 24, 9), random_matrix(31, 24, 10), 1, false});
  c.push_back({"k_equals_n", integer_matrix(129, 6, -2, 2, 11), integer_matrix(7, 6, -2, 2, 12), 129, true});
  c.push_back({"k_greater_than_n", random_matrix(50, 10, 13), random_matrix(6, 10, 14), 64, false});
  c.push_back({"n1", random_matrix(1, 16, 15), random_matrix(4, 16, 16), 3, false});
  c.push_back({"d1", integer_matrix(301, 1, -50, 50, 17), integer_matrix(11, 1, -50, 50, 18), 15, true});
  c.push_back({"q1", random_matrix(999, 40, 19), random_matrix(1, 40, 20), 12, false});
  if (large) {
    // Sanitizer-sized (testing/sanitize.hpp): fewer rows and queries, the same dimension and odd sizes.
    c.push_back({"d1000", random_matrix(sized(600, 130), 1000, 21), random_matrix(sized(13, 5), 1000, 22), 9, false});
    c.push_back({"many_rows", random_matrix(20011, 20, 23), random_matrix(sized(67, 5), 20, 24), 50, false});
  }
  return c;
}

bool outside_exact_range(DistanceAlgorithm algorithm, const HostMatrix<float>& base, const HostMatrix<float>& queries) {
  if (!distance_requires_integer_data(algorithm)) return false;
  bool negative = false;
  double max_abs = 0;
  for (const HostMatrix<float>* m : {&base, &queries})
    for (float v : m->data) {
      if (!(v == std::nearbyint(v))) return true;  // fractions, NaN, +-inf
      negative = negative || v < 0;
      max_abs = std::max(max_abs, std::fabs(double(v)));
    }
  if (algorithm == DistanceAlgorithm::LpBytes || algorithm == DistanceAlgorithm::Int8Mma)
    return max_abs > (negative ? 127 : 255) || (algorithm == DistanceAlgorithm::Int8Mma && base.cols > 131071);
  return max_abs > 2048 || (negative ? 4.0 : 2.0) * double(base.cols) * max_abs * max_abs >= 16777216.0;
}

}  // namespace gknn::testing
