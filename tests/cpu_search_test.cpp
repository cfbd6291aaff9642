// cpu_search_test.cpp: the CPU fast path's tiling, threading, progress and input layouts, against the oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gknn/error.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"

namespace gknn::testing {
namespace {

struct Algo {
  DistanceAlgorithm distance;
  SelectAlgorithm select;
};

const std::vector<Algo> kFastAlgos{
    {DistanceAlgorithm::Direct, SelectAlgorithm::Heap},      {DistanceAlgorithm::Direct, SelectAlgorithm::Quickselect},
    {DistanceAlgorithm::Direct, SelectAlgorithm::Sort},      {DistanceAlgorithm::Gemm, SelectAlgorithm::Heap},
    {DistanceAlgorithm::Gemm, SelectAlgorithm::Quickselect}, {DistanceAlgorithm::Gemm, SelectAlgorithm::Sort}};

SearchParams cpu_params(int64_t k, Metric metric, Algo algo) {
  SearchParams p;
  p.k = k;
  p.metric = metric;
  p.p = 3.0;
  p.backend = Backend::Cpu;
  p.distance = algo.distance;
  p.select = algo.select;
  return p;
}

bool gemm_metric(Metric m) { return m == Metric::SquaredL2 || m == Metric::InnerProduct; }

std::string algo_name(Algo a) { return to_string(a.distance) + "+" + to_string(a.select); }

// A 1-byte budget forces the smallest plan: 16-row tiles and single-query blocks, so every tile boundary,
// a partial last tile (1237 = 77 * 16 + 5) and candidates tying across tiles are all exercised.
TEST(CpuSearch, TinyMemoryBudgetHitsEveryTileEdgeExactly) {
  const HostMatrix<float> base = integer_matrix(1237, 5, 0, 2, 31), queries = integer_matrix(9, 5, 0, 2, 32);
  for (Metric metric : {Metric::SquaredL2, Metric::InnerProduct, Metric::L1, Metric::Linf})
    for (const Algo& algo : kFastAlgos) {
      if (algo.distance == DistanceAlgorithm::Gemm && !gemm_metric(metric)) continue;
      for (int64_t k : {1, 15, 16, 17, 100, 1237}) {
        SCOPED_TRACE(to_string(metric) + " " + algo_name(algo) + " k=" + std::to_string(k));
        SearchParams p = cpu_params(k, metric, algo);
        p.memory_budget = 1;
        const Result got = search(base.view(), queries.view(), p);
        CheckOptions exact;
        exact.exact_indices = true;
        ASSERT_EQ("", check_search(got, base.view(), queries.view(), p, exact));
      }
    }
}

// Direct sums each key in dimension order whatever the tiling, so the budget cannot change a bit. SGEMM's
// rounding depends on the shape of each call, so GEMM is compared on integer data, where it is exact.
TEST(CpuSearch, BudgetDoesNotChangeResults) {
  const HostMatrix<float> random_base = random_matrix(3001, 37, 41), random_queries = random_matrix(23, 37, 42);
  const HostMatrix<float> int_base = integer_matrix(3001, 37, -9, 9, 43),
                          int_queries = integer_matrix(23, 37, -9, 9, 44);
  for (const Algo& algo : kFastAlgos) {
    const bool gemm = algo.distance == DistanceAlgorithm::Gemm;
    const FloatView base = gemm ? int_base.view() : random_base.view();
    const FloatView queries = gemm ? int_queries.view() : random_queries.view();
    SearchParams p = cpu_params(40, Metric::SquaredL2, algo);
    const Result roomy = search(base, queries, p);
    for (size_t budget : {size_t(1), size_t(50000), size_t(1) << 20}) {
      SCOPED_TRACE(algo_name(algo) + " budget=" + std::to_string(budget));
      p.memory_budget = budget;
      const Result tight = search(base, queries, p);
      EXPECT_EQ(roomy.indices, tight.indices);
      EXPECT_EQ(roomy.distances, tight.distances);
      EXPECT_EQ("", check_search(tight, base, queries, p));
    }
  }
}

TEST(CpuSearch, ThreadCountDoesNotChangeResults) {
  const HostMatrix<float> base = random_matrix(4099, 19, 51);
  for (int64_t nq : {1, 2, 3, 65}) {  // 1 query: the base is split between threads and merged
    const HostMatrix<float> queries = random_matrix(nq, 19, 52 + uint64_t(nq));
    for (Metric metric : {Metric::SquaredL2, Metric::L1})
      for (const Algo& algo : kFastAlgos) {
        if (algo.distance == DistanceAlgorithm::Gemm && !gemm_metric(metric)) continue;
        SCOPED_TRACE(to_string(metric) + " " + algo_name(algo) + " q=" + std::to_string(nq));
        SearchParams p = cpu_params(300, metric, algo);
        p.threads = 1;
        const Result one = search(base.view(), queries.view(), p);
        for (int threads : {2, 3, 8}) {
          p.threads = threads;
          const Result many = search(base.view(), queries.view(), p);
          EXPECT_EQ(one.indices, many.indices) << threads << " threads";
          EXPECT_EQ(one.distances, many.distances) << threads << " threads";
        }
        EXPECT_EQ("", check_search(one, base.view(), queries.view(), p));
      }
  }
}

TEST(CpuSearch, SplitBaseKeepsTiesInIndexOrder) {
  // One query, all base rows equal: the merged parts must still list indices 0..k-1 in order.
  HostMatrix<float> base(5000, 4), queries(1, 4);
  std::fill(base.data.begin(), base.data.end(), 1.f);
  const FloatView bview = std::as_const(base).view(), qview = std::as_const(queries).view();
  for (const Algo& algo : kFastAlgos) {
    SearchParams p = cpu_params(3000, Metric::SquaredL2, algo);
    p.threads = 4;
    p.memory_budget = 1;
    const Result got = search(bview, qview, p);
    for (int64_t j = 0; j < p.k; ++j) ASSERT_EQ(got.index(0, j), j) << algo_name(algo);
  }
}

TEST(CpuSearch, ProgressIsMonotoneAndEndsAtOne) {
  const HostMatrix<float> base = random_matrix(2000, 8, 61), queries = random_matrix(300, 8, 62);
  for (DistanceAlgorithm d : {DistanceAlgorithm::Reference, DistanceAlgorithm::Direct, DistanceAlgorithm::Gemm}) {
    std::vector<double> seen;
    SearchParams p = cpu_params(5, Metric::SquaredL2, {d, SelectAlgorithm::Auto});
    p.threads = 2;
    p.memory_budget = 4096;                                 // many small query blocks: many reports
    p.progress = [&seen](double f) { seen.push_back(f); };  // not synchronised: must be called from one thread
    search(base.view(), queries.view(), p);
    ASSERT_FALSE(seen.empty()) << to_string(d);
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end())) << to_string(d);
    EXPECT_EQ(seen.back(), 1.0) << to_string(d);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1.0), 1) << to_string(d);
    EXPECT_GE(seen.front(), 0.0);
  }
}

