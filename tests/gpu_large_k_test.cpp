// gpu_large_k_test.cpp: sample select and radix select (large k) called through the selection table, on
// long and skewed rows, both variants (single- and two-stage), sorted and unsorted output (compared as sets),
// one block per row (>= 128 rows) and cooperating blocks (few long rows, one row of 2^22), with and without the
// sampled bracket (and with a bracket forced to miss), user labels with ties, row strides. The expectation is the exact total order (ascending key, ties by smaller label,
// -0.0 == +0.0): selection copies values, so results must match exactly.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/order.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/hooks.hpp"
#include "cuda/select/large_k/tuning.hpp"
#include "cuda/select/select.cuh"
#include "testing/parallel.hpp"
#include "testing/sanitize.hpp"

namespace gknn::testing {
namespace {

using detail::cuda::DeviceBuffer;

/// Rows of keys (row stride `stride` >= cols) with optional user labels (same stride).
struct Rows {
  std::string name;
  int64_t rows = 0, cols = 0, stride = 0;
  std::vector<float> keys;
  std::vector<int64_t> labels;  ///< empty: label = label_offset + column
  int64_t label_offset = 0;
};

/// Kinds: uniform, tiny (all keys ~2^-120: equal leading digits), many_equal (4 values), all_equal, powers
/// (+-2^e), negatives (negated similarities in [-1, 0]), special (+-inf, -0.0, +0.0, a few values).
Rows make_rows(const std::string& kind, int64_t rows, int64_t cols, uint64_t seed, int64_t pad = 0) {
  Rows r{kind + "_" + std::to_string(rows) + "x" + std::to_string(cols), rows, cols, cols + pad, {}, {}, 0};
  r.keys.assign(static_cast<size_t>(rows * r.stride), NAN);  // the padding must never be read
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 7);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float& v = r.keys[static_cast<size_t>(i * r.stride + j)];
      if (kind == "uniform") v = u(rng);
      else if (kind == "tiny") v = std::ldexp(1.f + u(rng), -120);
      else if (kind == "many_equal") v = float(small(rng) / 2);
      else if (kind == "all_equal") v = 0.25f;
      else if (kind == "powers") v = std::ldexp(1.f, small(rng) * 3 - 10) * (small(rng) < 3 ? -1.f : 1.f);
      else if (kind == "negatives") v = -u(rng);
      else if (kind == "special") {
        const int s = small(rng);
        v = s == 0 ? INFINITY : s == 1 ? -INFINITY : s == 2 ? -0.0f : s == 3 ? 0.0f : float(s);
      } else ADD_FAILURE() << "unknown kind " << kind;
    }
  return r;
}

/// Scrambled labels with repeats avoided, negative ones included: ties must follow them, not the columns.
void add_user_labels(Rows& r, uint64_t seed) {
  r.labels.assign(r.keys.size(), 0);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < r.rows; ++i) {
    std::vector<int64_t> perm(static_cast<size_t>(r.cols));
    for (int64_t j = 0; j < r.cols; ++j) perm[size_t(j)] = 7 * j - 3 * r.cols;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::copy(perm.begin(), perm.end(), r.labels.begin() + i * r.stride);
  }
}

struct Entry {
  float key;
  int64_t label;
};
bool before(const Entry& a, const Entry& b) { return detail::ranks_before(a.key, a.label, b.key, b.label); }

/// Input copied to the device once per data set.
struct DeviceRows {
  DeviceBuffer<float> keys;
  DeviceBuffer<int64_t> labels;
  explicit DeviceRows(const Rows& r) : keys(r.keys.size()) {
    GKNN_CUDA_TRY(cudaMemcpy(keys.data(), r.keys.data(), keys.bytes(), cudaMemcpyHostToDevice));
    if (!r.labels.empty()) {
      labels.resize(r.labels.size());
      GKNN_CUDA_TRY(cudaMemcpy(labels.data(), r.labels.data(), labels.bytes(), cudaMemcpyHostToDevice));
    }
    // A pageable cudaMemcpy may return before its DMA lands; the selections run on non-blocking streams, which do
    // not wait for the legacy stream.
    GKNN_CUDA_TRY(cudaDeviceSynchronize());
  }
};

struct Variant {
  SelectAlgorithm algorithm;
  bool two_stage;
  bool bracket;
};

