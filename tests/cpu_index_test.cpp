// cpu_index_test.cpp: gknn::Index on the CPU backend (resident host store, ids, padding, reset).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"

namespace gknn::testing {
namespace {

FloatView rows_of(const HostMatrix<float>& m, int64_t first, int64_t count) {
  return {m.row(first), count, m.cols, m.cols};
}

TEST(CpuIndex, BatchedAddsEqualOneShotSearch) {
  const HostMatrix<float> base = integer_matrix(1000, 12, -5, 5, 1), queries = integer_matrix(31, 12, -5, 5, 2);
  for (Metric metric :
       {Metric::SquaredL2, Metric::L2, Metric::InnerProduct, Metric::Cosine, Metric::L1, Metric::Linf}) {
    SCOPED_TRACE(to_string(metric));
    Index index(12, metric, Backend::Cpu);
    index.add(rows_of(base, 0, 300));
    index.add(rows_of(base, 300, 0));
    index.add(rows_of(base, 300, 700));
    EXPECT_EQ(index.size(), 1000);
    EXPECT_EQ(index.dimension(), 12);
    EXPECT_EQ(index.backend(), Backend::Cpu);
    SearchParams p;
    p.k = 20;
    p.metric = metric;
    p.backend = Backend::Cpu;
    const Result from_index = index.search(queries.view(), 20), direct = search(base.view(), queries.view(), p);
    EXPECT_EQ(from_index.indices, direct.indices);
    EXPECT_EQ(from_index.distances, direct.distances);
    CheckOptions opt;
    opt.exact_indices = metric != Metric::Cosine && metric != Metric::L2;
    EXPECT_EQ("", check_search(from_index, base.view(), queries.view(), p, opt));
  }
}

TEST(CpuIndex, IdsMapResultsAndPaddingStaysMinusOne) {
  const HostMatrix<float> base = random_matrix(7, 4, 3), queries = random_matrix(2, 4, 4);
  std::vector<int64_t> ids{700, 600, 500, 400, 300, 200, 100};
  Index index(4, Metric::SquaredL2, Backend::Cpu);
  index.add_with_ids(rows_of(base, 0, 3), ids.data());
  index.add_with_ids(rows_of(base, 3, 4), ids.data() + 3);
  SearchParams p;
  p.k = 10;
  p.backend = Backend::Cpu;
  const Result positions = search(base.view(), queries.view(), p);
  const Result got = index.search(queries.view(), 10);
  for (int64_t q = 0; q < 2; ++q) {
    for (int64_t j = 0; j < 7; ++j) {
      EXPECT_EQ(got.index(q, j), ids[size_t(positions.index(q, j))]);
      EXPECT_EQ(got.distance(q, j), positions.distance(q, j));
    }
    for (int64_t j = 7; j < 10; ++j) {
      EXPECT_EQ(got.index(q, j), -1);
      EXPECT_EQ(got.distance(q, j), INFINITY);
    }
  }
}

TEST(CpuIndex, ResetEmptiesAndAllowsReuse) {
  const HostMatrix<float> a = random_matrix(50, 6, 5), b = random_matrix(30, 6, 6), q = random_matrix(3, 6, 7);
  Index index(6, Metric::SquaredL2, Backend::Cpu);
  std::vector<int64_t> ids(50, 9);
  index.add_with_ids(a.view(), ids.data());
  index.reset();
  EXPECT_EQ(index.size(), 0);
  EXPECT_THROW(index.search(q.view(), 3), Error);  // empty index
  index.add(b.view());                             // no ids any more: plain add is allowed again
  SearchParams p;
  p.k = 5;
  p.backend = Backend::Cpu;
  const Result got = index.search(q.view(), 5);
  EXPECT_EQ(got.indices, search(b.view(), q.view(), p).indices);
}

TEST(CpuIndex, StridedAddIsCopied) {
  const HostMatrix<float> base = integer_matrix(64, 5, 0, 9, 8), queries = integer_matrix(4, 5, 0, 9, 9);
  std::vector<float> padded(64 * 8, NAN);
  for (int64_t i = 0; i < 64; ++i) std::copy(base.row(i), base.row(i) + 5, padded.data() + i * 8);
  Index index(5, Metric::SquaredL2, Backend::Cpu);
  index.add(FloatView{padded.data(), 64, 5, 8});
  SearchParams p;
  p.k = 64;
  p.backend = Backend::Cpu;
  const Result got = index.search(queries.view(), p);
  CheckOptions exact;
  exact.exact_indices = true;
  EXPECT_EQ("", check_search(got, base.view(), queries.view(), p, exact));
}

TEST(CpuIndex, ForwardsAlgorithmChoiceAndErrors) {
  const HostMatrix<float> base = random_matrix(200, 6, 10), queries = random_matrix(5, 6, 11);
  Index index(6, Metric::L1, Backend::Cpu);
  index.add(base.view());
  SearchParams p;
  p.k = 4;
  p.metric = Metric::L1;
  p.distance = DistanceAlgorithm::Gemm;
  EXPECT_THROW(index.search(queries.view(), p), Error);
  p.distance = DistanceAlgorithm::Reference;
  EXPECT_EQ("", check_search(index.search(queries.view(), p), base.view(), queries.view(), p));
}

}  // namespace
}  // namespace gknn::testing