TEST(CpuSearch, ProgressExceptionPropagates) {
  const HostMatrix<float> base = random_matrix(500, 8, 63), queries = random_matrix(100, 8, 64);
  SearchParams p = cpu_params(5, Metric::SquaredL2, {DistanceAlgorithm::Direct, SelectAlgorithm::Heap});
  p.memory_budget = 4096;
  p.threads = 1;
  p.progress = [](double) { throw Error(ErrorCode::Internal, "cancelled by callback"); };
  EXPECT_THROW(search(base.view(), queries.view(), p), Error);
}

TEST(CpuSearch, StridedRowsEqualPackedRows) {
  const HostMatrix<float> base = integer_matrix(777, 13, -3, 3, 71), queries = integer_matrix(21, 13, -3, 3, 72);
  const int64_t bs = 16, qs = 19;  // row strides larger than the dimension; the gaps hold NaN
  std::vector<float> bpad(size_t(base.rows * bs), NAN), qpad(size_t(queries.rows * qs), NAN);
  for (int64_t i = 0; i < base.rows; ++i) std::copy(base.row(i), base.row(i) + 13, bpad.data() + i * bs);
  for (int64_t i = 0; i < queries.rows; ++i) std::copy(queries.row(i), queries.row(i) + 13, qpad.data() + i * qs);
  const FloatView bview{bpad.data(), base.rows, 13, bs}, qview{qpad.data(), queries.rows, 13, qs};
  for (Metric metric : {Metric::SquaredL2, Metric::InnerProduct, Metric::L1, Metric::Linf, Metric::Cosine})
    for (DistanceAlgorithm d : distance_algorithms(Backend::Cpu, metric)) {
      SCOPED_TRACE(to_string(metric) + " " + to_string(d));
      SearchParams p = cpu_params(29, metric, {d, SelectAlgorithm::Auto});
      p.memory_budget = 20000;
      const Result strided = search(bview, qview, p), packed = search(base.view(), queries.view(), p);
      EXPECT_EQ(strided.indices, packed.indices);
      EXPECT_EQ(strided.distances, packed.distances);
      CheckOptions opt;
      opt.exact_indices = metric != Metric::Cosine;
      EXPECT_EQ("", check_search(packed, base.view(), queries.view(), p, opt));
    }
}