std::string variant_name(const Variant& v) {
  return to_string(v.algorithm) + (v.two_stage ? "_two_stage" : "_single_stage") + (v.bracket ? "_bracket" : "");
}
void PrintTo(const Variant& v, std::ostream* os) { *os << variant_name(v); }

/// A data set with its expectation and its device copy, built once and shared by the 8 variants (the host
/// sort of the expectation and the upload cost more than the selections themselves).
struct Prepared {
  Rows rows;
  std::vector<std::vector<Entry>> expected;  ///< every row sorted in the total order (the expected output is a prefix)
  std::vector<int32_t> rank;                 ///< rows x cols: rank[i * cols + code(label)] = the entry's rank in row i
  DeviceRows dev;

  explicit Prepared(Rows r) : rows(std::move(r)), expected(static_cast<size_t>(rows.rows)),
                              rank(static_cast<size_t>(rows.rows * rows.cols), -1), dev(rows) {
    const std::string failure = first_failure(rows.rows, [&](int64_t i) -> std::string {
      auto& row = expected[size_t(i)];
      row.reserve(size_t(rows.cols));
      for (int64_t j = 0; j < rows.cols; ++j) {
        const size_t at = static_cast<size_t>(i * rows.stride + j);
        row.push_back({rows.keys[at], rows.labels.empty() ? rows.label_offset + j : rows.labels[at]});
      }
      std::sort(row.begin(), row.end(), before);
      for (int64_t j = 0; j < rows.cols; ++j) {
        const int64_t c = code(row[size_t(j)].label);
        if (c < 0 || rank[size_t(i * rows.cols + c)] != -1) return "labels of row " + std::to_string(i) + " not unique";
        rank[size_t(i * rows.cols + c)] = static_cast<int32_t>(j);
      }
      return "";
    });
    if (!failure.empty()) ADD_FAILURE() << rows.name << ": " << failure;
  }

  /// A label's index in [0, cols) (unique within a row), -1 for a label the row cannot hold: column labels are
  /// label_offset + column, user labels 7 p - 3 cols for a permutation p of the columns (add_user_labels).
  int64_t code(int64_t label) const {
    int64_t c = label - rows.label_offset;
    if (!rows.labels.empty()) {
      c = label + 3 * rows.cols;
      if (c < 0 || c % 7 != 0) return -1;
      c /= 7;
    }
    return c >= 0 && c < rows.cols ? c : -1;
  }
};

std::string show(const Entry& e) { return "(" + std::to_string(e.key) + ", " + std::to_string(e.label) + ")"; }

/// Row i of an output against the expectation. Sorted output: entry j is the j-th of the total order. Unsorted
/// output: the same set in any order -- every entry is one of the row's (key, label) pairs, of rank < k, and no
/// rank twice (so the k entries are exactly ranks 0..k-1), checked in O(k) through the rank table.
std::string check_row(const Prepared& p, int64_t i, const float* keys, const int64_t* labels, int64_t k, bool sorted) {
  const auto& want = p.expected[size_t(i)];
  const std::string where = "row " + std::to_string(i) + " rank ";
  if (sorted) {
    for (int64_t j = 0; j < k; ++j)
      if (!(keys[j] == want[size_t(j)].key) || labels[j] != want[size_t(j)].label)
        return where + std::to_string(j) + ": got " + show({keys[j], labels[j]}) + ", expected " +
               show(want[size_t(j)]);
    return "";
  }
  std::vector<char> seen(static_cast<size_t>(k), 0);
  for (int64_t j = 0; j < k; ++j) {
    const Entry got{keys[j], labels[j]};
    const int64_t c = p.code(got.label);
    const int64_t r = c < 0 ? -1 : p.rank[size_t(i * p.rows.cols + c)];
    auto at = [&] { return where + std::to_string(j) + ": got " + show(got); };  // built on failure only
    if (r < 0) return at() + ", a label the row does not hold";
    if (r >= k) return at() + " of rank " + std::to_string(r) + ", outside the first k";
    if (seen[size_t(r)]) return at() + " twice";
    if (!(got.key == want[size_t(r)].key)) return at() + ", expected " + show(want[size_t(r)]);
    seen[size_t(r)] = 1;
  }
  return "";
}

