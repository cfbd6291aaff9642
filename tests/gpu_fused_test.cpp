// gpu_fused_test.cpp: the fused distance + selection kernel (distance "fused", issue 13): ids and values identical
// to the float64 oracle on every operand type it picks (u8, s8, f16 for integers up to 2048), every row length
// (32..256 bytes), query and base sizes off its 64 x 128 tiles, one split and many (the splits' lists combined
// by a selection, or by the kernel itself for a few queries), ties (duplicates, all-equal rows), k = 1 .. 128, and
// k = 129 .. 1024 (the filter rounds of fused/large_k.cuh: a sampled threshold, a base taken whole, a sample that
// misses the neighbours, all-equal rows that overflow the candidate lists, base tiles), and equal to fp16_mma's
// two-stage result bit for bit; an Index's kept operand copy of its rows (made once, made again
// after add, reset or a change of operand type, never by one-shot searches; Auto takes it for one query). At most 4
// queries on 8-bit data go through the few-query walk (fused/scan.cuh; the tensor-core walk under GKNN_FUSED_SCAN=0,
// the gpu_fused_no_scan part). Label gpu. Sanitizer-sized run (GKNN_TEST_SANITIZE=1,
// testing/sanitize.hpp): fewer base rows and queries, still off the tiles, with one split and many.
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/hooks.hpp"
#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"
#include "testing/sanitize.hpp"