TEST(CpuSearch, Uint8OverloadEqualsFloatSearch) {
  const HostMatrix<float> fbase = integer_matrix(1500, 24, 0, 255, 81), fq = integer_matrix(17, 24, 0, 255, 82);
  std::vector<uint8_t> bbase(fbase.data.begin(), fbase.data.end()), bq(fq.data.begin(), fq.data.end());
  const ByteView base{bbase.data(), fbase.rows, fbase.cols, 0}, queries{bq.data(), fq.rows, fq.cols, 0};
  for (DistanceAlgorithm d : {DistanceAlgorithm::Direct, DistanceAlgorithm::Gemm}) {
    SearchParams p = cpu_params(10, Metric::SquaredL2, {d, SelectAlgorithm::Auto});
    const Result bytes = search(base, queries, p), floats = search(fbase.view(), fq.view(), p);
    EXPECT_EQ(bytes.indices, floats.indices);
    EXPECT_EQ(bytes.distances, floats.distances);
    CheckOptions exact;
    exact.exact_indices = true;
    EXPECT_EQ("", check_search(bytes, fbase.view(), fq.view(), p, exact));
  }
}

TEST(CpuSearch, GemmEqualsDirectOnIntegerData) {
  // Exactly representable data: the GEMM decomposition must not lose a bit anywhere (keys compared too).
  const HostMatrix<float> base = integer_matrix(2345, 64, -8, 8, 91), queries = integer_matrix(77, 64, -8, 8, 92);
  for (Metric metric : {Metric::SquaredL2, Metric::InnerProduct}) {
    SearchParams p = cpu_params(64, metric, {DistanceAlgorithm::Direct, SelectAlgorithm::Heap});
    const Result direct = search(base.view(), queries.view(), p);
    p.distance = DistanceAlgorithm::Gemm;
    const Result gemm = search(base.view(), queries.view(), p);
    EXPECT_EQ(direct.indices, gemm.indices) << to_string(metric);
    EXPECT_EQ(direct.distances, gemm.distances) << to_string(metric);
  }
}

// Lp has vectorised kernels for p = 1..4 and std::pow otherwise: every path against the oracle.
TEST(CpuSearch, LpExponentsMatchOracle) {
  const HostMatrix<float> base = random_matrix(700, 21, 101), queries = random_matrix(9, 21, 102);
  const HostMatrix<float> int_base = integer_matrix(700, 21, -3, 3, 103),
                          int_queries = integer_matrix(9, 21, -3, 3, 104);
  for (double p : {0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 7.25}) {
    SCOPED_TRACE("p=" + std::to_string(p));
    SearchParams params = cpu_params(30, Metric::Lp, {DistanceAlgorithm::Direct, SelectAlgorithm::Auto});
    params.p = p;
    EXPECT_EQ("", check_search(search(base.view(), queries.view(), params), base.view(), queries.view(), params));
    // Integer data and integer p: |d|^p is exact, so the order of the keys is too.
    if (p == std::floor(p)) {
      CheckOptions exact;
      exact.exact_indices = true;
      const Result got = search(int_base.view(), int_queries.view(), params);
      EXPECT_EQ("", check_search(got, int_base.view(), int_queries.view(), params, exact));
    }
  }
}

TEST(CpuSearch, HugeCoordinatesGiveInfiniteKeysNotGarbage) {
  // Squared distances overflow float: keys become +inf (never NaN) and ties are broken by index.
  HostMatrix<float> base(40, 2), queries(1, 2);
  for (int64_t i = 0; i < base.rows; ++i) base.row(i)[0] = (i % 2 ? 3e38f : -3e38f), base.row(i)[1] = float(i);
  queries.row(0)[0] = 3e38f;
  for (const Algo& algo : kFastAlgos) {
    const Result got =
        search(std::as_const(base).view(), std::as_const(queries).view(), cpu_params(40, Metric::SquaredL2, algo));
    for (int64_t j = 0; j < 40; ++j) ASSERT_FALSE(std::isnan(got.distance(0, j))) << algo_name(algo);
    for (int64_t j = 1; j < 40; ++j)
      ASSERT_TRUE(got.distance(0, j - 1) < got.distance(0, j) ||
                  (got.distance(0, j - 1) == got.distance(0, j) && got.index(0, j - 1) < got.index(0, j)))
          << algo_name(algo) << " rank " << j;
  }
}

}  // namespace
}  // namespace gknn::testing