/// Runs the variant on the device and compares with the expectation; "" when equal.
std::string run_and_check(const Variant& v, const Prepared& p, int64_t k, bool sorted, int bracket_shift) {
  const Rows& r = p.rows;
  const detail::cuda::SelectEntry* entry = detail::cuda::find_select(v.algorithm);
  if (!entry) return "algorithm not registered";
  if (entry->max_k < k) return "max_k below k";
  const int64_t out_stride = k + 3;  // the output stride differs from k
  DeviceBuffer<float> out_keys(static_cast<size_t>(r.rows * out_stride));
  DeviceBuffer<int64_t> out_labels(static_cast<size_t>(r.rows * out_stride));
  SelectOptions options;
  options.sorted = sorted;
  options.two_stage = v.two_stage;
  options.sampled_bracket = v.bracket;
  options.overrides.bracket_rank_shift = bracket_shift;
  detail::cuda::Workspace workspace;
  detail::cuda::Stream stream;
  const detail::cuda::SelectContext ctx{options, workspace, stream.get(), 0};
  detail::cuda::SelectInput in;
  in.keys = p.dev.keys.data();
  in.labels = r.labels.empty() ? nullptr : p.dev.labels.data();
  in.stride = r.stride;
  in.rows = r.rows;
  in.cols = r.cols;
  in.label_offset = r.label_offset;
  const detail::cuda::SelectOutput out{out_keys.data(), out_labels.data(), out_stride};
  entry->run(in, k, out, ctx);
  stream.sync();
  // Host copies kept across calls: their pages are touched once per run of the binary, not per call (up to
  // 180 MB per call in ManyRows).
  static std::vector<float> keys;
  static std::vector<int64_t> labels;
  keys.resize(std::max(keys.size(), out_keys.size()));
  labels.resize(std::max(labels.size(), out_labels.size()));
  // The k columns of each row only: the stride's padding is never written (initcheck reports a copy of it).
  GKNN_CUDA_TRY(cudaMemcpy2D(keys.data(), out_stride * sizeof(float), out_keys.data(), out_stride * sizeof(float),
                             k * sizeof(float), r.rows, cudaMemcpyDeviceToHost));
  GKNN_CUDA_TRY(cudaMemcpy2D(labels.data(), out_stride * sizeof(int64_t), out_labels.data(),
                             out_stride * sizeof(int64_t), k * sizeof(int64_t), r.rows, cudaMemcpyDeviceToHost));
  return first_failure(r.rows, [&](int64_t i) {
    return check_row(p, i, keys.data() + i * out_stride, labels.data() + i * out_stride, k, sorted);
  });
}

