// join_test.cpp: the kNN join on the CPU: every mode that runs without a GPU (cpu, round robin, and the GPU side
// emulated on the host grid in hybrid and GPU-only runs) returns exactly the float64 oracle's ids and distances.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <numeric>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "core/progress.hpp"
#include "gknn/info.hpp"
#include "gknn/search.hpp"
#include "join/driver.hpp"
#include "join/epsilon.hpp"
#include "join/grid.hpp"
#include "join/grid_geometry.hpp"
#include "join/kdtree.hpp"
#include "join/work_queue.hpp"
#include "join_common.hpp"
#include "plan/join_plan.hpp"
#include "testing/expect_error.hpp"

namespace gknn::testing {
namespace {

using detail::join::make_host_searcher;
using detail::join::Output;
using detail::join::Problem;

/// A join in `mode` whose GPU side is the host grid emulation (the same cells and trust rule as the CUDA grid).
Result emulated_join(FloatView base, FloatView queries, int64_t k, bool self, JoinMode mode, const JoinParams& params,
                     JoinReport& report) {
  Result result;
  result.rows = queries.rows;
  result.k = k;
  // knn_join leaves its result uninitialised (allocated for overwrite): a NaN / -7 left anywhere means an entry
  // that no writer reached.
  result.distances.assign(size_t(result.rows * k), std::numeric_limits<float>::quiet_NaN());
  result.indices.assign(size_t(result.rows * k), -7);
  const Problem problem{base, queries, k, self, params.metric};
  const Output output{&result, {}};  // allocated above: nothing to wait for
  JoinParams resolved = params;  // as knn_join resolves them: an explicit mode's default is the seed's one ring
  if (resolved.rings < 0) resolved.rings = 1;
  detail::join::run_join(problem, output, mode, resolved, [&] {
    return make_host_searcher(problem, output, detail::join::max_rings(resolved.rings, int(base.cols)));
  }, report);
  return result;
}

using detail::join::KdTree;

/// The modes with a CPU side go through knn_join only in a build with the kd-tree (nanoflann); without it they
/// are refused (WithoutTheKdTreeTheCpuModesAreRefused), and the tests skip those calls.
bool have_kdtree() { return KdTree::available(); }

/// Pretends, for its lifetime, that this build has no kd-tree.
struct HiddenKdTree {
  HiddenKdTree() { KdTree::set_unavailable_for_testing(true); }
  ~HiddenKdTree() { KdTree::set_unavailable_for_testing(false); }
  HiddenKdTree(const HiddenKdTree&) = delete;
  HiddenKdTree& operator=(const HiddenKdTree&) = delete;
};

JoinParams small_batches() {
  JoinParams p;
  p.n_large = 0.1;
  p.n_small = 0.01;
  p.n_cpu = 0.01;
  p.cpu_window = 0.3;
  p.cpu_threads = 2;
  return p;
}

// The GPU side's rows into the result (Output::scatter in the grid's cell order or by query ids, Output::copy_rows
// for query ranges): each certain slot lands whole at its row with its 32-bit ids widened, a failed slot's row is
// left to its later batch and its query appended to `failed` in slot order; enough slots for several parts.
TEST(JoinOutput, GpuRowsLandAtTheirRowsAndFailedOnesAreListed) {
  const int64_t rows = 200000, k = 3, count = 150000, first = 40000;
  std::vector<float> distances(static_cast<size_t>(count * k));
  std::vector<uint32_t> indices(static_cast<size_t>(count * k));
  std::vector<unsigned char> ok(static_cast<size_t>(count));
  std::vector<int64_t> ids(static_cast<size_t>(count));
  std::vector<uint32_t> cell_ids(static_cast<size_t>(count));
  for (int64_t s = 0; s < count; ++s) {
    ok[size_t(s)] = s % 7 != 3;
    ids[size_t(s)] = (s * 7919) % rows;  // a permutation of part of the rows (7919 is prime, rows is not its multiple)
    cell_ids[size_t(s)] = uint32_t(ids[size_t(s)]);
    for (int64_t j = 0; j < k; ++j) {
      distances[size_t(s * k + j)] = float(s) + float(j) / 4;
      indices[size_t(s * k + j)] = uint32_t(4000000000u - uint32_t(s * k + j));  // above 2^31: widened unsigned
    }
  }
  enum class Call { ScatterIds, ScatterCells, CopyRows };
  for (Call call : {Call::ScatterIds, Call::ScatterCells, Call::CopyRows}) {
    Result result;
    result.rows = rows;
    result.k = k;
    result.distances.assign(size_t(rows * k), -1.f);
    result.indices.assign(size_t(rows * k), -7);
    const Output output{&result, {}};
    std::vector<int64_t> failed;
    if (call == Call::CopyRows)
      output.copy_rows(k, first, count, distances.data(), indices.data(), ok.data(), failed);
    else
      output.scatter(k, call == Call::ScatterIds ? ids.data() : nullptr, cell_ids.data(), count, distances.data(),
                     indices.data(), ok.data(), failed);
    std::vector<int64_t> want_failed;
    for (int64_t s = 0; s < count; ++s) {
      const int64_t row = call == Call::CopyRows ? first + s : ids[size_t(s)];
      if (!ok[size_t(s)]) want_failed.push_back(row);
      for (int64_t j = 0; j < k; ++j) {
        const float want_d = ok[size_t(s)] ? distances[size_t(s * k + j)] : -1.f;
        const int64_t want_i = ok[size_t(s)] ? int64_t(indices[size_t(s * k + j)]) : -7;
        ASSERT_EQ(result.distances[size_t(row * k + j)], want_d) << int(call) << " slot " << s;
        ASSERT_EQ(result.indices[size_t(row * k + j)], want_i) << int(call) << " slot " << s;
      }
    }
    EXPECT_EQ(failed, want_failed) << int(call);
  }
}

TEST(JoinProgress, FractionsThatCrossReachTheUserInOrder) {
  std::vector<double> seen;
  const ProgressCallback forward = detail::monotonic_progress([&](double f) { seen.push_back(f); });
  for (double f : {0.25, 0.5, 1.0, 0.88, 1.0, 0.5}) forward(f);  // a worker's 0.88 after another's 1.0
  EXPECT_EQ(seen, (std::vector<double>{0.25, 0.5, 1.0}));
  EXPECT_FALSE(detail::monotonic_progress(ProgressCallback{}));
}

TEST(JoinProgress, ReachesOneInEveryMode) {
  if (!have_kdtree()) GTEST_SKIP() << "this build has no CPU kd-tree (libnanoflann-dev)";
  const HostMatrix<float> points = random_matrix(3000, 2, 73);
  for (JoinMode mode : {JoinMode::Cpu, JoinMode::RoundRobin}) {
    double last = 0, first_after_one = -1;
    std::mutex seen;
    JoinParams params;
    params.mode = mode;
    params.progress = [&](double f) {
      std::lock_guard<std::mutex> lock(seen);
      if (last == 1.0 && first_after_one < 0) first_after_one = f;
      EXPECT_GT(f, last) << "fractions go forward only";
      last = f;
    };
    knn_join(points.view(), 4, params);
    EXPECT_DOUBLE_EQ(last, 1.0) << to_string(mode);
    EXPECT_LT(first_after_one, 0) << "nothing is reported after 1";
  }
}

TEST(JoinCpu, EveryModeMatchesTheOracle) {
  for (const JoinCase& c : join_cases()) {
    const FloatView v = c.points.view();
    const Result want = join_oracle(v, v, c.k, true);
    JoinParams params = small_batches();
    for (JoinMode mode : {JoinMode::Cpu, JoinMode::RoundRobin}) {
      if (!have_kdtree()) break;
      params.mode = mode;
      JoinReport report;
      params.report = &report;
      EXPECT_EQ(compare_join(knn_join(v, c.k, params), want), "") << c.name << " mode " << to_string(mode);
      EXPECT_EQ(report.cpu_queries, c.points.rows) << c.name;
    }
    for (JoinMode mode : {JoinMode::Hybrid, JoinMode::Gpu}) {
      JoinReport report;
      EXPECT_EQ(compare_join(emulated_join(v, v, c.k, true, mode, params, report), want), "")
          << c.name << " emulated " << to_string(mode);
      EXPECT_EQ(report.gpu_queries + report.cpu_queries, c.points.rows) << c.name << " " << to_string(mode);
      if (mode == JoinMode::Gpu) {
        EXPECT_EQ(report.cpu_queries, 0) << c.name;
      }
    }
  }
}

// The kd-tree is a forest of median-cut parts: every point's list, searched part by part with the box test between
// them, equals the oracle's whatever the cut (ties and duplicates across the parts' borders included).
TEST(JoinCpu, KdTreeForestMatchesTheOracleForEveryPartCount) {
  if (!have_kdtree()) GTEST_SKIP() << "no kd-tree in this build (nanoflann)";
  for (const JoinCase& c : join_cases()) {
    const FloatView v = c.points.view();
    const Result want = join_oracle(v, v, c.k, true);
    for (int parts : {1, 2, 8, 64}) {
      const KdTree tree(v, parts);
      Result got;
      got.rows = v.rows;
      got.k = c.k;
      got.indices.resize(size_t(v.rows * c.k));
      got.distances.resize(size_t(v.rows * c.k));
      for (int64_t i = 0; i < v.rows; ++i) {
        detail::join::BoundedNeighbours best(c.k);
        tree.search(v.row(i), i, best);
        const std::vector<detail::join::Candidate> sorted = best.sorted();
        ASSERT_EQ(int64_t(sorted.size()), c.k) << c.name << " parts " << parts << " row " << i;
        for (int64_t j = 0; j < c.k; ++j) {
          got.indices[size_t(i * c.k + j)] = sorted[size_t(j)].second;
          got.distances[size_t(i * c.k + j)] = float(sorted[size_t(j)].first);
        }
      }
      EXPECT_EQ(compare_join(got, want), "") << c.name << " parts " << parts;
    }
  }
}

TEST(JoinCpu, GrowingRingsStayExactAndFailLess) {
  for (const JoinCase& c : join_cases()) {
    const FloatView v = c.points.view();
    const Result want = join_oracle(v, v, c.k, true);
    for (int rings : {0, 3}) {
      if (rings == 3 && c.points.cols > 4) continue;  // 7^d cells per query: the auto limit covers high d
      JoinParams params = small_batches();
      params.rings = rings;
      JoinReport report;
      EXPECT_EQ(compare_join(emulated_join(v, v, c.k, true, JoinMode::Gpu, params, report), want), "")
          << c.name << " rings " << rings;
    }
  }
  // Fewer failures than the seed's single ring on an exponential set with a tiny starting epsilon.
  const HostMatrix<float> points = exponential_points(3000, 2, 30);
  JoinParams params;
  params.epsilon = 0.002;
  JoinReport seed, grown;
  emulated_join(points.view(), points.view(), 16, true, JoinMode::Gpu, params, seed);
  params.rings = 0;
  emulated_join(points.view(), points.view(), 16, true, JoinMode::Gpu, params, grown);
  EXPECT_LT(grown.failed_queries, seed.failed_queries);
}

TEST(JoinCpu, TinyEpsilonFailsAndReindexes) {
  const HostMatrix<float> points = exponential_points(1200, 3, 31);
  const FloatView v = points.view();
  const Result want = join_oracle(v, v, 16, true);
  JoinParams params = small_batches();
  params.epsilon = 1e-6;  // almost every first query fails
  for (JoinMode mode : {JoinMode::Gpu, JoinMode::Hybrid}) {
    JoinReport report;
    EXPECT_EQ(compare_join(emulated_join(v, v, 16, true, mode, params, report), want), "") << to_string(mode);
    if (mode == JoinMode::Gpu) {  // hybrid: the CPU may take them all first
      EXPECT_GT(report.failed_queries, 0);
    }
    if (mode == JoinMode::Gpu) {
      EXPECT_GT(report.reindexings, 0);
      EXPECT_GT(report.epsilon_final, 1e-6);
      EXPECT_EQ(report.gpu_queries, 1200);
    }
  }
}

TEST(JoinCpu, OutlierNeedsFewReindexingsInGpuOnlyMode) {
  const HostMatrix<float> points = outlier_points(2000, 2, 32);
  const FloatView v = points.view();
  JoinReport report;
  JoinParams params;
  const Result got = emulated_join(v, v, 4, true, JoinMode::Gpu, params, report);
  EXPECT_EQ(compare_join(got, join_oracle(v, v, 4, true)), "");
  EXPECT_LT(report.reindexings, 16 + 40);  // linear steps, then doubling up to the million-unit gap
}

// GPU-only beyond the seed: the last few failed queries (here the far outlier: 1 <= n / 1024) go to the exact brute
// force instead of ever coarser grids, and come back exact (self-join: the query itself dropped by index; R ⋈ S:
// nothing dropped), for both metrics.
TEST(JoinCpu, GpuOnlyTailGoesToTheBruteForceExactly) {
  const HostMatrix<float> points = outlier_points(2048, 3, 33);
  const FloatView v = points.view();
  for (Metric metric : {Metric::SquaredL2, Metric::L2}) {
    JoinParams params;
    params.rings = 0;
    params.metric = metric;
    double last = -1;
    params.progress = [&](double fraction) { last = fraction; };
    JoinReport report;
    const Result got = emulated_join(v, v, 6, true, JoinMode::Gpu, params, report);
    EXPECT_EQ(compare_join(got, join_oracle(v, v, 6, true, metric)), "") << to_string(metric);
    EXPECT_EQ(last, 1.0);  // the brute force's rows are reported done too
    EXPECT_EQ(report.brute_force_queries, 1);
    EXPECT_EQ(report.gpu_queries + report.brute_force_queries, 2048);
    EXPECT_EQ(report.reindexings, 0);
  }
  const HostMatrix<float> base = random_matrix(2048, 3, 34);
  JoinParams params;
  params.rings = 0;
  JoinReport report;
  const Result got = emulated_join(base.view(), v, 5, false, JoinMode::Gpu, params, report);
  EXPECT_EQ(compare_join(got, join_oracle(base.view(), v, 5, false)), "");
  EXPECT_EQ(report.brute_force_queries, 1);
}

TEST(JoinCpu, MetricL2) {
  const HostMatrix<float> points = random_matrix(700, 3, 33);
  const FloatView v = points.view();
  JoinParams params;
  params.metric = Metric::L2;
  params.mode = JoinMode::Cpu;
  if (have_kdtree()) {
    EXPECT_EQ(compare_join(knn_join(v, 9, params), join_oracle(v, v, 9, true, Metric::L2)), "");
  }
  JoinReport report;
  EXPECT_EQ(compare_join(emulated_join(v, v, 9, true, JoinMode::Hybrid, params, report),
                         join_oracle(v, v, 9, true, Metric::L2)),
            "");
}

TEST(JoinCpu, QueriesAgainstABase) {
  const HostMatrix<float> base = exponential_points(1000, 2, 34);
  HostMatrix<float> queries = random_matrix(300, 2, 35);
  for (int64_t j = 0; j < 2; ++j) queries.row(7)[j] = 50.f;  // far outside the base's box
  const Result want = join_oracle(base.view(), queries.view(), 12, false);
  JoinParams params = small_batches();
  params.mode = JoinMode::Cpu;
  if (have_kdtree()) {
    EXPECT_EQ(compare_join(knn_join(queries.view(), base.view(), 12, params), want), "");
  }
  for (JoinMode mode : {JoinMode::Hybrid, JoinMode::Gpu}) {
    JoinReport report;
    EXPECT_EQ(compare_join(emulated_join(base.view(), queries.view(), 12, false, mode, params, report), want), "")
        << to_string(mode);
  }
  // No queries: an empty result in every mode.
  const FloatView none{queries.data.data(), 0, 2, 0};
  if (have_kdtree()) {
    EXPECT_EQ(knn_join(none, base.view(), 4, params).rows, 0);
  }
  for (JoinMode mode : {JoinMode::Hybrid, JoinMode::Gpu}) {
    JoinReport report;
    EXPECT_EQ(emulated_join(base.view(), none, 4, false, mode, params, report).rows, 0) << to_string(mode);
  }
  // The query equal to a base row finds it at distance 0 (nothing is excluded in R ⋈ S).
  if (!have_kdtree()) return;
  const Result self_as_rs = knn_join(base.view(), base.view(), 1, params);
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(self_as_rs.distance(i, 0), 0.f);
}

TEST(JoinCpu, KBeyondTheBasePads) {
  const HostMatrix<float> base = random_matrix(5, 2, 36);
  const HostMatrix<float> queries = random_matrix(4, 2, 37);
  JoinParams params;
  params.mode = JoinMode::Cpu;
  const Result got = knn_join(queries.view(), base.view(), 8, params);
  EXPECT_EQ(compare_join(got, join_oracle(base.view(), queries.view(), 8, false)), "");
  EXPECT_EQ(got.index(0, 7), -1);
  EXPECT_EQ(got.distance(0, 7), std::numeric_limits<float>::infinity());
}

// A build without nanoflann (libnanoflann-dev) has no kd-tree: the modes with a CPU side are refused, naming the
// package, instead of scanning the whole base per query; Auto takes the GPU alone where there is one; what needs
// no tree (d > 8, a base smaller than k) still runs.
TEST(JoinCpu, WithoutTheKdTreeTheCpuModesAreRefused) {
  EXPECT_EQ(have_kdtree(), build_info().join_kdtree);
  const HostMatrix<float> points = random_matrix(300, 2, 41);
  const FloatView v = points.view();
  const Result want = join_oracle(v, v, 5, true);
  const bool gpu = backend_available(Backend::Cuda);
  const HiddenKdTree hidden;
  EXPECT_FALSE(have_kdtree());
  JoinParams params;
  for (JoinMode mode : {JoinMode::Cpu, JoinMode::RoundRobin}) {
    params.mode = mode;
    expect_error([&] { knn_join(v, 5, params); }, ErrorCode::Unsupported,
                 {"mode " + to_string(mode), "kd-tree", "libnanoflann-dev", "CMAKE_PREFIX_PATH"});
  }
  params.mode = JoinMode::Auto;
  if (gpu) {
    JoinReport report;
    params.report = &report;
    EXPECT_EQ(compare_join(knn_join(v, 5, params), want), "");
    EXPECT_EQ(report.mode, JoinMode::Gpu);
    EXPECT_NE(report.note.find("no CPU kd-tree"), std::string::npos) << report.note;
    params.report = nullptr;
    params.mode = JoinMode::Hybrid;
    expect_error([&] { knn_join(v, 5, params); }, ErrorCode::Unsupported,
                 {"mode hybrid", "libnanoflann-dev", "mode gpu runs without it"});
  } else {
    expect_error([&] { knn_join(v, 5, params); }, ErrorCode::Unsupported, {"mode auto without a CUDA device",
                                                                           "libnanoflann-dev"});
    params.mode = JoinMode::Hybrid;  // the missing device is named first
    expect_error([&] { knn_join(v, 5, params); }, ErrorCode::Unsupported, {"CUDA"});
  }
  // No tree needed: R ⋈ S with k > base rows (every base row in every answer) and d > 8 (brute force).
  params.mode = JoinMode::Cpu;
  const HostMatrix<float> small = random_matrix(5, 2, 42);
  EXPECT_EQ(compare_join(knn_join(v, small.view(), 8, params), join_oracle(small.view(), v, 8, false)), "");
  const HostMatrix<float> wide = integer_matrix(200, 12, 0, 4, 43);
  EXPECT_EQ(compare_join(knn_join(wide.view(), 6, params), join_oracle(wide.view(), wide.view(), 6, true)), "");
}

// knn_join's result is allocated for overwrite (not zero-filled): every entry must be written by the join itself.
// Different k in a row, so that no allocation reuses the previous answer's memory unnoticed.
TEST(JoinCpu, EveryEntryOfTheResultIsWritten) {
  if (!have_kdtree()) GTEST_SKIP() << "this build has no CPU kd-tree (libnanoflann-dev)";
  const HostMatrix<float> base = random_matrix(400, 3, 44);
  const HostMatrix<float> queries = random_matrix(90, 3, 45);
  for (int64_t k : {1, 7, 399}) {
    JoinParams params;
    params.mode = JoinMode::Cpu;
    JoinReport report;
    params.report = &report;
    const Result got = k < 399 ? knn_join(queries.view(), base.view(), k, params) : knn_join(base.view(), k, params);
    const Result want = k < 399 ? join_oracle(base.view(), queries.view(), k, false)
                                : join_oracle(base.view(), base.view(), k, true);
    EXPECT_EQ(compare_join(got, want), "") << "k " << k;
    for (size_t e = 0; e < got.indices.size(); ++e) {
      ASSERT_FALSE(std::isnan(got.distances[e])) << "k " << k << " entry " << e;
      ASSERT_TRUE(got.indices[e] >= 0 && got.indices[e] < 400) << "k " << k << " entry " << e;
    }
    EXPECT_GE(report.result_ms, 0);
    EXPECT_GE(report.total_ms, report.result_ms);
  }
}

TEST(JoinCpu, HighDimensionFallsBackToBruteForce) {
  const HostMatrix<float> points = integer_matrix(300, 12, 0, 4, 38);  // integers: every algorithm is exact
  JoinReport report;
  JoinParams params;
  params.mode = JoinMode::Cpu;
  params.report = &report;
  const Result got = knn_join(points.view(), 7, params);
  EXPECT_EQ(compare_join(got, join_oracle(points.view(), points.view(), 7, true)), "");
  EXPECT_NE(report.note.find("brute force"), std::string::npos) << report.note;
  EXPECT_EQ(report.brute_force_queries, 300);
}

TEST(JoinCpu, EpsilonBySamplingFindsKOnAverage) {
  // Uniform in the unit square: k neighbours on average within r where n * pi * r^2 = k (edges aside).
  const HostMatrix<float> points = random_matrix(20000, 2, 39);
  const double eps = detail::join::select_epsilon(points.view(), 32).eps_min;
  const double expected = std::sqrt(32.0 / (20000 * M_PI));
  EXPECT_GT(eps, 0.8 * expected);
  EXPECT_LT(eps, 1.3 * expected);
}

TEST(JoinCpu, TruncatedEpsilonHistogramGivesTheSeedsEpsilon) {
  // The first bins counted alone (a probe on a tenth of the sample bounds them) must give exactly the whole
  // histogram's choice: uniform, exponential, clustered and tied sets, k from 1 to beyond what the probe reaches.
  using detail::join::EpsilonHistogram;
  std::vector<HostMatrix<float>> sets;
  sets.push_back(random_matrix(30000, 2, 70));
  sets.push_back(random_matrix(20000, 3, 71));
  sets.push_back(random_matrix(8000, 6, 72));
  sets.push_back(exponential_points(30000, 2, 73));
  sets.push_back(exponential_points(20000, 4, 74));
  HostMatrix<float> ties = random_matrix(5000, 2, 75);
  for (float& v : ties.data) v = std::round(v * 20);  // a 21 x 21 lattice: many equal distances
  sets.push_back(std::move(ties));
  for (size_t s = 0; s < sets.size(); ++s)
    for (int64_t k : {1, 8, 32, 200, 3000}) {
      const double fast = detail::join::select_epsilon(sets[s].view(), k).eps_min;
      const double whole = detail::join::select_epsilon(sets[s].view(), k, 10000, EpsilonHistogram::Whole).eps_min;
      EXPECT_EQ(fast, whole) << "set " << s << " k " << k;
    }
}

TEST(JoinCpu, EpsilonFromAWholeBaseHistogramIsTheSeedsChoice) {
  // The GPU's way (the histogram counted against every base row by a callback, probe and truncation as on the
  // CPU), here with a CPU count: on bases below 2^18 rows the CPU's subset is the whole base, so both must choose
  // the same bin (one bin apart at most where float contraction moves a pair across a bin edge).
  using detail::join::Binning;
  std::vector<HostMatrix<float>> sets;
  sets.push_back(random_matrix(20000, 2, 76));
  sets.push_back(random_matrix(8000, 6, 77));
  sets.push_back(exponential_points(20000, 3, 78));
  for (size_t s = 0; s < sets.size(); ++s) {
    const FloatView v = sets[s].view();
    int calls = 0;
    const auto count = [&](const std::vector<int64_t>& rows, const Binning& b) {
      ++calls;
      std::vector<double> counts(size_t(b.bins), 0.0);
      for (int64_t q : rows)
        for (int64_t p = 0; p < v.rows; ++p) {
          float d2 = 0;
          for (int64_t j = 0; j < v.cols; ++j) d2 += (v.row(q)[j] - v.row(p)[j]) * (v.row(q)[j] - v.row(p)[j]);
          if (p == q || !(d2 < b.limit_sq)) continue;
          const int64_t bin = static_cast<int64_t>(std::sqrt(d2) * b.bins_per_unit);
          if (bin < b.bins) counts[size_t(bin)] += 1;
          else if (b.clamp_last) counts[size_t(b.bins - 1)] += 1;
        }
      return counts;
    };
    for (int64_t k : {1, 16, 300}) {
      const detail::join::EpsilonChoice host = detail::join::select_epsilon(v, k);
      const double counted = detail::join::select_epsilon(v, k, count).eps_min;
      EXPECT_NEAR(counted, host.eps_min, 1.01 * host.eps_mean / 10000) << "set " << s << " k " << k;
    }
    EXPECT_GE(calls, 3) << "set " << s;  // a probe and a truncated pass per k
  }
}

TEST(JoinCpu, ExactDistanceRoundsEveryStepAsTheGpuKernelDoes) {
  // The oracle's squared distance (exact_key) and the GPU range-query kernel (__dsub_rn, __dmul_rn, __dadd_rn) must
  // round each difference, product and sum on its own: a fused multiply-add (what -march=native made of exact_key)
  // changes the last bit of some of these sums (160 of these 2000 on an AVX2 machine), and with it the order of
  // near ties.
  const HostMatrix<float> a = random_matrix(2000, 16, 81), b = random_matrix(2000, 16, 82);
  int64_t differing = 0;
  for (int64_t i = 0; i < a.rows; ++i) {
    volatile double acc = 0;  // volatile: every step rounded to double here, whatever this file's flags
    for (int64_t j = 0; j < a.cols; ++j) {
      volatile const double d = double(a.row(i)[j]) - double(b.row(i)[j]);
      volatile const double square = d * d;
      acc = acc + square;
    }
    differing += detail::join::squared_distance(a.row(i), b.row(i), a.cols) != acc;
  }
  EXPECT_EQ(differing, 0);
}

TEST(JoinCpu, WorkQueueFollowsTheSeedsSchedule) {
  std::vector<int64_t> order(1000);
  std::iota(order.begin(), order.end(), 0);
  detail::join::WorkQueue queue(order, {0.4, 0.005, 0.005, 0.4, false});
  const std::vector<int64_t> first = queue.take_gpu();
  ASSERT_EQ(first.size(), 400u);  // n_large
  EXPECT_EQ(first.front(), 0);    // densest first
  queue.gpu_returned({0, 1}, 398);
  const std::vector<int64_t> cpu = queue.take_cpu();
  ASSERT_EQ(cpu.size(), 5u);  // n_cpu: the failed queries first, then the sparsest
  EXPECT_EQ(cpu[0], 0);
  EXPECT_EQ(cpu[1], 1);
  EXPECT_EQ(cpu[2], 999);
  queue.cpu_returned(5);
  // Round 2: min(half of 400, 597 unassigned - 400 reserved for the CPU) = 197.
  EXPECT_EQ(queue.take_gpu().size(), 197u);
  queue.gpu_returned({}, 197);
  // Round 3 would be min(97, 400 - 400) = 0: the monolithic rounds are over, small batches of n_small * N.
  EXPECT_EQ(queue.take_gpu().size(), 5u);
}

// The self-join's queue order read off the grid's cells is the order its definition gives: population of the
// point's cell descending, then cell key, then id (duplicates and clusters make many equal populations; 70 000
// points take the parallel loops).
TEST(JoinCpu, QueueOrderFromTheGridIsPopulationThenCellThenId) {
  HostMatrix<float> clustered = cluster_points(3000, 3, 21);
  for (int64_t i = 0; i < 300; ++i) std::copy_n(clustered.row(0), 3, clustered.row(i * 7));  // duplicates
  const std::vector<HostMatrix<float>> sets = {exponential_points(70000, 2, 22), std::move(clustered)};
  for (const HostMatrix<float>& points : sets) {
    const FloatView view = points.view();
    const detail::join::BoundingBox box = detail::join::bounding_box(view);
    const auto geometry = detail::join::make_geometry(box.lo, box.hi, int(view.cols), 0.004);
    const detail::join::HostGrid grid(view, geometry);
    std::vector<std::tuple<int64_t, uint64_t, int64_t>> want(size_t(view.rows));
    for (int64_t i = 0; i < view.rows; ++i)
      want[size_t(i)] = {-grid.population(view.row(i)), detail::join::cell_key(geometry, view.row(i)), i};
    std::sort(want.begin(), want.end());
    const std::vector<int64_t> got = grid.ids_by_population();
    ASSERT_EQ(got.size(), want.size());
    int64_t misplaced = 0;
    for (size_t i = 0; i < got.size(); ++i) misplaced += got[i] != std::get<2>(want[i]);
    EXPECT_EQ(misplaced, 0) << view.rows << " points";
  }
}

TEST(JoinCpu, GpuOnlyQueueWithoutAnOrderGivesEveryIdOnceThenTheFailed) {
  const detail::join::QueueParams gpu_only{0.4, 0.005, 0.005, 0.4, true};
  detail::join::WorkQueue queue(int64_t(1000), gpu_only);
  EXPECT_EQ(queue.total(), 1000);
  EXPECT_TRUE(queue.take_gpu_all());  // every id, unlisted
  EXPECT_FALSE(queue.take_gpu_all());
  queue.gpu_returned({7, 3}, 998);
  EXPECT_EQ(queue.done(), 998);
  EXPECT_EQ(queue.take_gpu(), (std::vector<int64_t>{7, 3}));  // then the failed ones
  queue.gpu_returned({}, 2);
  EXPECT_TRUE(queue.take_gpu().empty());
  EXPECT_EQ(queue.done(), 1000);
  // A driver that never asks for the unlisted batch gets it listed.
  detail::join::WorkQueue listed(int64_t(5), gpu_only);
  EXPECT_EQ(listed.take_gpu(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(listed.take_gpu_all());
  EXPECT_FALSE(detail::join::WorkQueue(int64_t(0), gpu_only).take_gpu_all());
  // Only GPU-only queues come without an order.
  EXPECT_THROW({ detail::join::WorkQueue q(int64_t(10), detail::join::QueueParams{}); }, Error);
}

TEST(JoinCpu, Errors) {
  const HostMatrix<float> points = random_matrix(10, 2, 40);
  expect_error([&] { knn_join(points.view(), 10); }, ErrorCode::InvalidArgument, {"k = 10", "10"});
  expect_error([&] { knn_join(points.view(), 0); }, ErrorCode::InvalidArgument, {"k must be positive"});
  expect_error([&] { knn_join(FloatView{nullptr, 0, 2, 0}, 1); }, ErrorCode::InvalidArgument, {"empty"});
  HostMatrix<float> bad = points;
  bad.row(6)[1] = std::numeric_limits<float>::quiet_NaN();
  expect_error([&] { knn_join(bad.view(), 3); }, ErrorCode::InvalidArgument, {"row 6"});
  bad.row(6)[1] = std::numeric_limits<float>::infinity();
  expect_error([&] { knn_join(bad.view(), 3); }, ErrorCode::InvalidArgument, {"row 6"});
  JoinParams p;
  p.threads_per_query = 3;
  expect_error([&] { knn_join(points.view(), 3, p); }, ErrorCode::InvalidArgument, {"threads_per_query"});
  p = {};
  p.metric = Metric::Cosine;
  expect_error([&] { knn_join(points.view(), 3, p); }, ErrorCode::InvalidArgument, {"metric"});
  p = {};
  p.rings = -2;
  expect_error([&] { knn_join(points.view(), 3, p); }, ErrorCode::InvalidArgument, {"rings"});
  if (have_kdtree()) {  // the mode is resolved (and refused without the tree) before the rings are checked
    p.rings = 64;        // (2 * 64 + 1)^8 cells per query: the enumeration's 32-bit offsets would wrap
    p.mode = JoinMode::Cpu;
    const HostMatrix<float> eight = random_matrix(50, 8, 77);
    expect_error([&] { knn_join(eight.view(), 3, p); }, ErrorCode::InvalidArgument, {"rings = 64", "2^31"});
    p.rings = 9;  // 19^7: allowed
    const HostMatrix<float> seven = random_matrix(50, 7, 78);
    EXPECT_EQ(knn_join(seven.view(), 3, p).rows, 50);
  }
  p = {};
  p.n_large = 1.5;
  expect_error([&] { knn_join(points.view(), 3, p); }, ErrorCode::InvalidArgument, {"n_large"});
  if (!backend_available(Backend::Cuda)) {
    p = {};
    p.mode = JoinMode::Gpu;
    expect_error([&] { knn_join(points.view(), 3, p); }, ErrorCode::Unsupported, {"CUDA"});
  }
  expect_error([&] { parse_join_mode("fast"); }, ErrorCode::InvalidArgument, {"fast", "hybrid"});
  EXPECT_EQ(parse_join_mode("round-robin"), JoinMode::RoundRobin);
}

// The join's measured plan (src/plan/join_plan_table.csv): the built-in table parses; a row serves its device, its
// dimension and n, k within 4x, the nearest winning; malformed tables are refused naming their line.
TEST(JoinPlan, BuiltInTableParsesAndNamesRunnableModes) {
  const detail::plan::JoinTable& table = detail::plan::active_join_table();
  EXPECT_FALSE(table.rows.empty()) << table.source;
  for (const detail::plan::JoinRow& r : table.rows) {
    EXPECT_NE(r.mode, JoinMode::Auto) << "line " << r.line;
    EXPECT_GE(r.rings, 0) << "line " << r.line;
    EXPECT_GE(r.d, 1) << "line " << r.line;
    EXPECT_LE(r.d, kJoinMaxGridDim) << "line " << r.line;
  }
}

TEST(JoinPlan, NearestRowOfTheDeviceDimensionSizeAndK) {
  const std::string text =
      "# comment\n"
      "device,n,d,k,mode,rings,seconds\n"
      "H200,1000000,2,32,gpu,0,0.1\n"
      "H200,100000,2,32,hybrid,1,0.05\n"
      "H200,1000000,3,32,cpu,1,2\n"
      "H100,1000000,2,32,gpu,3,0.2\n";
  const detail::plan::JoinTable t = detail::plan::parse_join_table(text, "test table");
  ASSERT_EQ(t.rows.size(), 4u);
  using detail::plan::nearest_join;
  const detail::plan::JoinRow* r = nearest_join(t, "NVIDIA H200", 900000, 2, 40);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->mode, JoinMode::Gpu);
  EXPECT_EQ(r->rings, 0);
  EXPECT_EQ(r->line, 3);
  r = nearest_join(t, "NVIDIA H200", 120000, 2, 32);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->mode, JoinMode::Hybrid);
  r = nearest_join(t, "NVIDIA H100 80GB HBM3", 1000000, 2, 32);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->rings, 3);
  EXPECT_EQ(nearest_join(t, "NVIDIA H200", 1000000, 4, 32), nullptr);      // no row of that dimension
  EXPECT_EQ(nearest_join(t, "NVIDIA H200", 100000000, 2, 32), nullptr);    // 100x the nearest n
  EXPECT_EQ(nearest_join(t, "NVIDIA H200", 1000000, 2, 1000), nullptr);    // k 31x
  EXPECT_EQ(nearest_join(t, "NVIDIA A100", 1000000, 2, 32), nullptr);      // another device
  EXPECT_NE(detail::plan::describe_join(t.rows.front(), t).find("test table line 3"), std::string::npos);
  // A row written by format_join_row reads back as itself.
  const std::string again = std::string(detail::plan::kJoinHeader) + "\n" + detail::plan::format_join_row(t.rows[1]);
  const detail::plan::JoinTable back = detail::plan::parse_join_table(again, "again");
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_EQ(back.rows[0].mode, JoinMode::Hybrid);
  EXPECT_EQ(back.rows[0].n, 100000);
  EXPECT_DOUBLE_EQ(back.rows[0].seconds, 0.05);
}

TEST(JoinPlan, MalformedTablesAreRefusedNamingTheLine) {
  using detail::plan::parse_join_table;
  const std::string header = "device,n,d,k,mode,rings,seconds\n";
  expect_error([&] { parse_join_table("device,n,d,k,mode\n", "t"); }, ErrorCode::Format, {"t line 1", "header"});
  expect_error([&] { parse_join_table(header + "H200,10,2,4,auto,0,1\n", "t"); }, ErrorCode::Format,
               {"t line 2", "not auto"});
  expect_error([&] { parse_join_table(header + "H200,10,2,4,fast,0,1\n", "t"); }, ErrorCode::Format,
               {"t line 2", "fast"});
  expect_error([&] { parse_join_table(header + "H200,10,2,4,gpu,-1,1\n", "t"); }, ErrorCode::Format,
               {"t line 2", "rings"});
  expect_error([&] { parse_join_table(header + "H200,10,2,gpu,0,1\n", "t"); }, ErrorCode::Format,
               {"t line 2", "7 comma-separated"});
  expect_error([&] { parse_join_table(header + "H200,ten,2,4,gpu,0,1\n", "t"); }, ErrorCode::Format,
               {"t line 2", "n 'ten'"});
  expect_error([&] { parse_join_table(header + "H200,10,0,4,gpu,0,1\n", "t"); }, ErrorCode::Format,
               {"t line 2", "positive"});
}

// Auto without a device is the CPU mode; with one, the note names the plan's row or the rule (join_gpu_test).
TEST(JoinPlan, AutoWithoutADeviceRunsTheCpuMode) {
  if (backend_available(Backend::Cuda) || !have_kdtree()) GTEST_SKIP() << "a device is visible, or no kd-tree";
  const HostMatrix<float> points = random_matrix(400, 2, 91);
  JoinParams params;
  JoinReport report;
  params.report = &report;
  const Result got = knn_join(points.view(), 6, params);
  EXPECT_EQ(report.mode, JoinMode::Cpu);
  EXPECT_EQ(compare_join(got, join_oracle(points.view(), points.view(), 6, true)), "");
}

}  // namespace
}  // namespace gknn::testing
