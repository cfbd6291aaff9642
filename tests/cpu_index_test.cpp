// cpu_index_test.cpp: gknn::Index on the CPU backend (resident host store, ids, padding, reset).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
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

/// Index::add(ByteView): the index of the rows' float values, whatever the metric (cosine normalises the floats).
TEST(CpuIndex, ByteRowsEqualTheirFloats) {
  const HostMatrix<float> floats = integer_matrix(500, 7, 0, 255, 30), queries = integer_matrix(9, 7, 0, 255, 31);
  std::vector<uint8_t> bytes(500 * 10, 77);  // row stride 10: the padding must not be read as values
  for (int64_t i = 0; i < 500; ++i)
    for (int64_t j = 0; j < 7; ++j) bytes[size_t(i * 10 + j)] = static_cast<uint8_t>(floats.row(i)[j]);
  std::vector<int64_t> ids(500);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 5 * int64_t(i) + 1;
  for (Metric metric : {Metric::SquaredL2, Metric::InnerProduct, Metric::Cosine, Metric::L1}) {
    SCOPED_TRACE(to_string(metric));
    Index from_floats(7, metric, Backend::Cpu), from_bytes(7, metric, Backend::Cpu);
    from_floats.add_with_ids(rows_of(floats, 0, 200), ids.data());
    from_floats.add_with_ids(rows_of(floats, 200, 300), ids.data() + 200);
    from_bytes.add_with_ids(ByteView{bytes.data(), 200, 7, 10}, ids.data());
    from_bytes.add_with_ids(ByteView{bytes.data() + 200 * 10, 300, 7, 10}, ids.data() + 200);
    const Result want = from_floats.search(queries.view(), 15), got = from_bytes.search(queries.view(), 15);
    EXPECT_EQ(want.indices, got.indices);
    EXPECT_EQ(want.distances, got.distances);
  }
  Index index(7, Metric::SquaredL2, Backend::Cpu);
  EXPECT_THROW(index.add(ByteView{bytes.data(), 3, 6, 0}), Error);  // dimension 6 of 7
  EXPECT_THROW(index.add(ByteView{bytes.data(), 3, 7, 5}), Error);  // stride below the dimension
  EXPECT_THROW(index.add(ByteView{bytes.data(), 3, 7, 0, Memory::Device}), Error);
  EXPECT_EQ(0, index.size());
}

/// A NaN or Inf in an added batch names its row and column and leaves the index as it was.
TEST(CpuIndex, AddNamesTheFirstNonFiniteValue) {
  HostMatrix<float> base = integer_matrix(3000, 100, -5, 5, 32);  // 300K values: the threaded scan
  Index index(100, Metric::SquaredL2, Backend::Cpu);
  index.add(rows_of(base, 0, 10));
  base.row(2500)[3] = INFINITY;
  base.row(1700)[99] = NAN;
  base.row(1700)[42] = -INFINITY;
  try {
    index.add(base.view());
    FAIL() << "a non-finite row was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCode::InvalidArgument, e.code());
    EXPECT_NE(std::string(e.what()).find("Index::add vectors row 1700 column 42 is -inf"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(10, index.size());
  base.row(1000)[0] = NAN;
  try {
    index.add(base.view());
    FAIL() << "a non-finite row was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Index::add vectors row 1000 column 0 is nan"), std::string::npos) << e.what();
  }
  EXPECT_EQ(10, index.size());
}

}  // namespace
}  // namespace gknn::testing
