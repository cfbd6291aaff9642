// gpu_plan_test.cpp: the measured plan table on the CUDA backend: a row for this device near the search's cell
// makes Auto (and explain_search) take its pair, with the reason naming the row (a forced half takes the other only
// from a row measured with it); a row of another device, another data kind or too far away leaves the rules; the
// results stay those of the rules (the oracle's, on integer data).
// Its own binary: the table is read once per process, from $GKNN_PLAN_TABLE set before the first search.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gknn/info.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"

namespace gknn::testing {
namespace {

class GpuPlanTable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::vector<DeviceInfo> devices = cuda_devices();
    if (devices.empty()) return;
    path_ = ::testing::TempDir() + "gknn_gpu_plan_table.csv";
    std::ofstream out(path_);
    const std::string device = devices.front().name;
    out << plan_table_header() << "\n"
        // integer data, 2000 x 32 base, 300 queries, k = 10: garcia_global + warp_select (not what the rules take)
        << plan_table_row(device, Metric::SquaredL2, true, 2000, 300, 32, 10, DistanceAlgorithm::GarciaGlobal,
                          SelectAlgorithm::WarpSelect, 1.0)
        << "\n"
        // integer data, 90000 x 32 base, 100 queries, k = 7: the fused kernel, its selection `auto` (it selects
        // itself; a fallback would leave the selection to the rules)
        << plan_table_row(device, Metric::SquaredL2, true, 90000, 100, 32, 7, DistanceAlgorithm::Fused,
                          SelectAlgorithm::Auto, 1.0)
        << "\n"
        // the same cell for another device name: never taken here
        << plan_table_row("NoSuchGpu", Metric::L1, false, 2000, 300, 32, 10, DistanceAlgorithm::Naive,
                          SelectAlgorithm::Sort, 1.0)
        << "\n";
    out.close();
    ::setenv("GKNN_PLAN_TABLE", path_.c_str(), 1);
  }
  static void TearDownTestSuite() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  static inline std::string path_;
};

SearchParams cuda_params(int64_t k, Metric metric = Metric::SquaredL2) { return params_for(Backend::Cuda, k, metric); }

TEST_F(GpuPlanTable, AutoTakesTheMeasuredRowAndStaysExact) {
  const HostMatrix<float> base = integer_matrix(2500, 32, 0, 40, 1), queries = integer_matrix(250, 32, 0, 40, 2);
  const SearchParams p = cuda_params(10);
  const SearchPlan plan = explain_search(base.view(), queries.view(), p);
  EXPECT_EQ(plan.distance, DistanceAlgorithm::GarciaGlobal) << plan.distance_reason;
  EXPECT_EQ(plan.select, SelectAlgorithm::WarpSelect) << plan.select_reason;
  EXPECT_NE(plan.distance_reason.find("measured: fastest at n=2000, q=300, d=32, k=10"), std::string::npos)
      << plan.distance_reason;
  EXPECT_NE(plan.select_reason.find("gknn_gpu_plan_table.csv line 2"), std::string::npos) << plan.select_reason;
  CheckOptions exact;
  exact.exact_indices = true;
  EXPECT_EQ("", check_search(search(base.view(), queries.view(), p), base.view(), queries.view(), p, exact));
}

// A row whose selection is `auto` (the fused kernel's) is taken for its distance; the selection is none (the kernel
// keeps the top k), not the table's, and the results are the oracle's.
TEST_F(GpuPlanTable, AFusedRowWithoutASelectionIsTaken) {
  const HostMatrix<float> base = integer_matrix(90000, 32, 0, 255, 5), queries = integer_matrix(100, 32, 0, 255, 6);
  const SearchParams p = cuda_params(7);
  const SearchPlan plan = explain_search(base.view(), queries.view(), p);
  EXPECT_EQ(plan.distance, DistanceAlgorithm::Fused) << plan.distance_reason;
  EXPECT_NE(plan.distance_reason.find("measured: fastest at n=90000, q=100, d=32, k=7"), std::string::npos)
      << plan.distance_reason;
  EXPECT_TRUE(plan.selects_itself) << plan.select_reason;
  CheckOptions exact;
  exact.exact_indices = true;
  EXPECT_EQ("", check_search(search(base.view(), queries.view(), p), base.view(), queries.view(), p, exact));
}