/// k = 1, 2048, 4096, n/10, n/2, n-1, n (those within [1, n]); sanitizer-sized: 1, 2048 (the sort cap), n/2 (the
/// passes, a sort above the cap) and n (every key), which the sanitized run of 2026-11-25 needed to finish in time.
/// Under racecheck (testing/sanitize.hpp) 2048 and n/2: the shared histograms' protocol is the same at every k, and
/// racecheck took 100-214 s per variant on the skewed rows (2026-11-25).
std::vector<int64_t> k_values(int64_t n) {
  std::vector<int64_t> ks;
  const std::vector<int64_t> wanted =
      racecheck_mode() ? std::vector<int64_t>{2048, n / 2}
                       : sized(std::vector<int64_t>{1, 2048, 4096, n / 10, n / 2, n - 1, n},
                               std::vector<int64_t>{1, 2048, n / 2, n});
  for (int64_t k : wanted)
    if (k >= 1 && k <= n && std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  return ks;
}

/// Emptied after the suite (LargeK::TearDownTestSuite) so that the device memory is freed while CUDA is up
/// (compute-sanitizer's leak check counts memory still allocated at exit).
std::map<std::string, std::unique_ptr<Prepared>>& prepared_cache() {
  static std::map<std::string, std::unique_ptr<Prepared>> cache;
  return cache;
}

/// make_rows (plus user labels when label_seed != 0, a label offset) through a cache keyed by all arguments.
const Prepared& prepared(const std::string& kind, int64_t rows, int64_t cols, uint64_t seed, int64_t pad = 0,
                         uint64_t label_seed = 0, int64_t label_offset = 0) {
  auto& cache = prepared_cache();
  const std::string key = kind + "/" + std::to_string(rows) + "/" + std::to_string(cols) + "/" + std::to_string(seed) +
                          "/" + std::to_string(pad) + "/" + std::to_string(label_seed) + "/" +
                          std::to_string(label_offset);
  std::unique_ptr<Prepared>& slot = cache[key];
  if (!slot) {
    Rows r = make_rows(kind, rows, cols, seed, pad);
    if (label_seed != 0) add_user_labels(r, label_seed);
    r.label_offset = label_offset;
    slot = std::make_unique<Prepared>(std::move(r));
  }
  return *slot;
}

/// Whether blocks cooperate on the rows (large_k/plan.cu: uses_multi_block), a path that never takes the sampled
/// bracket (large_k/run.cuh: pb.bracket = sampled_bracket && !plan.multi_block): there a bracket variant runs the very
/// kernels and passes of the same variant without it.
bool cooperating_blocks(const Prepared& p) {
  const auto& policy = detail::cuda::large_k::kPolicy;
  return p.rows.rows < policy.multi_block_max_rows &&
         p.rows.cols >= policy.multi_block_min_tiles * int64_t{policy.threads} * policy.items;
}

/// Sanitizer-sized run: the bracket variants skip the rows where blocks cooperate (cooperating_blocks: the same
/// selections as the variant without the bracket, which the sanitized run keeps).
bool bracket_ignored(const Variant& v, const Prepared& p) {
  return sanitize_mode() && v.bracket && cooperating_blocks(p);
}

/// Under racecheck, sorted output only (the unsorted output skips a sort, not a shared-memory step of the passes).
/// Sanitizer-sized, the unsorted output at `unsorted_ks` only (empty: every k of `ks`): an unsorted selection runs
/// the sorted one's search and leaves out the row sort (large_k/run.cuh), so one or two k per path keep its smaller
/// workspace (no sort room) under memcheck; each selection costs a tool 0.4-2 s whatever its size.
void check_all_k(const Variant& v, const Prepared& p, const std::vector<int64_t>& ks, bool both_orders = true,
                 int bracket_shift = 0, const std::vector<int64_t>& unsorted_ks = {}) {
  for (int64_t k : ks)
    for (bool sorted : {true, false}) {
      if (!sorted && (!both_orders || racecheck_mode())) continue;
      if (!sorted && sanitize_mode() && !unsorted_ks.empty() &&
          std::find(unsorted_ks.begin(), unsorted_ks.end(), k) == unsorted_ks.end())
        continue;
      SCOPED_TRACE(p.rows.name + " k=" + std::to_string(k) + (sorted ? " sorted" : " unsorted"));
      std::string failure;
      ASSERT_NO_THROW(failure = run_and_check(v, p, k, sorted, bracket_shift));
      ASSERT_EQ("", failure);
    }
}

class LargeK : public ::testing::TestWithParam<Variant> {
 public:
  static void TearDownTestSuite() { prepared_cache().clear(); }
};

// Sizes: the normal run's, and the sanitizer-sized run's (testing/sanitize.hpp), which keep every path: at most
// 128 rows of >= 16384 columns (large_k/plan.cuh: cooperating blocks), more than 128 rows (one block per row),
// rows of >= 32768 columns (large_k/bracket.cuh: the sampled bracket), short rows around the 2048-key sort cap.

// Few long rows: cooperating blocks.
TEST_P(LargeK, LongRowsAllK) {
  const Prepared& p = prepared("uniform", sized(4, 2), sized(300000, 40000), 11);
  // Sanitized: the variants without the bracket (bracket_ignored), the unsorted output at n/2 and n.
  if (bracket_ignored(GetParam(), p)) GTEST_SKIP() << "cooperating blocks take no bracket (sanitizer-sized run)";
  const int64_t n = p.rows.cols;
  check_all_k(GetParam(), p, k_values(n), true, 0, {n / 2, n});
}

// Skewed rows on both paths: few rows (cooperating blocks) and many rows (one block per row, long enough for the
// sampled bracket). Sanitizer-sized (a selection costs a tool 0.4-2 s whatever its size, 2026-11-25), the edge kinds
// (all_equal: every key of a row in one bucket; special: the NaN/inf order) keep both paths, the many-row one at
// k = 2048 and n/2, sorted; the other kinds the few-row path at n/2, sorted. Under racecheck the edge kinds on few
// rows only (the many-row path is ManyRows').
TEST_P(LargeK, SkewedRows) {
  uint64_t seed = 20;
  const int64_t few = sized(4, 2), many = sized(160, 129);
  for (const std::string kind : {"tiny", "many_equal", "all_equal", "powers", "negatives", "special"}) {
    const bool edge_kind = kind == "all_equal" || kind == "special";
    for (int64_t rows : {few, many}) {
      const uint64_t row_seed = seed++;
      if (sanitize_mode() && (racecheck_mode() ? rows == many || !edge_kind : rows == many && !edge_kind)) continue;
      const Prepared& p = prepared(kind, rows, rows == few ? sized(100000, 40000) : sized(40000, 33000), row_seed);
      const int64_t n = p.rows.cols;
      // Sanitized: the few rows (cooperating blocks) without the bracket only (bracket_ignored); `special` unsorted
      // at n/2 only.
      if (bracket_ignored(GetParam(), p)) continue;
      if (!sanitize_mode()) check_all_k(GetParam(), p, k_values(n), rows == few);
      else if (!edge_kind) check_all_k(GetParam(), p, {n / 2}, false);
      else if (rows == many) check_all_k(GetParam(), p, {2048, n / 2}, false);
      else check_all_k(GetParam(), p, k_values(n), kind == "special", 0, {n / 2});
    }
  }
}

// Many uniform rows: one block per row, several passes, unsorted output too.
TEST_P(LargeK, ManyRows) {
  const Prepared& p = prepared("uniform", sized(300, 129), sized(50000, 33000), 31, /*pad=*/5);
  // racecheck: k = n/2 (each selection of 129 x 33000 keys took racecheck 6-8 s, 2026-11-25). Sanitized: unsorted at
  // n/2 and n (the one-block-per-row path's unsorted output; LongRowsAllK has the cooperating one's).
  const int64_t n = p.rows.cols;
  check_all_k(GetParam(), p, racecheck_mode() ? std::vector<int64_t>{n / 2} : k_values(n), true, 0, {n / 2, n});
}

// A bracket that misses (moved far above or below the k-th key by SelectOverrides::bracket_rank_shift) must fall
// back to the passes from the input and still give the exact result (single-stage has already written outputs).
TEST_P(LargeK, MissedBracketFallsBack) {
  // Sanitized: the bracket variants only. Without the bracket there is none to miss: the shift is never read and the
  // selections are ManyRows' (the same 129 x 33000 uniform rows, one block per row).
  if (sanitize_mode() && !GetParam().bracket) GTEST_SKIP() << "no bracket to miss (sanitizer-sized run)";
  // racecheck: 33000 keys a row as the other tools (it had 12000, 79 s, 2026-11-25: below kBracketMinCols = 16 x the
  // sort cap = 32768, so the bracket never ran and racecheck never saw its pass nor the fallback after it).
  const Prepared& p = prepared("uniform", sized(140, 129), sized(40000, 33000), 35);
  const int64_t n = p.rows.cols;
  for (int shift : {-600, 600}) {
    if (racecheck_mode() && shift > 0) continue;  // racecheck: the fallback passes once (141 s for both, 2026-11-25)
    SCOPED_TRACE("rank shift " + std::to_string(shift));
    // racecheck: one k (the ten selections took racecheck 125 s per bracket variant, 2026-11-25), 2048: a bracket
    // far narrower than kBracketMaxInside of the row, so it is taken (and missed) whatever the sample.
    check_all_k(GetParam(), p,
                racecheck_mode()  ? std::vector<int64_t>{2048}
                : sanitize_mode() ? std::vector<int64_t>{2048, n / 2}
                                  : std::vector<int64_t>{1, 2048, 4000, n / 2, n - 1},
                /*both_orders=*/!sanitize_mode(), shift);
  }
}

// Short rows: no pass at all (the row fits one block) or exactly one.
TEST_P(LargeK, ShortRows) {
  // Sanitized: 2 (no pass), 2049 (one key over the sort cap: one pass) and 5000, sorted but at 2049; under racecheck
  // 2049 only (the 36 selections took racecheck 30 s per variant, 2026-11-25).
  // Sanitized: the variants without the bracket only (rows below kBracketMinCols = 32768 keys never take it: the
  // bracket variants run the very same kernels and passes here).
  if (sanitize_mode() && GetParam().bracket) GTEST_SKIP() << "rows too short for the bracket (sanitizer-sized run)";
  for (int64_t cols : {int64_t{1}, int64_t{2}, int64_t{100}, int64_t{2048}, int64_t{2049}, int64_t{5000}}) {
    if (sanitize_mode() && (cols == 1 || cols == 100 || cols == 2048)) continue;
    if (racecheck_mode() && cols != 2049) continue;
    const Prepared& p = prepared("many_equal", 130, cols, 40 + cols);
    // Sanitized: unsorted at 2049 only at k = n/2 (the pass) and n.
    check_all_k(GetParam(), p, k_values(cols), !sanitize_mode() || cols == 2049, 0, {cols / 2, cols});
  }
}

// User labels decide ties (scrambled, negative too); column labels with an offset.
TEST_P(LargeK, LabelsDecideTies) {
  // racecheck: 12000 keys a row (below kBracketMinCols: the bracket variants run the other variants' passes, so
  // racecheck takes those only; the bracket with labels is the other tools' at 33000).
  if (racecheck_mode() && GetParam().bracket) GTEST_SKIP() << "racecheck: rows too short for the bracket";
  const int64_t cols = racecheck_mode() ? 12000 : sized(40000, 33000);
  // Sanitized: the many-row path sorted only, the offset labels at two k (the 16 selections of 129 x 33000 keys took
  // memcheck 18-20 s per variant, 2026-11-25).
  // Sanitized further (2026-11-27: 144 selections per binary under memcheck): the 3 rows (cooperating blocks) without
  // the bracket (bracket_ignored), unsorted at n/2 only; the 129 rows (one block per row, with and without the
  // bracket) the user labels at 2048 and n/2 and the offset labels at n - 1, sorted; racecheck the user labels only
  // (the offset is added where a label is written, the same shared-memory steps as column labels).
  for (int64_t rows : {int64_t{3}, sized(int64_t{150}, int64_t{129})}) {
    if (racecheck_mode() && rows != 3) continue;  // racecheck: the many-row path is ManyRows'
    const bool both_orders = !sanitize_mode() || rows == 3;
    const bool many = sanitize_mode() && rows != 3;
    const Prepared& labelled = prepared("many_equal", rows, cols, 50 + rows, /*pad=*/2, /*label_seed=*/60 + rows);
    if (bracket_ignored(GetParam(), labelled)) continue;
    check_all_k(GetParam(), labelled, many ? std::vector<int64_t>{2048, cols / 2} : k_values(cols), both_orders, 0,
                {cols / 2});
    if (racecheck_mode()) continue;
    const Prepared& offset = prepared("all_equal", rows, cols, 70 + rows, 0, 0, /*label_offset=*/1000000007);
    check_all_k(GetParam(), offset,
                many ? std::vector<int64_t>{cols - 1}
                     : sized(std::vector<int64_t>{1, 777, cols / 2, cols - 1}, std::vector<int64_t>{777, cols - 1}),
                both_orders && !sanitize_mode());
  }
}

// One very long row: the single-query path.
TEST_P(LargeK, SingleLongRow) {
  const int64_t n = int64_t{1} << sized(22, 17);
  // Sanitized: 4096 and n/2 (racecheck took 127 s over the variants with all eight selections, 2026-11-25), sorted
  // (LongRowsAllK has the cooperating blocks' unsorted output), the variants without the bracket (bracket_ignored);
  // racecheck n/2 only (LongRowsAllK takes 2048 and n/2 on the same path).
  const Prepared& uniform = prepared("uniform", 1, n, 80);
  if (bracket_ignored(GetParam(), uniform)) GTEST_SKIP() << "cooperating blocks take no bracket (sanitizer-sized run)";
  check_all_k(GetParam(), uniform,
              racecheck_mode() ? std::vector<int64_t>{n / 2}
                               : sized(std::vector<int64_t>{1, 4096, n / 10, n / 2, n}, std::vector<int64_t>{4096, n / 2}),
              !sanitize_mode());
  check_all_k(GetParam(), prepared("many_equal", 1, n, 81),
              sized(std::vector<int64_t>{1, n / 3, n - 1}, std::vector<int64_t>{n / 3}), /*both_orders=*/false);
}

INSTANTIATE_TEST_SUITE_P(Gpu, LargeK,
                         ::testing::Values(Variant{SelectAlgorithm::RadixSelect, true, true},
                                           Variant{SelectAlgorithm::RadixSelect, false, true},
                                           Variant{SelectAlgorithm::SampleSelect, true, true},
                                           Variant{SelectAlgorithm::SampleSelect, false, true},
                                           Variant{SelectAlgorithm::RadixSelect, true, false},
                                           Variant{SelectAlgorithm::RadixSelect, false, false},
                                           Variant{SelectAlgorithm::SampleSelect, true, false},
                                           Variant{SelectAlgorithm::SampleSelect, false, false}),
                         [](const ::testing::TestParamInfo<Variant>& info) { return variant_name(info.param); });

}  // namespace
}  // namespace gknn::testing
