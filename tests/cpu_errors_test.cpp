// cpu_errors_test.cpp: what the CPU backend refuses, and that its messages name the algorithm and metric.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gknn/error.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/expect_error.hpp"

namespace gknn::testing {
namespace {

class CpuErrors : public ::testing::Test {
 protected:
  const HostMatrix<float> base = random_matrix(100, 8, 1), queries = random_matrix(3, 8, 2);
  SearchParams params() const {
    SearchParams p;
    p.k = 5;
    p.backend = Backend::Cpu;
    return p;
  }
};

TEST_F(CpuErrors, GemmWithNonGemmMetricIsUnsupported) {
  for (Metric m : {Metric::L1, Metric::Linf, Metric::Lp}) {
    SearchParams p = params();
    p.metric = m;
    p.distance = DistanceAlgorithm::Gemm;
    expect_error([&] { search(base.view(), queries.view(), p); }, ErrorCode::Unsupported, {"gemm", to_string(m)});
  }
}

TEST_F(CpuErrors, CudaOnlyDistanceIsUnsupported) {
  for (DistanceAlgorithm d :
       {DistanceAlgorithm::Naive, DistanceAlgorithm::SharedReduce, DistanceAlgorithm::Atomic,
        DistanceAlgorithm::GarciaGlobal, DistanceAlgorithm::GarciaTexture, DistanceAlgorithm::Cublas}) {
    SearchParams p = params();
    p.distance = d;
    expect_error([&] { search(base.view(), queries.view(), p); }, ErrorCode::Unsupported, {to_string(d), "cpu"});
  }
}

TEST_F(CpuErrors, CudaOnlySelectionIsUnsupported) {
  for (SelectAlgorithm s : all_select_algorithms()) {
    if (s == SelectAlgorithm::Sort || s == SelectAlgorithm::Heap || s == SelectAlgorithm::Quickselect) continue;
    SearchParams p = params();
    p.select = s;
    expect_error([&] { search(base.view(), queries.view(), p); }, ErrorCode::Unsupported, {to_string(s), "cpu"});
    // Reference ignores the selection, but a selection the backend lacks is still refused.
    p.distance = DistanceAlgorithm::Reference;
    expect_error([&] { search(base.view(), queries.view(), p); }, ErrorCode::Unsupported, {to_string(s)});
    SelectParams sp;
    sp.backend = Backend::Cpu;
    sp.algorithm = s;
    expect_error([&] { select_k(base.view(), nullptr, 3, Order::Ascending, sp); }, ErrorCode::Unsupported,
                 {to_string(s)});
  }
}

TEST_F(CpuErrors, NegativeSelectThreadsIsInvalid) {
  SelectParams sp;
  sp.backend = Backend::Cpu;
  sp.threads = -1;
  expect_error([&] { select_k(base.view(), nullptr, 3, Order::Ascending, sp); }, ErrorCode::InvalidArgument,
               {"threads"});
}

TEST(CpuAlgorithms, ListsMatchTheContract) {
  using D = DistanceAlgorithm;
  for (Metric m : {Metric::SquaredL2, Metric::L2, Metric::InnerProduct, Metric::Cosine})
    EXPECT_EQ(distance_algorithms(Backend::Cpu, m), (std::vector<D>{D::Reference, D::Direct, D::Gemm})) << to_string(m);
  for (Metric m : {Metric::L1, Metric::Linf, Metric::Lp})
    EXPECT_EQ(distance_algorithms(Backend::Cpu, m), (std::vector<D>{D::Reference, D::Direct})) << to_string(m);
  const std::vector<SelectCapability> s = select_algorithms(Backend::Cpu);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].algorithm, SelectAlgorithm::Sort);
  EXPECT_EQ(s[1].algorithm, SelectAlgorithm::Heap);
  EXPECT_EQ(s[2].algorithm, SelectAlgorithm::Quickselect);
  for (const SelectCapability& c : s) EXPECT_EQ(c.max_k, INT64_MAX);
}

TEST_F(CpuErrors, SelectNamesTheFirstNaN) {
  SelectParams sp;
  sp.backend = Backend::Cpu;
  for (int64_t rows : {int64_t(4), int64_t(700)}) {  // 700 x 1000 values: the threaded scan
    HostMatrix<float> values = random_matrix(rows, 1000, 5);
    values.row(rows - 1)[17] = NAN;
    values.row(2)[999] = NAN;
    values.row(2)[5] = NAN;
    for (Order order : {Order::Ascending, Order::Descending})
      expect_error([&] { select_k(values.view(), nullptr, 3, order, sp); }, ErrorCode::InvalidArgument,
                   {"row 2 column 5 is NaN"});
  }
}

}  // namespace
}  // namespace gknn::testing
