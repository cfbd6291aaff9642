// select_suite_test.cpp: ONE parameterised suite for gknn::select_k over every selection algorithm of a
// backend, on the rows that break selectors: uniform, ascending, descending (the buffer's worst case),
// all-equal, +-inf and -0.0, integer ties, with labels, k = 1, k = n, k > n, n a multiple of no tile.
// Built twice like the search suite (GKNN_SUITE_BACKEND = Cpu / Cuda). Rows and expectations are built once and
// shared by every algorithm; GKNN_TEST_SANITIZE=1 selects smaller rows (see build_select_cases).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gknn/search.hpp"
#include "testing/oracle.hpp"
#include "testing/parallel.hpp"
#include "testing/sanitize.hpp"
#include "testing/tang.hpp"

namespace gknn::testing {
namespace {

constexpr Backend kBackend = Backend::GKNN_SUITE_BACKEND;

struct RowsCase {
  std::string name;
  int64_t rows, cols;
  std::vector<float> values;
};

RowsCase make_rows(const std::string& kind, int64_t rows, int64_t cols, uint64_t seed) {
  RowsCase c{kind + "_" + std::to_string(rows) + "x" + std::to_string(cols), rows, cols,
             std::vector<float>(static_cast<size_t>(rows * cols))};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_int_distribution<int> small(0, 7);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float& v = c.values[size_t(r * cols + j)];
      if (kind == "uniform") v = u(rng);
      else if (kind == "ascending") v = float(j) + 0.5f * float(r);
      else if (kind == "descending") v = float(cols - j) - 0.25f * float(r);
      else if (kind == "all_equal") v = 3.0f;
      else if (kind == "ties") v = float(small(rng));
      else if (kind == "special") {
        const int s = small(rng);
        v = s == 0 ? INFINITY : s == 1 ? -INFINITY : s == 2 ? -0.0f : s == 3 ? 0.0f : u(rng);
      } else if (kind == "tiny") v = std::ldexp(1.f + float(small(rng)), -120);
      else if (kind == "powers") v = std::ldexp(1.f, small(rng) - 3) * (small(rng) < 3 ? -1.f : 1.f);
    }
  return c;
}

/// The cases with their expected selections (both orders), built once and shared by every combination.
struct PreparedCase {
  RowsCase rows;
  SelectExpectation ascending, descending;
  const SelectExpectation& expected(Order order) const { return order == Order::Ascending ? ascending : descending; }
};

/// Row length of the sanitized run's case for a Tang queue's 1024 bucket (sanitized_skips): k = 513 < n, and filling
/// the queue costs about n k / 2 steps.
constexpr int64_t kTangBigBucketCols = 521;
/// Row length of the sanitized run's case of every kind (sanitized_skips).
constexpr int64_t kTangSanitizedCols = 300;

/// Sanitizer-sized run (testing/sanitize.hpp): every kind keeps 3 rows (a warp with inactive lanes) of 1100
/// columns (k buckets up to 1024 below n, the 2048 bucket at k > n, a partial 32-column tile); the rows longer than
/// 4096 (the k = 2048 and 4096 buckets below n) are kept for the kinds that stress selectors most (uniform,
/// descending: every key a candidate, special: +-inf and -0.0), and every kind has 3 x 300 rows. Which calls run
/// there: sanitized_skips().
std::vector<PreparedCase> build_select_cases() {
  std::vector<RowsCase> c;
  uint64_t seed = 100;
  for (const char* kind : {"uniform", "ascending", "descending", "all_equal", "ties", "special", "tiny", "powers"}) {
    const std::string k = kind;
    const bool long_rows = !sanitize_mode() || k == "uniform" || k == "descending" || k == "special";
    c.push_back(make_rows(kind, sized(7, 3), sized(3001, 1100), seed++));
    // 10007 columns (20011 before): k = 4096 < n, n / 2 and n above the largest small-k bucket (4096); every key
    // of the ascending/descending rows is a candidate, which costs Tang's per-thread queues k steps per key.
    if (long_rows) c.push_back(make_rows(kind, sized(3, 2), sized(10007, 5003), seed++));
    else ++seed;
  }
  c.push_back(make_rows("uniform", 129, 257, seed++));
  c.push_back(make_rows("uniform", 2, 1, seed++));
  c.push_back(make_rows("uniform", 1, 100003, seed++));  // a single long row (single-query path)
  // Sanitized: the row where a Tang queue meets its 1024 bucket (k = 513 just below n), and the rows of every kind
  // short enough for a Tang queue under the sanitizer (see sanitized_skips).
  if (sanitize_mode()) {
    c.push_back(make_rows("uniform", 3, kTangBigBucketCols, seed++));
    for (const char* kind : {"uniform", "ascending", "descending", "all_equal", "ties", "special", "tiny", "powers"})
      c.push_back(make_rows(kind, 3, kTangSanitizedCols, seed++));
  }
  std::vector<PreparedCase> out;
  for (RowsCase& rc : c) {
    const FloatView view{rc.values.data(), rc.rows, rc.cols, 0};
    SelectExpectation asc = expected_select(view, nullptr, Order::Ascending);
    SelectExpectation desc = expected_select(view, nullptr, Order::Descending);
    out.push_back({std::move(rc), std::move(asc), std::move(desc)});
  }
  return out;
}

const std::vector<PreparedCase>& select_cases() {
  static const std::vector<PreparedCase> cases = build_select_cases();
  return cases;
}

struct SelectCombo {
  SelectAlgorithm algorithm;
  int64_t max_k;
  TangOptions tang;
};

std::vector<SelectCombo> select_combos() {
  std::vector<SelectCombo> out;
  for (const SelectCapability& s : select_algorithms(kBackend))
    for (const TangOptions& t : tang_variants(s.algorithm)) out.push_back({s.algorithm, s.max_k, t});
  return out;
}

/// k values worth checking for a row length: 1, a few bucket edges, n-1, n, n+5 (padding).
std::vector<int64_t> k_values(int64_t n, int64_t max_k) {
  std::vector<int64_t> ks;
  for (int64_t k : {int64_t(1), int64_t(2), int64_t(7), int64_t(32), int64_t(33), int64_t(100), int64_t(128),
                    int64_t(129), int64_t(513), int64_t(1024), int64_t(2048), int64_t(4096), n / 10, n / 2, n - 1, n,
                    n + 5})
    if (k >= 1 && std::min(k, n) <= max_k) ks.push_back(k);
  return ks;
}

bool one_thread_per_row(SelectAlgorithm a) { return a == SelectAlgorithm::Insertion || is_tang(a); }

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

/// Sanitizer-sized run (GKNN_TEST_SANITIZE=1): compute-sanitizer slows a selection call 10-1000 times, and the
/// whole grid of the normal run took 180-300+ s per selector under each tool (2026-11-24, H100; the run of every
/// GPU test has to fit 8 minutes). There every selector keeps, ascending unless said:
///   - the sweep row, uniform 3 x 1100: every k of k_values (the buckets up to 1024 below n, 2048 at k > n), and
///     k = 1, 129, n descending (descending selects the negated keys: one more kernel, then the same ones);
///   - the long uniform rows, 2 x 5003: the 2048 and 4096 buckets and k = n;
///   - every kind on 3 x 300 rows (ties, +-inf and -0.0, all equal, ...): k = 1, 32, 33, 129, n - 1, n, n + 5, and
///     descending too for the tied and special rows;
///   - the shapes: 129 x 257 (rows across warps; k = 1, 33, n), 2 x 1, the single long row 1 x 100003 (k = 33 and
///     its 2048 bucket: the costliest keys under racecheck), 3 x 521 at k = 513 (a Tang queue's 1024 bucket);
///   - with labels (`labelled`, 5 x 530 rows), every k; a Tang queue one k per bucket (1, 33, 129, 513: its labelled
///     calls reached 100+ s under memcheck in one combination, 2026-11-25).
/// The other kinds' 1100- and 5003-column rows are the normal run's. Selectors with one thread per row (Garcia's
/// insertion sort, Tang's queues: O(cols k) steps a thread, about 50 us each under memcheck) skip calls of more than
/// 300 x 305 steps, but for a Tang queue's 1024 bucket (k = 513 on the 521 row and with labels). A Tang queue also
/// skips descending calls (its kernels are the ascending ones) and k = n + 5 (it runs k = n, then pads on the host),
/// and selects n - 1 and n on the uniform and tied rows only; its buckets above 256 (k > 129) with every flag off
/// and every flag on only (its 8 flag combinations took 20-26 s each under memcheck, mostly at k = 513, 2026-11-25).
bool sanitized_skips(const SelectCombo& c, const RowsCase& rc, Order order, int64_t k, bool labelled) {
  if (!sanitize_mode()) return false;
  const int64_t n = rc.cols, kk = std::min(k, n);
  const bool tang = is_tang(c.algorithm);
  const bool tang_big_bucket = tang && k == 513 && (labelled || n == kTangBigBucketCols);
  if (one_thread_per_row(c.algorithm) && n * kk > kTangSanitizedCols * (kTangSanitizedCols + 5) && !tang_big_bucket &&
      k != 1)
    return true;
  // Garcia's insertion sort has no k buckets (k is a loop bound): up to k = 129 (its calls took memcheck and
  // initcheck 50-58 s, 2026-11-25).
  if (c.algorithm == SelectAlgorithm::Insertion && kk > 129) return true;
  // k > n selects min(k, n) on the device and pads (search.cpp: select_into): on the 2 x 1 rows every k is the
  // k = 1 selection, so they keep k = 1, 2 (k > n: padding) and 4096 (padding past the largest bucket); on the sweep
  // row 2048 and 4096 are n + 5's selection with more padding (2026-11-27: 22 of a combination's calls).
  if (rc.rows * n == 2 && !(k == 1 || k == 2 || k == 4096)) return true;
  if (n == 1100 && k > n && k != n + 5) return true;
  if (tang) {
    if (order == Order::Descending || k == n + 5) return true;
    if (kk > 129 && !tang_corner(c.tang)) return true;
    if (labelled) return !(k == 1 || k == 33 || k == 129 || k == 513);  // one k per bucket: 32, 64, 256, 1024
    if (kk > 512) return !tang_big_bucket;
    // Sanitized further (2026-11-27): a queue's 32 bucket at k = 1 and its edge 32 (not 2 and 7: the same kernel and
    // queue length); on the 300-key kinds the buckets at 1, 33 and 129, the edge 32 and k = n on the uniform and tied
    // rows (n - 1 runs n's kernel, 512 bucket).
    // The 256 bucket (k = 129: about n k / 2 steps a thread) on the kinds that fill a queue differently: random
    // (uniform), every key a candidate (descending) and ties; the others meet each queue at k = 1 and 33.
    if (k == 2 || k == 7 || k == n - 1) return true;
    if (n == kTangSanitizedCols && k == 32) return !(starts_with(rc.name, "uniform") || starts_with(rc.name, "ties"));
    if (n == kTangSanitizedCols && k == 129)
      return !(starts_with(rc.name, "uniform") || starts_with(rc.name, "descending") || starts_with(rc.name, "ties"));
    if (k == n) return !(starts_with(rc.name, "uniform") || starts_with(rc.name, "ties"));
  }
  // With labels (their own kernels): each bucket its edge or a k inside it, k = n and k > n (2026-11-27: every k of
  // k_values, 17 calls a combination).
  if (labelled) return !(k == 1 || k == 32 || k == 33 || k == 128 || k == 129 || k == n / 2 || k == 513 || k == n ||
                         k == n + 5);
  const bool asc = order == Order::Ascending;
  // racecheck: the sweep row at one k per bucket kernel and the edges (bits_global, partial_bitonic and bits took
  // racecheck 83, 64 and 30 s in this test, 2026-11-25).
  if (n == 1100 && racecheck_mode() && (k == 2 || k == 7 || k == 33 || k == 129 || k == n / 10 || k == n - 1))
    return true;
  // The sweep row: each bucket at its edge and the next one's first k (2026-11-27: not 2, 7, 100, n/10, n/2, which
  // run the kernels of 32, 128 and 1024 again).
  if (n == 1100 && (k == 2 || k == 7 || k == 100 || k == n / 10 || k == n / 2)) return true;
  if (n == 1100) return !starts_with(rc.name, "uniform") || !(asc || k == 1 || k == 129 || k == n);
  if (n == 5003) return !starts_with(rc.name, "uniform") || !asc || !(k == 2048 || k == 4096 || k == n);
  if (n == kTangSanitizedCols) {
    // racecheck (testing/sanitize.hpp): the kinds at k = 1, 33 and n (bits_global, partial_bitonic and bits took
    // racecheck 101, 71 and 41 s here, 2026-11-25; the sweep row keeps every bucket).
    if (racecheck_mode() && !(k == 1 || k == 33 || k == n)) return true;
    // Every kind at k = 1, 33, 129, n and n + 5 (32 is the sweep row's edge, n - 1 runs n's 512 bucket), descending
    // at 1, 33 and n on the tied and special rows (2026-11-27: 70 calls a combination before).
    const bool both_orders = starts_with(rc.name, "ties") || starts_with(rc.name, "special");
    if (!asc) return !both_orders || !(k == 1 || k == 33 || k == n);
    return !(k == 1 || k == 33 || k == 129 || k == n || k == n + 5);
  }
  if (n == 257) return !asc || !(k == 1 || k == 33 || k == n);
  if (n == 100003) return !asc || !(k == 33 || k == 2048);
  if (n == kTangBigBucketCols) return !asc || k != 513;
  return !asc && rc.rows * n > 2;  // 2 x 1: every k, both orders
}

/// Normal run: a selector with one thread per row (Garcia's insertion sort, Tang's queues; both serve k <= 1024)
/// spends O(cols k) steps in each thread, so the 10007-column rows, which reach no bucket the 3001-column rows do not
/// reach for k <= 1024, were 80% of its time (the Tang parts took 146-198 s of the GPU suite, 2026-11-25, H100). On
/// them it keeps the kinds where every key is a candidate (uniform, descending), ascending only: descending selects
/// the negated keys with the same kernels, and the other kinds' values (ties, +-inf, -0.0, ...) meet it on the
/// 3001-column rows.
bool long_row_skips(const SelectCombo& c, const RowsCase& rc, Order order) {
  if (sanitize_mode() || !one_thread_per_row(c.algorithm) || rc.cols != 10007) return false;
  return order == Order::Descending || !(starts_with(rc.name, "uniform") || starts_with(rc.name, "descending"));
}

/// With GKNN_TEST_CALL_TIMES=1, calls slower than a second are printed (to size the sanitized run's cases).
void report_slow_call(const std::string& where, std::chrono::steady_clock::time_point start) {
  static const bool on = std::getenv("GKNN_TEST_CALL_TIMES") != nullptr;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (on && s > 1.0) std::fprintf(stderr, "slow call: %s %.1f s\n", where.c_str(), s);
}

class SelectSuite : public ::testing::TestWithParam<SelectCombo> {};

/// Host threads issuing the selections of one combination. On the GPU, select_k leases a pipeline (streams, buffers)
/// per call, so calls from several threads run side by side on the device: Tang's queues keep one thread per row
/// busy for up to k steps per key and left the device idle one call after the other (the four insertion queues
/// took 164 s of make test, 2026-11-24). On the CPU, select_k is parallel itself. Under compute-sanitizer, one:
/// the tool serialises the kernels anyway, and launches from 8 threads made racecheck report "failure to track a
/// kernel launch" and initcheck uninitialized reads in the Tang hierarchy build that one thread does not show
/// (2026-11-24, bench/results/sanitize_2026-11-24_h100.md); GKNN_TEST_CALL_THREADS=N sets the count to look again.
int call_threads() {
  const char* forced = std::getenv("GKNN_TEST_CALL_THREADS");
  if (forced != nullptr && std::atoi(forced) > 0) return std::atoi(forced);
  return kBackend == Backend::Cuda && !sanitize_mode() ? 8 : 1;
}

TEST_P(SelectSuite, MatchesSortedOrder) {
  const SelectCombo& c = GetParam();
  SelectParams params;
  params.backend = kBackend;
  params.algorithm = c.algorithm;
  params.options.tang = c.tang;
  struct Call {
    const PreparedCase* pc;
    Order order;
    int64_t k;
  };
  std::vector<Call> calls;
  for (const PreparedCase& pc : select_cases())
    for (Order order : {Order::Ascending, Order::Descending})
      for (int64_t k : k_values(pc.rows.cols, c.max_k)) {
        if (!sanitized_skips(c, pc.rows, order, k, /*labelled=*/false) && !long_row_skips(c, pc.rows, order))
          calls.push_back({&pc, order, k});
      }
  const std::string failure = first_failure(static_cast<int64_t>(calls.size()), [&](int64_t i) -> std::string {
    const Call& call = calls[size_t(i)];
    const RowsCase& rc = call.pc->rows;
    const FloatView view{rc.values.data(), rc.rows, rc.cols, 0};
    const std::string where =
        rc.name + " k=" + std::to_string(call.k) + (call.order == Order::Ascending ? " asc: " : " desc: ");
    try {
      const auto start = std::chrono::steady_clock::now();
      const Result got = select_k(view, nullptr, call.k, call.order, params);
      report_slow_call(where, start);
      const std::string m = check_select(got, call.pc->expected(call.order), call.k);
      return m.empty() ? m : where + m;
    } catch (const std::exception& e) {
      return where + "threw " + e.what();
    }
  }, call_threads());
  EXPECT_EQ("", failure);
}

TEST_P(SelectSuite, UsesLabelsForOutputAndTies) {
  const SelectCombo& c = GetParam();
  SelectParams params;
  params.backend = kBackend;
  params.algorithm = c.algorithm;
  params.options.tang = c.tang;
  RowsCase rc = make_rows("ties", 5, sized(1500, 530), 7);  // sanitized: k = 513 < n (a Tang queue's 1024 bucket)
  std::vector<int64_t> labels(rc.values.size());
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int64_t(1000000 - 3 * i);  // reversed: ties flip order
  const FloatView view{rc.values.data(), rc.rows, rc.cols, 0};
  const SelectExpectation expected = expected_select(view, labels.data(), Order::Ascending);
  for (int64_t k : k_values(rc.cols, c.max_k)) {
    if (sanitized_skips(c, rc, Order::Ascending, k, /*labelled=*/true)) continue;  // labelled: their own kernels
    SCOPED_TRACE("k=" + std::to_string(k));
    Result got;
    ASSERT_NO_THROW(got = select_k(view, labels.data(), k, Order::Ascending, params));
    ASSERT_EQ("", check_select(got, expected, k));
  }
}

INSTANTIATE_TEST_SUITE_P(GKNN_SUITE_BACKEND, SelectSuite, ::testing::ValuesIn(select_combos()),
                         [](const ::testing::TestParamInfo<SelectCombo>& info) {
                           std::string s = select_name(info.param.algorithm, info.param.tang);
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace gknn::testing
