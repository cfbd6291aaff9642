// rerank_test.cpp: the exactness guard of rerank.hpp on a CPU emulation of a lower-precision GEMM: inputs rounded
// to m mantissa bits (TF32 10, bf16 7), exact products, float32 accumulation, keys |x|^2 - 2 q.x + |q|^2 in float32.
// The K' best computed keys are re-ranked exactly and certified; uncertified queries retry with 4x the candidates.
// Ids and order must equal the float64 oracle's on random data, near-ties (distances one float ulp apart),
// duplicates and wide value ranges; the computed keys must stay within the stated bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/guard.hpp"
#include "core/rerank.hpp"
#include "cpu/distance/exact.hpp"
#include "cpu/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"

namespace gknn::testing {
namespace {

/// x rounded to nearest-even at `bits` explicit mantissa bits (TF32: 10, bf16: 7).
float round_mantissa(float x, int bits) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const int drop = 23 - bits;
  const uint32_t half = (1u << (drop - 1)) - 1 + ((u >> drop) & 1u);
  u = (u + half) & ~((1u << drop) - 1);
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

double norm(const float* v, int64_t d) {
  double s = 0;
  for (int64_t i = 0; i < d; ++i) s += double(v[i]) * v[i];
  return std::sqrt(s);
}

/// The emulated tensor-core key of (q, x): rounded inputs, exact products, float32 sums, float32 norms.
float computed_key(const float* q, const float* x, int64_t d, int bits) {
  float dot = 0.f, xx = 0.f, qq = 0.f;
  for (int64_t i = 0; i < d; ++i) {
    dot += static_cast<float>(double(round_mantissa(q[i], bits)) * round_mantissa(x[i], bits));
    xx += x[i] * x[i];
    qq += q[i] * q[i];
  }
  return xx - 2.f * dot + qq;
}

struct Guarded {
  Result result;
  int64_t retries = 0;  ///< query re-runs with more candidates
};

/// The guarded search (core/guard.hpp) over the emulated lower-precision keys: K' candidates per query, exact
/// re-rank, certificate, retries.
Guarded guarded_search(FloatView base, FloatView queries, int64_t k, int bits) {
  const int64_t n = base.rows, d = base.cols;
  detail::GuardSource source;
  source.rows = n;
  source.max_row_norm = detail::host_max_row_norm(base, 1);
  source.candidates = [&](FloatView q, const SearchParams& pass) {
    const int64_t kc = pass.k;
    Result candidates{q.rows, kc, std::vector<float>(size_t(q.rows * kc)), std::vector<int64_t>(size_t(q.rows * kc))};
    for (int64_t r = 0; r < q.rows; ++r) {
      std::vector<std::pair<float, int64_t>> all;
      for (int64_t i = 0; i < n; ++i) all.push_back({computed_key(q.row(r), base.row(i), d, bits), i});
      std::partial_sort(all.begin(), all.begin() + kc, all.end());
      for (int64_t j = 0; j < kc; ++j) {
        candidates.distances[size_t(r * kc + j)] = all[size_t(j)].first;
        candidates.indices[size_t(r * kc + j)] = all[size_t(j)].second;
      }
    }
    return candidates;
  };
  source.exact_keys = [&](FloatView q, const detail::KeyResult& c) {
    return detail::host_exact_keys(base, q, c, Metric::SquaredL2, 2.0, 1);
  };
  SearchParams kp = params_for(Backend::Cpu, k);
  kp.threads = 1;
  SearchStats stats;
  kp.stats = &stats;
  Guarded g;
  // The emulated inputs are rounded to nearest: half a unit (the tf32 path's bound, core/guard.cpp).
  g.result =
      detail::guarded_keys(source, queries, kp, detail::GuardPath{}, detail::rounded_inputs_bound(bits + 1, d + 3));
  g.retries = stats.guard_retried;
  return g;
}

/// The float64 oracle's ids and squared distances (as float), ties by index.
void expect_oracle(const Result& got, FloatView base, FloatView queries, int64_t k, const char* what) {
  for (int64_t q = 0; q < queries.rows; ++q) {
    std::vector<std::pair<double, int64_t>> all;
    for (int64_t i = 0; i < base.rows; ++i)
      all.push_back({exact_value(Metric::SquaredL2, 2.0, queries.row(q), base.row(i), base.cols), i});
    std::sort(all.begin(), all.end());
    for (int64_t j = 0; j < k; ++j) {
      ASSERT_EQ(got.index(q, j), all[size_t(j)].second) << what << ": query " << q << " rank " << j;
      ASSERT_EQ(got.distance(q, j), static_cast<float>(all[size_t(j)].first)) << what << ": query " << q;
    }
  }
}

TEST(Rerank, ComputedKeysStayWithinTheBound) {
  const HostMatrix<float> base = random_matrix(300, 96, 1), queries = random_matrix(20, 96, 2);
  for (int bits : {10, 7}) {
    const detail::KeyErrorBound bound = detail::rounded_inputs_bound(bits + 1, 96 + 3);  // rounded to nearest
    for (int64_t q = 0; q < queries.rows; ++q)
      for (int64_t i = 0; i < base.rows; ++i) {
        const double exact = exact_value(Metric::SquaredL2, 2.0, queries.row(q), base.row(i), 96);
        const double eps = bound.query_bound(norm(queries.row(q), 96), norm(base.row(i), 96));
        ASSERT_LE(std::fabs(computed_key(queries.row(q), base.row(i), 96, bits) - exact), eps) << bits;
      }
  }
}

TEST(Rerank, RandomDataEqualsTheOracleAtTf32AndBf16) {
  const HostMatrix<float> base = random_matrix(2000, 64, 3), queries = random_matrix(40, 64, 4);
  for (int bits : {10, 7})
    for (int64_t k : {1, 10, 100}) {
      const Guarded g = guarded_search(base.view(), queries.view(), k, bits);
      expect_oracle(g.result, base.view(), queries.view(), k, bits == 10 ? "tf32" : "bf16");
    }
}

TEST(Rerank, NearTiesOneUlpApartAreResolvedExactly) {
  // Every base row is the query plus a tiny offset along one axis: distances differ by about one float ulp, far
  // below the lower-precision error, so certificates fail and the retries must reach the exact order.
  const int64_t n = 300, d = 16;
  HostMatrix<float> queries = random_matrix(3, d, 5);
  HostMatrix<float> base(n, d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const float q = queries.row(i % 3)[j];
      base.row(i)[j] = j == i % d ? std::nextafter(q, 2.f * (q + 1)) : q;
    }
  const Guarded g = guarded_search(base.view(), queries.view(), 10, 10);
  expect_oracle(g.result, base.view(), queries.view(), 10, "near ties");
  EXPECT_GT(g.retries, 0);  // the certificate did refuse the first candidates
}

TEST(Rerank, DuplicatesAndWideRanges) {
  HostMatrix<float> base = integer_matrix(500, 8, 0, 3, 6);  // many exact duplicates: ties by index
  HostMatrix<float> queries = integer_matrix(10, 8, 0, 3, 7);
  expect_oracle(guarded_search(base.view(), queries.view(), 25, 10).result, base.view(), queries.view(), 25, "dups");
  HostMatrix<float> wide = random_matrix(600, 12, 8);
  for (int64_t i = 0; i < 600; ++i)
    for (int64_t j = 0; j < 12; ++j) wide.row(i)[j] *= (i % 5 == 0) ? 1e4f : 1e-2f;  // norms over six decades
  HostMatrix<float> wq = random_matrix(8, 12, 9);
  expect_oracle(guarded_search(wide.view(), wq.view(), 12, 7).result, wide.view(), wq.view(), 12, "wide");
}

TEST(Rerank, BatchedExactKeysAreTheOraclesBitForBit) {
  // The guard's host re-rank sums several rows at once (exact_keys_of_rows): each sum must be exact_key's, bit for bit,
  // or near ties would be ordered differently from the oracle.
  const HostMatrix<float> base = random_matrix(29, 77, 12), queries = random_matrix(3, 77, 13);
  std::vector<const float*> rows;
  for (int64_t i = 0; i < base.rows; ++i) rows.push_back(base.row(i));
  for (Metric m : {Metric::SquaredL2, Metric::InnerProduct, Metric::L1, Metric::Linf, Metric::Lp}) {
    std::vector<double> keys(rows.size());
    detail::cpu::exact_keys_of_rows(m, 3.0, queries.row(2), rows.data(), int64_t(rows.size()), 77, keys.data());
    for (size_t c = 0; c < rows.size(); ++c)
      ASSERT_EQ(keys[c], detail::cpu::exact_key(m, 3.0, queries.row(2), rows[c], 77)) << to_string(m) << " row " << c;
  }
}

TEST(Rerank, CandidateCountsAndTheWholeBase) {
  EXPECT_EQ(detail::first_candidate_count(10, 1000), 26);
  EXPECT_EQ(detail::first_candidate_count(1000, 100000), 1250);
  EXPECT_EQ(detail::first_candidate_count(10, 20), 20);
  EXPECT_EQ(detail::first_candidate_count(100, 100000, detail::rounded_inputs_bound(10, 131)), 264);  // TF32
  EXPECT_EQ(detail::first_candidate_count(100, 100000, detail::KeyErrorBound{std::ldexp(1.0, -21), 387}), 125);
  // K' = n certifies without a margin, even with an infinite bound.
  const HostMatrix<float> base = random_matrix(30, 4, 10), queries = random_matrix(2, 4, 11);
  Result candidates{1, 30, std::vector<float>(30, 0.f), std::vector<int64_t>(30)};
  std::iota(candidates.indices.begin(), candidates.indices.end(), 0);
  const std::vector<double> exact =
      detail::host_exact_keys(base.view(), FloatView{queries.row(1), 1, 4, 0}, candidates, Metric::SquaredL2, 2.0, 1);
  const detail::RerankedRow r =
      detail::rerank_row(candidates, 0, exact.data(), base.rows, 5, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(r.certified);
  ASSERT_EQ(r.top.size(), 5u);
  EXPECT_TRUE(std::is_sorted(r.top.begin(), r.top.end()));
}

// A guarded search's candidate passes (k' > k) run the distance path and the selection resolved at k (GuardPath):
// at k' Auto could take another plan-table row than the one measured for the search's k. A forced selection stays
// forced, and an integer-only path (refused on float data) leaves both to the backend.
TEST(Rerank, CandidatePassesForceThePathResolvedAtK) {
  const int64_t n = 300, d = 8, k = 5;
  const HostMatrix<float> base = random_matrix(n, d, 31), queries = random_matrix(4, d, 32);
  const FloatView b = base.view(), q = queries.view();
  std::vector<SearchParams> passes;
  detail::GuardSource source;
  source.rows = n;
  source.max_row_norm = detail::host_max_row_norm(b, 1);
  source.candidates = [&](FloatView rows, const SearchParams& pass) {
    passes.push_back(pass);
    return detail::cpu::search(b, rows, pass);
  };
  source.exact_keys = [&](FloatView rows, const detail::KeyResult& c) {
    return detail::host_exact_keys(b, rows, c, Metric::SquaredL2, 2.0, 1);
  };
  const auto first_pass = [&](SelectAlgorithm requested, const detail::GuardPath& path) {
    passes.clear();
    SearchParams kp = params_for(Backend::Cpu, k);
    kp.threads = 1;
    kp.select = requested;
    detail::guarded_keys(source, q, kp, path, detail::rounded_inputs_bound(10, d + 3));
    EXPECT_FALSE(passes.empty());
    EXPECT_GT(passes.front().k, k);
    return passes.empty() ? SearchParams{} : passes.front();
  };
  const SearchParams resolved =
      first_pass(SelectAlgorithm::Auto, {DistanceAlgorithm::Direct, SelectAlgorithm::Quickselect});
  EXPECT_EQ(resolved.distance, DistanceAlgorithm::Direct);
  EXPECT_EQ(resolved.select, SelectAlgorithm::Quickselect);
  const SearchParams forced =
      first_pass(SelectAlgorithm::Heap, {DistanceAlgorithm::Direct, SelectAlgorithm::Quickselect});
  EXPECT_EQ(forced.select, SelectAlgorithm::Heap);
  const SearchParams integer_only =
      first_pass(SelectAlgorithm::Auto, {DistanceAlgorithm::Fp16Mma, SelectAlgorithm::Quickselect});
  EXPECT_EQ(integer_only.distance, DistanceAlgorithm::Auto);
  EXPECT_EQ(integer_only.select, SelectAlgorithm::Auto);
}

}  // namespace
}  // namespace gknn::testing
