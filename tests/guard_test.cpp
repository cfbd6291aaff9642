// guard_test.cpp: the exactness guard (core/guard.hpp, SearchParams::guard) through the public API, once per
// backend (GKNN_SUITE_BACKEND = Cpu, label cpu; Cuda, label gpu). Float data on squared L2, L2 and inner product
// must give the float64 oracle's neighbours on every distance path the backend registers (one-shot search, Index,
// ShardedIndex), including rows whose distances differ by one float ulp, values whose squares overflow float32 and
// forced selections that cannot serve the candidates' k'. The near-tie case shows that the unguarded keys get it
// wrong, so the check can fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/search.hpp"
#include "gknn/sharded_index.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"
#include "testing/sanitize.hpp"

namespace gknn::testing {
namespace {

constexpr Backend kBackend = Backend::GKNN_SUITE_BACKEND;
const std::vector<Metric> kGuardedMetrics{Metric::SquaredL2, Metric::L2, Metric::InnerProduct};

CheckOptions exact() {
  CheckOptions o;
  o.exact_indices = true;
  return o;
}

/// The backend's distance paths for `metric` that run on float data (the integer-only ones refuse it).
std::vector<DistanceAlgorithm> float_paths(Metric metric) {
  std::vector<DistanceAlgorithm> out;
  for (DistanceAlgorithm d : distance_algorithms(kBackend, metric))
    if (!distance_requires_integer_data(d)) out.push_back(d);
  return out;
}

/// Sanitizer-sized run (testing/sanitize.hpp): one k, and under racecheck one metric (a kernel's shared-memory
/// protocol does not depend on them; each search costs a tool 0.4-2 s whatever its size).
std::vector<int64_t> ks(std::vector<int64_t> all) { return sanitize_mode() ? std::vector<int64_t>{all[1]} : all; }
std::vector<Metric> metrics() {
  return racecheck_mode() ? std::vector<Metric>{Metric::SquaredL2} : kGuardedMetrics;
}

TEST(Guard, FloatDataEqualsTheOracleOnEveryPath) {
  const HostMatrix<float> base = random_matrix(sanitize_mode() ? 700 : 3001, 37, 1);
  const HostMatrix<float> queries = random_matrix(sanitize_mode() ? 9 : 53, 37, 2);
  for (Metric metric : metrics()) {
    const std::vector<OracleRow> truth = oracle(base.view(), queries.view(), metric, 2.0);
    for (DistanceAlgorithm d : float_paths(metric))
      for (int64_t k : ks({1, 10, 100})) {
        SCOPED_TRACE(to_string(metric) + " " + to_string(d) + " k=" + std::to_string(k));
        SearchParams p = params_for(kBackend, k, metric);
        p.distance = d;
        const Result got = search(base.view(), queries.view(), p);
        ASSERT_EQ("", check_search(got, base.view(), queries.view(), p, exact(), &truth));
      }
  }
}

/// A guarded search of path `d` at k, checked against the oracle (its stats returned), and whether the same search
/// without the guard misses the oracle's order.
struct GuardedAndNot {
  SearchStats stats;
  bool unguarded_missed = false;
};
GuardedAndNot search_guarded_and_not(const HostMatrix<float>& base, const HostMatrix<float>& queries,
                                     const std::vector<OracleRow>& truth, DistanceAlgorithm d, int64_t k) {
  GuardedAndNot out;
  SearchParams p = params_for(kBackend, k);
  p.distance = d;
  p.stats = &out.stats;
  EXPECT_EQ("", check_search(search(base.view(), queries.view(), p), base.view(), queries.view(), p, exact(), &truth));
  p.guard = Guard::Off;
  p.stats = nullptr;
  out.unguarded_missed =
      !check_search(search(base.view(), queries.view(), p), base.view(), queries.view(), p, exact(), &truth).empty();
  return out;
}

TEST(Guard, NearTiesOneUlpApartAreResolvedAndTheUnguardedKeysAreNot) {
  HostMatrix<float> base, queries;
  // 2000 rows in every run: the 5 queries' near-copies (n / 5 each) must outnumber a path's first-pass candidates,
  // or every tie is a candidate and nothing defeats the certificate (400 rows, sanitized run 2026-11-27: tf32 at
  // k = 10 retried no query). A sanitizer pays per search, not per row.
  near_ties(2000, 24, 5, base, queries);
  const std::vector<OracleRow> truth = oracle(base.view(), queries.view(), Metric::SquaredL2, 2.0);
  int unguarded_misses = 0;
  for (DistanceAlgorithm d : float_paths(Metric::SquaredL2))
    for (int64_t k : ks({64, 10})) {
      SCOPED_TRACE(to_string(d) + " k=" + std::to_string(k));
      const GuardedAndNot r = search_guarded_and_not(base, queries, truth, d, k);
      if (d != DistanceAlgorithm::Reference) {
        EXPECT_GT(r.stats.guard_candidates, k);
        EXPECT_GT(r.stats.guard_retried, 0) << "near ties must defeat the first certificate";
      }
      unguarded_misses += r.unguarded_missed;
    }
  EXPECT_GT(unguarded_misses, 0) << "the float32 keys alone should misorder one-ulp ties somewhere";
}

/// Byte-sized integer rows whose squared distances pass 2^24 (d = 300, queries 0..3 against rows of 252..255), where
/// float32 holds a key only to 2 units: base rows come in pairs one unit apart for query p % q (component 0 one
/// above the query's, then equal to it), the nearer row second, so that a rounding tie puts the farther row first.
/// Then `near` rows of 0..255, whose keys (about 6.5e6) float32 holds exactly: a query's first candidates, so that
/// a certificate meets both kinds of key in one round.
void far_byte_pairs(int64_t pairs, int64_t near, int64_t d, int64_t q, HostMatrix<float>& base,
                    HostMatrix<float>& queries) {
  queries = integer_matrix(q, d, 0, 3, 61);
  const HostMatrix<float> far = integer_matrix(pairs, d, 252, 255, 62);
  const HostMatrix<float> close = integer_matrix(near, d, 0, 255, 63);
  base = HostMatrix<float>(2 * pairs + near, d);
  for (int64_t i = 0; i < near; ++i) std::copy(close.row(i), close.row(i) + d, base.row(2 * pairs + i));
  for (int64_t i = 0; i < pairs; ++i)
    for (int64_t twin = 0; twin < 2; ++twin) {
      float* row = base.row(2 * i + twin);
      std::copy(far.row(i), far.row(i) + d, row);
      row[0] = queries.row(i % q)[0] + (twin == 0 ? 1.f : 0.f);
    }
}

TEST(Guard, IntegerKeysPast2To24AreResolvedOnEveryPathThatTakesThem) {
  // float32 paths (sums past 2^24) and int8_mma (exact integer keys rounded once) go through the guard; fp16_mma
  // and the fused kernel refuse such data (their fp32 accumulation would not be exact).
  HostMatrix<float> base, queries;
  far_byte_pairs(sanitize_mode() ? 150 : 600, 20, 300, 5, base, queries);
  const std::vector<OracleRow> truth = oracle(base.view(), queries.view(), Metric::SquaredL2, 2.0);
  int unguarded_misses = 0, paths = 0;
  for (DistanceAlgorithm d : distance_algorithms(kBackend, Metric::SquaredL2)) {
    if (outside_exact_range(d, base, queries) || d == DistanceAlgorithm::Reference) continue;
    ++paths;
    for (int64_t k : ks({64, 10})) {
      SCOPED_TRACE(to_string(d) + " k=" + std::to_string(k));
      const GuardedAndNot r = search_guarded_and_not(base, queries, truth, d, k);
      EXPECT_GT(r.stats.guard_candidates, k) << "keys past 2^24 are not exact in float32: the guard must run";
      unguarded_misses += r.unguarded_missed;
    }
  }
  EXPECT_GT(paths, 0);
  if (kBackend == Backend::Cuda) {
    const std::vector<DistanceAlgorithm> all = distance_algorithms(kBackend, Metric::SquaredL2);
    EXPECT_NE(std::find(all.begin(), all.end(), DistanceAlgorithm::Int8Mma), all.end()) << "int8_mma takes byte data";
  }
  EXPECT_GT(unguarded_misses, 0) << "rounded keys past 2^24 should misorder a pair one unit apart somewhere";
}

TEST(Guard, TheCertificateIsTakenWhereTheBaseIs) {
  // cuda: every pass of a base on the device re-ranks and certifies its candidates in the search
  // (SearchStats::guard_device_rows: the first pass's queries plus the retried ones); a base streamed from the host
  // (a budget below its size) and the CPU backend re-rank on the host. The answers are the oracle's either way.
  const int64_t n = sanitize_mode() ? 900 : 4000, d = 40;
  const HostMatrix<float> base = random_matrix(n, d, 21), queries = random_matrix(sanitize_mode() ? 7 : 33, d, 22);
  const bool device = kBackend == Backend::Cuda;
  for (Metric metric : metrics()) {
    SCOPED_TRACE(to_string(metric));
    const std::vector<OracleRow> truth = oracle(base.view(), queries.view(), metric, 2.0);
    SearchParams p = params_for(kBackend, 20, metric);
    SearchStats stats;
    p.stats = &stats;
    const Result one_shot = search(base.view(), queries.view(), p);
    ASSERT_EQ("", check_search(one_shot, base.view(), queries.view(), p, exact(), &truth));
    EXPECT_GT(stats.guard_candidates, 20);
    EXPECT_EQ(device ? queries.rows + stats.guard_retried : 0, stats.guard_device_rows);
    Index index(d, metric, kBackend);
    index.add(base.view());
    const Result resident = index.search(queries.view(), p);
    ASSERT_EQ("", check_search(resident, base.view(), queries.view(), p, exact(), &truth));
    EXPECT_EQ(device ? queries.rows + stats.guard_retried : 0, stats.guard_device_rows);
    p.memory_budget = static_cast<size_t>(n * d) * sizeof(float);  // the base needs more than half: streamed
    const Result streamed = search(base.view(), queries.view(), p);
    ASSERT_EQ("", check_search(streamed, base.view(), queries.view(), p, exact(), &truth));
    EXPECT_EQ(0, stats.guard_device_rows);
    EXPECT_EQ(one_shot.indices, streamed.indices);
    EXPECT_EQ(one_shot.distances, streamed.distances);
  }
}

TEST(Guard, IndexAndShardedIndexAreGuardedToo) {
  const HostMatrix<float> base = random_matrix(1500, 20, 3), queries = random_matrix(31, 20, 4);
  std::vector<int64_t> ids(1500);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 10 * int64_t(i) + 7;
  for (Metric metric : metrics()) {
    SCOPED_TRACE(to_string(metric));
    const SearchParams p = params_for(kBackend, 25, metric);
    Index index(20, metric, kBackend);
    index.add(FloatView{base.row(0), 600, 20, 0});
    index.add(FloatView{base.row(600), 900, 20, 0});
    ASSERT_EQ("", check_search(index.search(queries.view(), p), base.view(), queries.view(), p, exact()));
    ShardedIndex sharded(20, {ShardDevice{kBackend, 0}, ShardDevice{kBackend, 0}, ShardDevice{kBackend, 0}},
                         ShardMode::Sharded, metric);
    sharded.add(base.view(), {700, 0, 800});
    ASSERT_EQ("", check_search(sharded.search(queries.view(), p), base.view(), queries.view(), p, exact()));
    // User ids map after the re-rank.
    Index with_ids(20, metric, kBackend);
    with_ids.add_with_ids(base.view(), ids.data());
    const Result mapped = with_ids.search(queries.view(), p), plain = index.search(queries.view(), p);
    for (size_t e = 0; e < plain.indices.size(); ++e) ASSERT_EQ(mapped.indices[e], 10 * plain.indices[e] + 7);
  }
}

TEST(Guard, CertificatesOverManyComponentsAndCandidates) {
  // The certificate's float64 keys at d = 1 and d = 300 (cuda: the rows pass through shared memory in chunks of
  // components: one partial chunk, and many with a partial last one) and K' from 750 (cublas) to 1264 (tf32): several
  // rounds of candidates a query, the last one partial. On cuda every query is certified on the device.
  const int64_t n = sanitize_mode() ? 800 : 1500, k = sanitize_mode() ? 300 : 600;
  const bool device = kBackend == Backend::Cuda;
  for (int64_t d : {int64_t(1), int64_t(300)}) {
    const HostMatrix<float> base = random_matrix(n, d, 40 + d), queries = random_matrix(5, d, 41 + d);
    for (Metric metric : metrics()) {
      const std::vector<OracleRow> truth = oracle(base.view(), queries.view(), metric, 2.0);
      for (DistanceAlgorithm path : float_paths(metric)) {
        SCOPED_TRACE(to_string(metric) + " " + to_string(path) + " d=" + std::to_string(d));
        SearchParams p = params_for(kBackend, k, metric);
        p.distance = path;
        SearchStats stats;
        p.stats = &stats;
        ASSERT_EQ("", check_search(search(base.view(), queries.view(), p), base.view(), queries.view(), p, exact(),
                                   &truth));
        if (device && stats.guard_candidates > k)
          EXPECT_EQ(queries.rows + stats.guard_retried, stats.guard_device_rows);
      }
    }
  }
}

TEST(Guard, ValuesWhoseSquaresOverflowFloat32) {
  // Squared distances beyond FLT_MAX: the float32 keys are inf, which bounds nothing; the guard widens to every row.
  HostMatrix<float> base = random_matrix(300, 6, 6), queries = random_matrix(4, 6, 7);
  for (int64_t i = 0; i < base.rows; ++i)
    for (int64_t j = 0; j < 6; ++j) base.row(i)[j] = (base.row(i)[j] - 0.5f) * (i % 3 == 0 ? 3e19f : 1e3f);
  for (int64_t k : {int64_t(1), int64_t(20)}) {
    const SearchParams p = params_for(kBackend, k);
    ASSERT_EQ("", check_search(search(base.view(), queries.view(), p), base.view(), queries.view(), p, exact()));
  }
}

TEST(Guard, ExactTiesAtTheKthDistanceTakeEveryTiedRow) {
  // 700 copies of one float row among random rows: the first k copies by index are the answer, and no certificate
  // holds until every copy is a candidate (their computed keys tie only up to rounding); all-equal rows need every row.
  const int64_t n = 1500, d = 19;
  HostMatrix<float> base = random_matrix(n, d, 14), queries = random_matrix(3, d, 15);
  for (int64_t i = 0; i < n; i += 2)
    if (i < 1400) std::copy(queries.row(i % 3), queries.row(i % 3) + d, base.row(i));
  HostMatrix<float> same(300, d);
  for (int64_t i = 0; i < 300; ++i) std::copy(queries.row(0), queries.row(0) + d, same.row(i));
  for (int64_t k : ks({1, 10, 200})) {
    SCOPED_TRACE("k=" + std::to_string(k));
    for (Metric metric : metrics()) {
      const SearchParams p = params_for(kBackend, k, metric);
      ASSERT_EQ("", check_search(search(base.view(), queries.view(), p), base.view(), queries.view(), p, exact()));
      ASSERT_EQ("", check_search(search(same.view(), queries.view(), p), same.view(), queries.view(), p, exact()));
    }
  }
}

TEST(Guard, AlwaysOnExactDataChangesNothingAndOffIsAllowed) {
  const HostMatrix<float> base = integer_matrix(900, 16, -9, 9, 8), queries = integer_matrix(12, 16, -9, 9, 9);
  for (Metric metric : metrics()) {
    SearchParams p = params_for(kBackend, 33, metric);
    const Result plain = search(base.view(), queries.view(), p);
    p.guard = Guard::Always;
    SearchStats stats;
    p.stats = &stats;
    const Result always = search(base.view(), queries.view(), p);
    EXPECT_GT(stats.guard_candidates, 33);
    EXPECT_EQ(always.indices, plain.indices);
    EXPECT_EQ(always.distances, plain.distances);
    ASSERT_EQ("", check_search(always, base.view(), queries.view(), p, exact()));
  }
}

TEST(Guard, ForcedSelectionsThatCannotServeTheCandidatesStillWork) {
  const HostMatrix<float> base = random_matrix(2600, 8, 10), queries = random_matrix(6, 8, 11);
  for (const SelectCapability& s : select_algorithms(kBackend)) {
    if (s.max_k < 100 || s.max_k >= base.rows) continue;
    const int64_t k = s.max_k;  // k' = k + k / 4 > the selection's limit
    SCOPED_TRACE(to_string(s.algorithm) + " k=" + std::to_string(k));
    SearchParams p = params_for(kBackend, k);
    p.select = s.algorithm;
    ASSERT_EQ("", check_search(search(base.view(), queries.view(), p), base.view(), queries.view(), p, exact()));
  }
}

TEST(Guard, ExplainSaysWhetherAndWhy) {
  const HostMatrix<float> floats = random_matrix(200, 32, 12), ints = integer_matrix(200, 32, 0, 9, 13);
  const SearchParams p = params_for(kBackend, 10);
  const SearchPlan f = explain_search(floats.view(), floats.view(), p);
  EXPECT_TRUE(f.guarded) << f.guard_reason;
  EXPECT_NE(f.guard_reason.find("re-rank"), std::string::npos) << f.guard_reason;
  const SearchPlan i = explain_search(ints.view(), ints.view(), p);
  EXPECT_FALSE(i.guarded) << i.guard_reason;
  EXPECT_NE(i.guard_reason.find("not needed"), std::string::npos) << i.guard_reason;
  const SearchPlan l1 = explain_search(floats.view(), floats.view(), params_for(kBackend, 10, Metric::L1));
  EXPECT_FALSE(l1.guarded) << l1.guard_reason;
  SearchParams off = p;
  off.guard = Guard::Off;
  EXPECT_FALSE(explain_search(floats.view(), floats.view(), off).guarded);
  EXPECT_NE(to_string(f).find("guard        re-rank"), std::string::npos) << to_string(f);
}

}  // namespace
}  // namespace gknn::testing
