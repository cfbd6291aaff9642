// cpu_errors_test.cpp: what the CPU backend refuses, and that its messages name the algorithm and metric.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/validate.hpp"
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

// The value facts decide exact lower-precision paths: each kind of value, in short rows (scalar loop) and long rows
// (vectorised loop, threaded scan), against the IEEE comparisons they stand for.
TEST(Validation, ValueFactsOfEveryKindOfValue) {
  struct Case {
    float value;
    bool integral, nonnegative;
  };
  const Case cases[] = {{0.f, true, true},          {-0.f, true, true},          {3.f, true, true},
                        {-7.f, true, false},        {0.5f, false, true},         {-2.5f, false, false},
                        {8388607.5f, false, true},  {8388608.f, true, true},     {-16777217.f, true, false},
                        {1e30f, true, true},        {-3.4e38f, true, false},     {1e-40f, false, true},
                        {2147483648.f, true, true}, {-2147483648.f, true, false}};
  for (int64_t cols : {int64_t(1), int64_t(5), int64_t(131), int64_t(600)})
    for (int64_t rows : {int64_t(1), int64_t(900)}) {  // 900 x 600: above the threaded scan's threshold
      for (const Case& c : cases) {
        std::vector<float> m(size_t(rows * cols), 2.f);
        m[size_t((rows / 2) * cols + cols / 2)] = c.value;
        const detail::ValueStats st = detail::validate_matrix(FloatView{m.data(), rows, cols, 0}, "m", false);
        SCOPED_TRACE("value " + std::to_string(c.value) + " in " + std::to_string(rows) + "x" + std::to_string(cols));
        EXPECT_EQ(st.integral, c.integral);
        EXPECT_EQ(st.nonnegative, c.nonnegative);
        EXPECT_EQ(st.max_abs, rows * cols == 1 ? std::fabs(c.value) : std::max(2.f, std::fabs(c.value)));
      }
      std::vector<float> m(size_t(rows * cols), 1.f);
      for (float bad : {NAN, INFINITY, -INFINITY}) {
        m[size_t(rows * cols - 1)] = bad;
        const std::string row = "row " + std::to_string(rows - 1), column = "column " + std::to_string(cols - 1);
        expect_error([&] { detail::validate_matrix(FloatView{m.data(), rows, cols, 0}, "m", false); },
                     ErrorCode::InvalidArgument, {row, column});
      }
    }
}

}  // namespace
}  // namespace gknn::testing
