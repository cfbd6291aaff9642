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

/// Row length of the sanitized run's case for a Tang queue's 1024 bucket (tang_skips): k = 513 < n, and filling
/// the queue costs about n k / 2 steps.
constexpr int64_t kTangBigBucketCols = 521;
/// Longest rows a Tang queue selects from in the sanitized run, but for the 1024 bucket's (tang_skips).
constexpr int64_t kTangSanitizedCols = 300;

/// Sanitizer-sized run (testing/sanitize.hpp): every kind keeps 3 rows (a warp with inactive lanes) of 1100
/// columns (k buckets up to 1024 below n, the 2048 bucket at k > n, a partial 32-column tile); the rows longer than
/// 4096 (the k = 2048 and 4096 buckets below n) are kept for the kinds that stress selectors most (uniform,
/// descending: every key a candidate, special: +-inf and -0.0). See also tang_skips().
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
  // short enough for a Tang queue under the sanitizer (see tang_skips).
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
  for (const SelectCapability& s : select_algorithms(kBackend)) {
    const bool tang = s.algorithm == SelectAlgorithm::InsertionQueue || s.algorithm == SelectAlgorithm::HeapQueue ||
                      s.algorithm == SelectAlgorithm::MergeQueue;
    for (int bits = 0; bits < (tang ? 8 : 1); ++bits) {
      TangOptions t;
      t.aligned = bits & 1;
      t.buffered = bits & 2;
      t.hierarchical = bits & 4;
      out.push_back({s.algorithm, s.max_k, t});
    }
  }
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

bool is_tang(SelectAlgorithm a) {
  return a == SelectAlgorithm::InsertionQueue || a == SelectAlgorithm::HeapQueue || a == SelectAlgorithm::MergeQueue;
}

/// Sanitizer-sized run: a Tang queue is one thread per row doing up to k steps per key, which compute-sanitizer
/// slows to about 50 us a step under memcheck (2026-11-24, H100: one combination took 40-150 s on rows of 1100,
/// the plain insertion queue over 300 s, and the run of every test did not fit 8 minutes). There a Tang queue
/// keeps the rows of at most kTangSanitizedCols columns (every kind has a 3 x 300 case in that run: partial
/// 32-column tiles, 4 levels of hierarchy at k = 1) and the 1024 bucket's row; ascending order only (descending
/// selects the negated keys with the same kernels, which the other selectors' descending calls cover); one k per
/// queue bucket and the bucket edges: 1, 32, 33, 129, k = n - 1 and n on the uniform and tied rows (k > n runs
/// k = n, then pads on the host), and the 1024 bucket (k = 513) only where `big_bucket_here` says so: on the
/// uniform row of kTangBigBucketCols, and on the labelled rows.
bool tang_skips(const SelectCombo& c, const RowsCase& rc, Order order, int64_t k, bool big_bucket_here) {
  if (!sanitize_mode() || !is_tang(c.algorithm)) return false;
  const int64_t cols = rc.cols;
  if (order == Order::Descending) return true;
  if (std::min(k, cols) > 512) return !(k == 513 && big_bucket_here);
  if (cols > kTangSanitizedCols && !big_bucket_here) return true;
  const bool edge_rows = rc.name.rfind("uniform", 0) == 0 || rc.name.rfind("ties", 0) == 0;
  if (k == cols - 1 || k == cols) return !edge_rows;
  return k != 1 && k != 32 && k != 33 && k != 129;
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
        // The 1024 bucket of a Tang queue under the sanitizer: uniform keys, ascending, n just above k.
        const bool big = pc.rows.cols == kTangBigBucketCols;
        if (!tang_skips(c, pc.rows, order, k, big)) calls.push_back({&pc, order, k});
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
    if (tang_skips(c, rc, Order::Ascending, k, /*big_bucket_here=*/true)) continue;  // labelled entries: their own kernels
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