TEST_F(GpuPlanTable, ExplicitChoicesAndOtherCellsKeepTheRules) {
  const HostMatrix<float> base = integer_matrix(2500, 32, 0, 40, 3), queries = integer_matrix(250, 32, 0, 40, 4);
  SearchParams p = cuda_params(10);
  // A requested distance is kept; the row's selection was measured behind garcia_global, so it comes with that
  // distance only (plan::pairs_with), and behind cuBLAS the rules choose.
  p.distance = DistanceAlgorithm::GarciaGlobal;
  SearchPlan plan = explain_search(base.view(), queries.view(), p);
  EXPECT_EQ(plan.distance_reason, "requested");
  EXPECT_EQ(plan.select, SelectAlgorithm::WarpSelect) << plan.select_reason;
  EXPECT_NE(plan.select_reason.find("measured"), std::string::npos) << plan.select_reason;
  p.distance = DistanceAlgorithm::Cublas;
  plan = explain_search(base.view(), queries.view(), p);
  EXPECT_EQ(plan.distance, DistanceAlgorithm::Cublas);
  EXPECT_EQ(plan.select_reason.find("measured"), std::string::npos) << plan.select_reason;
  // float data, k 8x larger, or another metric class: no row applies.
  const HostMatrix<float> floats = random_matrix(2500, 32, 5), float_queries = random_matrix(250, 32, 6);
  for (const SearchPlan& other : {explain_search(floats.view(), float_queries.view(), cuda_params(10)),
                                  explain_search(base.view(), queries.view(), cuda_params(80)),
                                  explain_search(base.view(), queries.view(), cuda_params(10, Metric::L1))}) {
    EXPECT_EQ(other.distance_reason.find("measured"), std::string::npos) << other.distance_reason;
    EXPECT_EQ(other.select_reason.find("measured"), std::string::npos) << other.select_reason;
  }
}

// The rules' one measured exception to the selection list (choose.cu, one_row_large_k): a single query with k >= 300
// sorts its row up to 2M keys and radix-selects it beyond; two queries, or k = 100, keep the list (bits first). No
// row of the test's table is near these cells. The results are the oracle's.
TEST_F(GpuPlanTable, OneQueryWithALargeKSortsOrRadixSelectsItsRow) {
  const HostMatrix<float> base = random_matrix(5000, 8, 7), queries = random_matrix(2, 8, 8);
  const FloatView one{queries.row(0), 1, 8, 0};
  SearchPlan plan = explain_search(base.view(), one, cuda_params(400));
  EXPECT_EQ(plan.select, SelectAlgorithm::Sort) << plan.select_reason;
  EXPECT_NE(plan.select_reason.find("one row with k = 400"), std::string::npos) << plan.select_reason;
  EXPECT_EQ(explain_search(base.view(), queries.view(), cuda_params(400)).select, SelectAlgorithm::Bits);
  EXPECT_EQ(explain_search(base.view(), one, cuda_params(100)).select, SelectAlgorithm::Bits);
  CheckOptions exact;
  exact.exact_indices = true;
  EXPECT_EQ("", check_search(search(base.view(), one, cuda_params(400)), base.view(), one, cuda_params(400), exact));
  const HostMatrix<float> long_base = random_matrix((int64_t(1) << 21) + 1000, 2, 9);
  const HostMatrix<float> long_query = random_matrix(1, 2, 10);
  plan = explain_search(long_base.view(), long_query.view(), cuda_params(400));
  EXPECT_EQ(plan.select, SelectAlgorithm::RadixSelect) << plan.select_reason;
  EXPECT_EQ("", check_search(search(long_base.view(), long_query.view(), cuda_params(400)), long_base.view(),
                             long_query.view(), cuda_params(400), exact));
}

}  // namespace
}  // namespace gknn::testing