namespace gknn::testing {
namespace {

SearchParams fused_params(int64_t k, Metric metric) {
  SearchParams p = params_for(Backend::Cuda, k, metric);
  p.distance = DistanceAlgorithm::Fused;
  return p;
}

struct FusedCase {
  std::string name;
  HostMatrix<float> base, queries;
  std::vector<int64_t> ks;
};

/// Rows that repeat: `distinct` different rows, each copied many times (exact ties on every metric).
HostMatrix<float> repeated_rows(int64_t rows, int64_t cols, int64_t distinct, int lo, int hi, uint64_t seed) {
  const HostMatrix<float> sites = integer_matrix(distinct, cols, lo, hi, seed);
  HostMatrix<float> out = integer_matrix(rows, cols, lo, hi, seed + 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out.data[r * cols + c] = sites.data[(r * 7 % distinct) * cols + c];
  return out;
}

/// One column falling with the row index: (rows - 1 - r) / tie rows, so a query at 0 finds its neighbours in the
/// last rows (the last splits' lists), in ties of `tie` rows.
HostMatrix<float> falling_rows(int64_t rows, int64_t tie) {
  HostMatrix<float> out = integer_matrix(rows, 1, 0, 0, 0);
  for (int64_t r = 0; r < rows; ++r) out.data[r] = static_cast<float>((rows - 1 - r) / tie);
  return out;
}

/// Rows near 0 (values 0..1) exactly where the large-k sample of k = `k` looks (every 2k/64-th row), all others
/// far (200..255): the sample's threshold admits fewer than k rows, so the query needs the later rounds.
HostMatrix<float> sample_missing_rows(int64_t rows, int64_t k) {
  const int64_t spacing = std::max<int64_t>(1, 2 * k / 64);
  HostMatrix<float> out = integer_matrix(rows, 8, 200, 255, 69);
  const HostMatrix<float> near = integer_matrix(rows, 8, 0, 1, 70);
  for (int64_t r = 0; r < rows; r += spacing)
    std::copy_n(near.data.begin() + r * 8, 8, out.data.begin() + r * 8);
  return out;
}

std::vector<FusedCase> cases() {
  std::vector<FusedCase> c;
  // u8 operands, 128-byte rows (SIFT-like), sizes off the tiles, a few splits.
  // (Sanitized: 1037 = 8 x 128 + 13 base rows, 67 = 64 + 3 queries.)
  c.push_back({"u8_d128", integer_matrix(sized(5037, 1037), 128, 0, 255, 1),
               integer_matrix(sized(131, 67), 128, 0, 255, 2), {1, 16, 100, 128}});
  // One query against a long base: hundreds of splits (sanitized: about 20 of >= 1024 rows), then the selection
  // over their lists.
  c.push_back({"u8_single_query_many_splits", integer_matrix(sized(200003, 20011), 32, 0, 255, 3),
               integer_matrix(1, 32, 0, 255, 4), {1, 100}});
  // s8 operands (signed values), 64-byte rows; 32-byte rows (d = 3, padded).
  c.push_back({"s8_d40", integer_matrix(sized(3001, 1001), 40, -100, 100, 5),
               integer_matrix(77, 40, -100, 100, 6), {7, 64}});
  c.push_back({"s8_d3", integer_matrix(sized(2500, 700), 3, -5, 5, 7), integer_matrix(65, 3, -5, 5, 8), {1, 33, 128}});
  // f16 operands (integers beyond 8 bits, inside fp16_mma's exact range): 2 d M^2 < 2^24.
  c.push_back({"f16_d4", integer_matrix(sized(4100, 1100), 4, 0, 1400, 9),
               integer_matrix(70, 4, 0, 1400, 10), {5, 128}});
  c.push_back({"f16_signed_d2", integer_matrix(sized(2000, 600), 2, -1000, 1000, 11),
               integer_matrix(64, 2, -1000, 1000, 12), {9}});
  // 256-byte rows (the largest fused kernel): u8 d = 200.
  c.push_back({"u8_d200", integer_matrix(sized(2100, 700), 200, 0, 100, 13),
               integer_matrix(66, 200, 0, 100, 14), {1, 50, 128}});
  // Ties: many duplicates (every metric ties exactly), all-equal rows, k = n.
  c.push_back({"duplicates", repeated_rows(sized(6000, 1500), 16, 13, 0, 9, 15),
               integer_matrix(129, 16, 0, 9, 16), {1, 20, 128}});
  c.push_back({"all_equal", integer_matrix(sized(3000, 600), 8, 4, 4, 17), integer_matrix(5, 8, 0, 9, 18), {1, 128}});
  c.push_back({"k_equals_n", integer_matrix(100, 8, 0, 3, 19), integer_matrix(9, 8, 0, 3, 20), {100}});
  // A few queries against a long base: the last block merges the splits' lists in the kernel; ties spread over
  // every list (all-equal rows: the lists' entries below the sample's threshold overflow a merge round, so it
  // takes several) and clustered (repeats).
  c.push_back({"few_queries_all_equal", integer_matrix(sized(60000, 12000), 8, 4, 4, 23),
               integer_matrix(2, 8, 0, 9, 24), {1, 37, 128}});
  c.push_back({"few_queries_duplicates", repeated_rows(sized(100000, 20000), 16, 13, 0, 9, 25),
               integer_matrix(3, 16, 0, 9, 26), {1, 20, 128}});
  // Neighbours in the last splits: the kernel's merge takes lists in thread order, so later rounds find them.
  c.push_back({"few_queries_falling", falling_rows(sized(60000, 12000), 30), integer_matrix(2, 1, 0, 1, 29),
               {1, 37, 128}});
  c.push_back({"four_queries_d128", integer_matrix(sized(150001, 30001), 128, 0, 255, 27),
               integer_matrix(4, 128, 0, 255, 28), {100}});
  // The few-query walk (fused/scan.cuh) on s8 operands over several splits, and with one split (a base shorter than
  // a split: the list straight into the destination, k = n).
  c.push_back({"few_queries_s8_d40", integer_matrix(sized(9001, 5003), 40, -100, 100, 71),
               integer_matrix(3, 40, -100, 100, 72), {1, 64, 128}});
  c.push_back({"one_query_k_equals_n", integer_matrix(100, 8, 0, 3, 73), integer_matrix(1, 8, 0, 3, 74), {1, 100}});
  // Its 256-byte rows (2 d M^2 < 2^24) over a base that ends inside a block's chunk of rows.
  c.push_back({"few_queries_u8_d200", integer_matrix(sized(12011, 5003), 200, 0, 180, 75),
               integer_matrix(2, 200, 0, 180, 76), {1, 77}});
  // k beyond the shared lists (129 .. 1024): filter rounds. A base of at most 4096 rows is taken whole (one round).
  c.push_back({"large_k_whole_base", integer_matrix(sized(3000, 1000), 24, 0, 50, 21),
               integer_matrix(40, 24, 0, 50, 22), {129, 700}});
  // A longer base: the thresholds come from a strided sample; 70 queries (two query tiles), every operand type.
  c.push_back({"large_k_u8_d128", integer_matrix(sized(20011, 6011), 128, 0, 255, 60),
               integer_matrix(70, 128, 0, 255, 61), {129, 1000, 1024}});
  c.push_back({"large_k_s8_d40", integer_matrix(sized(9001, 5003), 40, -100, 100, 62),
               integer_matrix(17, 40, -100, 100, 63), {200}});
  c.push_back({"large_k_f16_d4", integer_matrix(sized(12000, 6000), 4, 0, 1400, 64),
               integer_matrix(9, 4, 0, 1400, 65), {300}});
  // All-equal rows: every candidate list overflows, so later rounds lower the threshold to columns.
  c.push_back({"large_k_all_equal", integer_matrix(sized(9000, 5000), 8, 4, 4, 66), integer_matrix(5, 8, 0, 9, 67),
               {129, 1000}});
  c.push_back({"large_k_sample_misses", sample_missing_rows(sized(8192, 5000), 1000), integer_matrix(3, 8, 0, 1, 68),
               {1000}});
  return c;
}

TEST(GpuFused, EqualsTheOracleExactly) {
  // racecheck (testing/sanitize.hpp) instruments each kernel instantiation once per process, about 25 s for the fused
  // kernel's: one case per operand type and row length, the ties, and one few-query merge over several rounds
  // (SplitMergeInTheKernelEqualsTheSelection has the others); the fp16 two-stage path is the select suites' (this
  // test did not finish in 120 s, 2026-11-25). The large-k rounds' kernels are LargeKOverBaseTilesAndAKeptCopy's
  // under racecheck (their all-equal case changes the rounds' global candidate lists, not a shared-memory step; this
  // test's racecheck shard took 241 s with it, 2026-11-27); the other tools run it here. Neither u8_d128 (u8 operands,
  // 128-byte rows, the wide block: IdenticalToTheTwoStageFp16Path's kernel under racecheck) nor s8_d40 (s8, 64-byte
  // rows: s8_d3's operands, SplitMergeInTheKernelEqualsTheSelection's row length) meets an instantiation of its own
  // under racecheck (this shard took 244 s with them, run 17, 2026-11-27).
  const std::set<std::string> racecheck_cases{"s8_d3", "f16_d4", "u8_d200", "duplicates", "few_queries_all_equal"};
  const std::vector<FusedCase> all = cases();
  for (const FusedCase& tc : all) {
    if (racecheck_mode() && !racecheck_cases.contains(tc.name)) continue;
    for (Metric m : {Metric::SquaredL2, Metric::InnerProduct, Metric::L2}) {
      // racecheck: the similarity on one case only (s8_d3), and L2 never (its keys are squared L2's); each case at
      // its smallest and largest k.
      if (racecheck_mode() && (m == Metric::L2 || (m == Metric::InnerProduct && tc.name != "s8_d3"))) continue;
      const std::vector<OracleRow> truth = oracle(tc.base.view(), tc.queries.view(), m, 2.0);
      for (int64_t k : tc.ks) {
        if (racecheck_mode() && k != tc.ks.front() && k != tc.ks.back()) continue;
        SCOPED_TRACE(tc.name + " " + to_string(m) + " k=" + std::to_string(k));
        const SearchParams p = fused_params(k, m);
        Result got;
        ASSERT_NO_THROW(got = search(tc.base.view(), tc.queries.view(), p));
        CheckOptions exact;
        exact.exact_indices = true;
        exact.tolerance = m == Metric::L2 ? 2e-7 : 0.0;  // integer values: exact (L2: one sqrt rounding)
        EXPECT_EQ("", check_search(got, tc.base.view(), tc.queries.view(), p, exact, &truth));
      }
    }
  }
}

// The kernel's merge of the splits' lists against the pipeline's selection over them: a few queries against a long
// base (hundreds of splits: the few-query walk's merge, or merge_splits with GKNN_FUSED_SCAN=0) and many queries
// against a short one (<= 4 splits: merge_few_splits).
TEST(GpuFused, SplitMergeInTheKernelEqualsTheSelection) {
  const HostMatrix<float> long_base = integer_matrix(sized(300007, 40009), 64, 0, 255, 40);
  const HostMatrix<float> short_base = integer_matrix(4099, 64, 0, 255, 41);
  for (int64_t nq : {1, 2, 4, 100}) {
    // racecheck: one query count of each merge (merge_splits, merge_few_splits) at the smallest and largest k
    // (89 s for the twelve pairs, 77 s for four: mostly the instrumentation, which 8009 base rows did not shorten
    // either, 2026-11-25).
    if (racecheck_mode() && (nq == 2 || nq == 4)) continue;
    const HostMatrix<float>& base = nq <= 4 ? long_base : short_base;
    const HostMatrix<float> queries = integer_matrix(nq, 64, 0, 255, 42 + nq);
    for (int64_t k : {1, 64, 128}) {
      if (racecheck_mode() && k == 64) continue;
      SCOPED_TRACE("q=" + std::to_string(nq) + " k=" + std::to_string(k));
      const SearchParams p = fused_params(k, Metric::SquaredL2);
      const Result merged = search(base.view(), queries.view(), p);
      detail::cuda::set_fused_split_merge_enabled(false);
      Result selected;
      try {
        selected = search(base.view(), queries.view(), p);
      } catch (...) {
        detail::cuda::set_fused_split_merge_enabled(true);
        throw;
      }
      detail::cuda::set_fused_split_merge_enabled(true);
      EXPECT_EQ(merged.indices, selected.indices);
      EXPECT_EQ(merged.distances, selected.distances);
    }
  }
}

TEST(GpuFused, IdenticalToTheTwoStageFp16Path) {
  const HostMatrix<float> base = integer_matrix(sized(20011, 2011), 128, 0, 255, 30),
                          queries = integer_matrix(sized(700, 130), 128, 0, 255, 31);
  for (Metric m : {Metric::SquaredL2, Metric::InnerProduct}) {
    for (int64_t k : {int64_t(10), int64_t(100), int64_t(1000)}) {
      // racecheck: one pair (the kernels are those of the other tests; 55 s for the four, 2026-11-25).
      if (racecheck_mode() && (m != Metric::SquaredL2 || k != 100)) continue;
      SCOPED_TRACE(to_string(m) + " k=" + std::to_string(k));
      SearchParams p = fused_params(k, m);
      const Result fused = search(base.view(), queries.view(), p);
      p.distance = DistanceAlgorithm::Fp16Mma;
      const Result two_stage = search(base.view(), queries.view(), p);
      EXPECT_EQ(fused.indices, two_stage.indices) << to_string(m) << " k=" << k;
      EXPECT_EQ(fused.distances, two_stage.distances) << to_string(m) << " k=" << k;
    }
  }
}

TEST(GpuFused, RefusedWhereItWouldNotBeExact) {
  SearchParams p = fused_params(5, Metric::SquaredL2);
  const HostMatrix<float> fractions = random_matrix(200, 32, 40);
  EXPECT_THROW(search(fractions.view(), fractions.view(), p), Error);
  const HostMatrix<float> wide = integer_matrix(200, 300, 0, 255, 41);  // 2 * 300 * 255^2 > 2^24
  EXPECT_THROW(search(wide.view(), wide.view(), p), Error);
  p.metric = Metric::L1;  // no GEMM form
  const HostMatrix<float> small = integer_matrix(200, 8, 0, 3, 42);
  EXPECT_THROW(search(small.view(), small.view(), p), Error);
}

// ---- an Index's kept operand copy (OperandCache) ---------------------------------------------------------------

/// Resets the hooks a test changes, even when it fails.
struct CacheHookGuard {
  ~CacheHookGuard() {
    detail::cuda::set_operand_cache_enabled(true);
    detail::cuda::set_tile_override({});
  }
};

int64_t rows_converted() { return detail::cuda::operand_cache_rows_converted(); }

HostMatrix<float> stacked(const HostMatrix<float>& a, const HostMatrix<float>& b) {
  HostMatrix<float> out(a.rows + b.rows, a.cols);
  std::copy(a.data.begin(), a.data.end(), out.data.begin());
  std::copy(b.data.begin(), b.data.end(), out.data.begin() + static_cast<std::ptrdiff_t>(a.data.size()));
  return out;
}

/// Searches `index` and checks the result against the oracle of `held`, the rows the index holds; returns the
/// base rows the search converted into the kept copy.
int64_t search_and_check(const Index& index, const HostMatrix<float>& held, const HostMatrix<float>& queries,
                         const SearchParams& p, Result* out = nullptr) {
  const int64_t before = rows_converted();
  const Result got = index.search(queries.view(), p);
  const int64_t converted = rows_converted() - before;
  CheckOptions exact;
  exact.exact_indices = true;
  exact.tolerance = 0.0;
  EXPECT_EQ("", check_search(got, held.view(), queries.view(), p, exact));
  if (out) *out = got;
  return converted;
}

// The copy is made by the first fused search, read by the next ones, and made again after add (the new rows must
// be found: they equal the queries), after reset + add of as many other rows (a stale copy of the right size
// would return the old rows' neighbours), and when other data need another operand type; base tiles fill it in
// order; with the hook off, nothing is converted into it and the results are the same.
TEST(GpuFused, IndexKeepsItsOperandsUntilTheRowsChange) {
  CacheHookGuard guard;
  constexpr int64_t d = 32, k = 10;
  const int64_t n = sized(20011, 3001);
  const HostMatrix<float> rows = integer_matrix(n, d, 0, 255, 50), queries = integer_matrix(5, d, 0, 255, 51);
  const SearchParams p = fused_params(k, Metric::SquaredL2);
  Index index(d, Metric::SquaredL2, Backend::Cuda);
  index.add(rows.view());
  EXPECT_EQ(search_and_check(index, rows, queries, p), n) << "the first search converts every row once";
  Result cached;
  EXPECT_EQ(search_and_check(index, rows, queries, p, &cached), 0) << "the second reads the kept copy";

  index.add(queries.view());  // rows equal to the queries: at distance 0 from them
  const HostMatrix<float> grown = stacked(rows, queries);
  Result got;
  EXPECT_EQ(search_and_check(index, grown, queries, p, &got), n + queries.rows) << "add drops the copy";
  for (int64_t q = 0; q < queries.rows; ++q) {
    EXPECT_EQ(got.indices[size_t(q * k)], n + q) << "query " << q << " must find its added copy first";
    EXPECT_EQ(got.distances[size_t(q * k)], 0.f) << "query " << q;
  }

  index.reset();
  const HostMatrix<float> other = integer_matrix(n, d, 0, 255, 52);
  index.add(other.view());
  EXPECT_EQ(search_and_check(index, other, queries, p), n) << "reset + add of as many rows drops the copy";
  // Signed queries next to 0..255 rows take f16 operands: another layout, converted again, then back.
  const HostMatrix<float> signed_queries = integer_matrix(3, d, -100, 100, 53);
  EXPECT_EQ(search_and_check(index, other, signed_queries, p), n) << "another operand type";
  EXPECT_EQ(search_and_check(index, other, queries, p), n) << "8-bit operands again";

  // Base tiles (a forced 1024-row tile) fill a new copy in order; the next search reads it whole.
  index.reset();
  index.add(rows.view());
  detail::cuda::set_tile_override({0, 1024});
  EXPECT_EQ(search_and_check(index, rows, queries, p), n) << "filled tile by tile";
  EXPECT_EQ(search_and_check(index, rows, queries, p), 0) << "read tile by tile";
  detail::cuda::set_tile_override({});

  detail::cuda::set_operand_cache_enabled(false);
  EXPECT_EQ(search_and_check(index, rows, queries, p, &got), 0) << "hook off: per-search conversion";
  EXPECT_EQ(got.indices, cached.indices);
  EXPECT_EQ(got.distances, cached.distances);
}

// Large k (filter rounds) over base tiles, whose lists the pipeline merges (the last tile shorter than k: the shared
// lists), and through an Index's kept copy: exact, and one answer whatever the tiles.
TEST(GpuFused, LargeKOverBaseTilesAndAKeptCopy) {
  CacheHookGuard guard;
  constexpr int64_t d = 64, k = 600;
  const int64_t n = sized(30011, 9011);
  const HostMatrix<float> rows = integer_matrix(n, d, 0, 255, 80), queries = integer_matrix(20, d, 0, 255, 81);
  const SearchParams p = fused_params(k, Metric::SquaredL2);
  Index index(d, Metric::SquaredL2, Backend::Cuda);
  index.add(rows.view());
  Result whole, again, tiled;
  search_and_check(index, rows, queries, p, &whole);
  search_and_check(index, rows, queries, p, &again);
  detail::cuda::set_tile_override({0, 5000});
  search_and_check(index, rows, queries, p, &tiled);
  detail::cuda::set_tile_override({});
  EXPECT_EQ(again.indices, whole.indices);
  EXPECT_EQ(tiled.indices, whole.indices);
  EXPECT_EQ(tiled.distances, whole.distances);
}

// No copy where it does not fit half of the search's memory budget, and none for one-shot searches (their base
// lives for one call); both convert per search and stay exact.
TEST(GpuFused, NoKeptOperandsOutsideTheBudgetOrForOneShotSearches) {
  constexpr int64_t d = 64;
  const int64_t n = sized(9000, 2000);
  const HostMatrix<float> rows = integer_matrix(n, d, 0, 255, 60), queries = integer_matrix(3, d, 0, 255, 61);
  SearchParams p = fused_params(20, Metric::InnerProduct);
  p.memory_budget = static_cast<size_t>(n) * d;  // the copy (n x 64 bytes) needs 2x this
  Index index(d, Metric::InnerProduct, Backend::Cuda);
  index.add(rows.view());
  EXPECT_EQ(search_and_check(index, rows, queries, p), 0);
  EXPECT_EQ(search_and_check(index, rows, queries, p), 0);
  p.memory_budget = 0;
  const int64_t before = rows_converted();
  const Result got = search(rows.view(), queries.view(), p);
  EXPECT_EQ(rows_converted() - before, 0) << "a one-shot search keeps no copy";
  CheckOptions exact;
  exact.exact_indices = true;
  exact.tolerance = 0.0;
  EXPECT_EQ("", check_search(got, rows.view(), queries.view(), p, exact));
}

// Auto takes the fused kernel for one query against a resident base of >= 2^17 integer rows once the copy can be
// kept (it converts the rows on the first search only), and the one-shot rules (SGEMM) with the hook off; the
// results are the same and the oracle's, and SearchStats names the pair that ran each time.
TEST(GpuFused, AutoReadsTheKeptOperandsForOneQuery) {
  CacheHookGuard guard;
  constexpr int64_t d = 32;
  const int64_t n = (int64_t(1) << 17) + 77;
  const HostMatrix<float> rows = integer_matrix(n, d, 0, 255, 70), query = integer_matrix(1, d, 0, 255, 71);
  const SearchParams p = params_for(Backend::Cuda, 100, Metric::SquaredL2);
  Index index(d, Metric::SquaredL2, Backend::Cuda);
  index.add(rows.view());
  Result fused, sgemm;
  EXPECT_EQ(search_and_check(index, rows, query, p, &fused), n) << "Auto did not take the fused kernel";
  EXPECT_EQ(search_and_check(index, rows, query, p), 0);
  detail::cuda::set_operand_cache_enabled(false);
  EXPECT_EQ(search_and_check(index, rows, query, p, &sgemm), 0);
  EXPECT_EQ(fused.indices, sgemm.indices);
  EXPECT_EQ(fused.distances, sgemm.distances);
  // SearchStats names what ran: without the copy the one-shot plan (explain_search's), with it the fused kernel,
  // which keeps the top k itself (no selection).
  SearchStats ran;
  SearchParams timed = p;
  timed.stats = &ran;
  index.search(query.view(), timed);
  const SearchPlan one_shot = explain_search(rows.view(), query.view(), p);
  EXPECT_EQ(ran.distance_algorithm, one_shot.distance);
  EXPECT_EQ(ran.select_algorithm, one_shot.select);
  detail::cuda::set_operand_cache_enabled(true);
  index.search(query.view(), timed);
  EXPECT_EQ(ran.distance_algorithm, DistanceAlgorithm::Fused);
  EXPECT_EQ(ran.select_algorithm, SelectAlgorithm::Auto);
}

}  // namespace
}  // namespace gknn::testing
