// adversarial_test.cpp: adversarial data through every distance and selection entry of a backend's registries
// (gknn::distance_algorithms(backend, metric) for every metric, gknn::select_algorithms(backend)): a new
// algorithm joins by being registered. Data: +-0 coordinates, all-equal rows, base rows sorted ascending and
// descending by distance, n = 1, d = 1, d = 4096, k = n, k > n, row counts and k one off every tile and k bucket
// (31/33 ... 4095/4097), and the rejection of +-inf and NaN coordinates (validation, same policy on every
// backend: InvalidArgument naming the row). Built once per backend like the suites: adversarial_cpu (label cpu)
// and adversarial_gpu (label gpu). The expectation is the float64 oracle with exact indices on integer data.
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gknn/error.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"
#include "testing/sanitize.hpp"
#include "testing/tang.hpp"

namespace gknn::testing {
namespace {

constexpr Backend kBackend = Backend::GKNN_SUITE_BACKEND;
constexpr double kP = 3.0;  ///< exponent of Metric::Lp

const std::vector<Metric> kMetrics{Metric::SquaredL2, Metric::L2,   Metric::InnerProduct, Metric::Cosine,
                                   Metric::L1,        Metric::Linf, Metric::Lp};

struct Entry {
  DistanceAlgorithm distance = DistanceAlgorithm::Auto;
  SelectAlgorithm select = SelectAlgorithm::Auto;
  TangOptions tang;
  Metric metric = Metric::SquaredL2;
  int64_t max_k = std::numeric_limits<int64_t>::max();
};

std::string entry_name(const Entry& e) {
  std::string s = to_string(e.metric) + "__" + to_string(e.distance) + "__" + select_name(e.select, e.tang);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

/// Every distance entry for every metric (default selection), every selection entry (default distance) for a
/// distance and a similarity metric; Tang's queues plain and with every option on.
std::vector<Entry> entries() {
  std::vector<Entry> out;
  for (Metric m : kMetrics)
    for (DistanceAlgorithm d : distance_algorithms(kBackend, m)) out.push_back({d, SelectAlgorithm::Auto, {}, m});
  for (Metric m : {Metric::SquaredL2, Metric::InnerProduct})
    for (const SelectCapability& s : select_algorithms(kBackend)) {
      out.push_back({DistanceAlgorithm::Auto, s.algorithm, {}, m, s.max_k});
      if (!is_tang(s.algorithm)) continue;
      TangOptions all;
      all.aligned = all.buffered = all.hierarchical = true;
      out.push_back({DistanceAlgorithm::Auto, s.algorithm, all, m, s.max_k});
    }
  return out;
}

struct AdversarialCase {
  std::string name;
  HostMatrix<float> base, queries;
  std::vector<int64_t> ks;
  bool exact = true;  ///< integer data: identical indices required (metrics with exact float arithmetic)
};

HostMatrix<float> filled(int64_t rows, int64_t cols, float (*value)(int64_t row, int64_t col)) {
  HostMatrix<float> m(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m.row(i)[j] = value(i, j);
  return m;
}

/// Integers in [-1, 2] with every zero given a random sign, and column 0 never zero (cosine needs a direction).
HostMatrix<float> signed_zeros(int64_t rows, int64_t cols, uint64_t seed) {
  HostMatrix<float> m = integer_matrix(rows, cols, -1, 2, seed);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      if (m.row(i)[j] == 0.f && (rng() & 1)) m.row(i)[j] = -0.0f;
    if (m.row(i)[0] == 0.f) m.row(i)[0] = 1.f;
  }
  return m;
}

std::vector<AdversarialCase> cases() {
  std::vector<AdversarialCase> c;
  c.push_back({"signed_zeros", signed_zeros(257, 8, 1), signed_zeros(9, 8, 2), {1, 33, 257}});
  c.push_back({"all_equal", filled(257, 8, [](int64_t, int64_t) { return 2.f; }),
               filled(5, 8, [](int64_t, int64_t) { return 2.f; }), {1, 32, 257, 300}});
  // Row i at distance growing (ascending) or shrinking (descending) with i from the query (-1, ..., -1).
  c.push_back({"rows_ascending", filled(129, 4, [](int64_t i, int64_t j) { return float(i + j % 2); }),
               filled(3, 4, [](int64_t, int64_t) { return -1.f; }), {1, 64, 129}});
  c.push_back({"rows_descending", filled(129, 4, [](int64_t i, int64_t j) { return float(200 - i + j % 2); }),
               filled(3, 4, [](int64_t, int64_t) { return -1.f; }), {1, 64, 129}});
  c.push_back({"n1", integer_matrix(1, 6, 1, 3, 3), integer_matrix(4, 6, -2, 2, 4), {1, 5}});
  c.push_back({"d1", integer_matrix(257, 1, 1, 40, 5), integer_matrix(7, 1, -40, 40, 6), {1, 31, 257, 258}});
  c.push_back({"d4096", integer_matrix(sized(65, 33), 4096, -1, 1, 7), integer_matrix(3, 4096, -1, 1, 8), {1, 10, 33}});
  // Row counts and k one off every k bucket and common tile sizes; k > n included.
  std::vector<int64_t> ks;
  for (int64_t bucket : {32, 64, 128, 256, 512, 1024, 2048, 4096})
    for (int64_t k : {bucket - 1, bucket + 1}) ks.push_back(k);
  c.push_back({"off_by_one_4097", integer_matrix(4097, 3, -3, 3, 9), integer_matrix(3, 3, -3, 3, 10), ks});
  // Sanitized: the side above each edge only (gpu_select_small and the select suite meet both sides of every bucket).
  for (int64_t n : {31, 33, 127, 129, 255, 257, 1023, 1025}) {
    if (sanitize_mode() && n % 2 == 1 && (n + 1) % 32 == 0) continue;
    c.push_back({"off_by_one_" + std::to_string(n), integer_matrix(n, 5, -2, 2, uint64_t(20 + n)),
                 integer_matrix(n % 7 + 1, 5, -2, 2, uint64_t(30 + n)), {n - 1, n, n + 1}});
  }
  c.push_back({"queries_257", integer_matrix(300, 6, -2, 2, 40), integer_matrix(257, 6, -2, 2, 41), {7}});
  return c;
}

const std::vector<AdversarialCase>& shared_cases() {
  static const std::vector<AdversarialCase> c = cases();
  return c;
}

/// The float64 oracle of a case and metric, computed once and shared by every entry and k.
const std::vector<OracleRow>& shared_oracle(size_t case_index, Metric metric) {
  static std::map<std::pair<size_t, Metric>, std::vector<OracleRow>> cache;
  auto [it, inserted] = cache.try_emplace({case_index, metric});
  if (inserted) {
    const AdversarialCase& tc = shared_cases()[case_index];
    it->second = oracle(tc.base.view(), tc.queries.view(), metric, kP);
  }
  return it->second;
}

class Adversarial : public ::testing::TestWithParam<Entry> {};

/// The k values an entry meets in a case. Sanitizer-sized run (testing/sanitize.hpp; compute-sanitizer spent 20-100 s
/// on each entry under racecheck even with one k per case, 2026-11-25, H100):
///   - a distance entry (selection Auto) takes each case's last k (k >= n mostly: padding, the largest selection the
///     case plans) on the cases that reach its rows differently (+-0, all equal, ascending rows, n = 1, d = 1,
///     d = 4096, rows one above a tile, 257 queries); its kernels see the same rows whatever k is;
///   - a selection entry takes the first and the last k of each case, and 33, 1025, 4097 on the 4097-row case (one
///     k above the buckets 32, 1024 and 4096; gpu_select_small and the select suite give every bucket edge);
///     a selector with one thread per row (Garcia's insertion sort, Tang's queues: O(n k) steps in one thread,
///     about 50 us each under memcheck) only where n k <= 4097 x 33 (one Tang queue took memcheck 148 s over
///     this test's cases); with the distance metric only (the search suite gives every selection the similarity
///     under the sanitizer too: its kernels do not depend on the metric otherwise);
///   - under racecheck (testing/sanitize.hpp: racecheck_mode), a distance entry with the distance metric only, and a
///     selection entry with each case's last k only.
std::vector<int64_t> ks_for(const Entry& e, const AdversarialCase& tc) {
  if (!sanitize_mode()) return tc.ks;
  if (e.select != SelectAlgorithm::Auto && e.metric != Metric::SquaredL2) return {};
  if (e.select == SelectAlgorithm::Auto) {
    // racecheck: the distance metric's instantiation; the search suite gives the others one case under racecheck.
    if (racecheck_mode() && e.metric != Metric::SquaredL2) return {};
    static const std::set<std::string> skipped{"rows_descending", "off_by_one_4097", "off_by_one_129",
                                               "off_by_one_257"};
    if (skipped.contains(tc.name)) return {};
    return {tc.ks.back()};
  }
  std::vector<int64_t> ks = tc.ks;
  if (tc.base.rows == 4097) ks = {33, 1025, 4097};
  else if (ks.size() > 2) ks = {ks.front(), ks.back()};
  // racecheck: a selection entry takes each case's last k (the 4097-row case: 1025 and 4097), the largest selection
  // the case plans; its kernels' other k are the select suite's and gpu_select_small's under racecheck (this test took
  // racecheck 238 s in two shards, run 17, 2026-11-27). The other tools see the first k too.
  if (racecheck_mode()) ks = tc.base.rows == 4097 ? std::vector<int64_t>{1025, 4097} : std::vector<int64_t>{ks.back()};
  const bool one_thread_per_row = e.select == SelectAlgorithm::Insertion || is_tang(e.select);
  std::erase_if(ks, [&](int64_t k) {
    return one_thread_per_row && tc.base.rows * std::min(k, tc.base.rows) > 4097 * 33;
  });
  return ks;
}

TEST_P(Adversarial, MatchesTheOracle) {
  const Entry& e = GetParam();
  for (size_t ci = 0; ci < shared_cases().size(); ++ci) {
    const AdversarialCase& tc = shared_cases()[ci];
    for (int64_t k : ks_for(e, tc)) {
      if (std::min(k, tc.base.rows) > e.max_k) continue;  // beyond this selection's registered maximum
      SCOPED_TRACE(tc.name + " k=" + std::to_string(k));
      SearchParams params;
      params.k = k;
      params.metric = e.metric;
      params.p = kP;
      params.backend = kBackend;
      params.distance = e.distance;
      params.select = e.select;
      params.select_options.tang = e.tang;
      if (outside_exact_range(e.distance, tc.base, tc.queries)) {
        EXPECT_THROW(search(tc.base.view(), tc.queries.view(), params), Error);  // refused, never inexact
        continue;
      }
      Result got;
      ASSERT_NO_THROW(got = search(tc.base.view(), tc.queries.view(), params));
      CheckOptions opt;
      opt.exact_indices = tc.exact && e.metric != Metric::Cosine && e.metric != Metric::L2 && e.metric != Metric::Lp;
      ASSERT_EQ("", check_search(got, tc.base.view(), tc.queries.view(), params, opt, &shared_oracle(ci, e.metric)));
    }
  }
}

TEST_P(Adversarial, RejectsNonFiniteCoordinatesNamingTheRow) {
  const Entry& e = GetParam();
  SearchParams params;
  params.k = 3;
  params.metric = e.metric;
  params.backend = kBackend;
  params.distance = e.distance;
  params.select = e.select;
  params.select_options.tang = e.tang;
  const HostMatrix<float> good = integer_matrix(20, 4, 1, 3, 50);
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    for (bool in_base : {true, false}) {
      HostMatrix<float> poisoned = good;
      poisoned.row(13)[2] = bad;
      SCOPED_TRACE(std::string(in_base ? "base" : "queries") + " holds " + std::to_string(bad));
      try {
        (void)(in_base ? search(poisoned.view(), good.view(), params) : search(good.view(), poisoned.view(), params));
        ADD_FAILURE() << "a non-finite coordinate was accepted";
      } catch (const Error& err) {
        EXPECT_EQ(err.code(), ErrorCode::InvalidArgument);
        EXPECT_NE(std::string(err.what()).find("row 13"), std::string::npos) << err.what();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GKNN_SUITE_BACKEND, Adversarial, ::testing::ValuesIn(entries()),
                         [](const ::testing::TestParamInfo<Entry>& info) { return entry_name(info.param); });

TEST(AdversarialCoverage, EveryRegisteredAlgorithmTakesPart) {
  size_t distances = 0, selections = 0;
  for (Metric m : kMetrics) distances += distance_algorithms(kBackend, m).size();
  for (const SelectCapability& s : select_algorithms(kBackend)) selections += is_tang(s.algorithm) ? 4 : 2;
  EXPECT_EQ(entries().size(), distances + selections);
  EXPECT_GT(selections, 0u);
}

}  // namespace
}  // namespace gknn::testing
