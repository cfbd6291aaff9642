// cpu_output_test.cpp: results written into caller storage on the CPU backend (issue 21): identical to the
// Result form (padding, ids, every metric), a clear error for storage of the wrong shape, misaligned storage,
// and device memory without the cuda backend. Label cpu.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "gknn/error.hpp"
#include "gknn/index.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"
#include "testing/oracle.hpp"

namespace gknn::testing {
namespace {

SearchParams cpu_params(int64_t k, Metric metric = Metric::SquaredL2) { return params_for(Backend::Cpu, k, metric); }

TEST(CpuOutput, CallerStorageEqualsResult) {
  const HostMatrix<float> base = integer_matrix(500, 12, -3, 3, 1), queries = integer_matrix(23, 12, -3, 3, 2);
  for (Metric m : {Metric::SquaredL2, Metric::L2, Metric::InnerProduct, Metric::Cosine, Metric::Linf}) {
    for (int64_t k : {int64_t(1), int64_t(40), int64_t(600)}) {
      const SearchParams p = cpu_params(k, m);
      const Result want = search(base.view(), queries.view(), p);
      std::vector<float> d(size_t(queries.rows * k), -9.f);
      std::vector<int64_t> i(size_t(queries.rows * k), -9);
      SearchStats stats;
      SearchParams timed = p;
      timed.stats = &stats;
      search(base.view(), queries.view(), timed, ResultView{d.data(), i.data(), queries.rows, k});
      EXPECT_EQ(want.distances, d) << to_string(m) << " k=" << k;
      EXPECT_EQ(want.indices, i) << to_string(m) << " k=" << k;
      EXPECT_GT(stats.total_ms, 0.0);
      EXPECT_GT(stats.check_ms, 0.0);  // the host phases before the backend's work
      EXPECT_LE(stats.check_ms, stats.total_ms);
      // What ran: Auto resolved as explain_search resolves it (a one-shot search plans alike).
      const SearchPlan plan = explain_search(base.view(), queries.view(), p);
      EXPECT_EQ(stats.distance_algorithm, plan.distance) << to_string(m) << " k=" << k;
      EXPECT_EQ(stats.select_algorithm, plan.select) << to_string(m) << " k=" << k;
    }
  }
}

TEST(CpuOutput, IndexWithIdsIntoCallerStorage) {
  const HostMatrix<float> base = integer_matrix(300, 6, 0, 4, 3), queries = integer_matrix(9, 6, 0, 4, 4);
  std::vector<int64_t> ids(size_t(base.rows));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 50 + 3 * int64_t(i);
  Index index(6, Metric::SquaredL2, Backend::Cpu);
  index.add_with_ids(base.view(), ids.data());
  const Result want = index.search(queries.view(), 400);  // k > n: padding keeps -1
  std::vector<float> d(size_t(9 * 400));
  std::vector<int64_t> i(size_t(9 * 400));
  index.search(queries.view(), cpu_params(400), ResultView{d.data(), i.data(), 9, 400});
  EXPECT_EQ(want.distances, d);
  EXPECT_EQ(want.indices, i);
  EXPECT_EQ(-1, i[399]);
  EXPECT_EQ(50, *std::min_element(want.indices.begin(), want.indices.begin() + 300));
}

TEST(CpuOutput, BadStorageIsAClearError) {
  const HostMatrix<float> base = random_matrix(50, 4, 5), queries = random_matrix(3, 4, 6);
  std::vector<float> d(12);
  std::vector<int64_t> i(12);
  const SearchParams p = cpu_params(4);
  EXPECT_THROW(search(base.view(), queries.view(), p, ResultView{d.data(), i.data(), 2, 4}), Error);
  EXPECT_THROW(search(base.view(), queries.view(), p, ResultView{nullptr, i.data(), 3, 4}), Error);
  std::vector<char> raw(200);
  auto* misaligned = reinterpret_cast<int64_t*>(raw.data() + 3);
  EXPECT_THROW(search(base.view(), queries.view(), p, ResultView{d.data(), misaligned, 3, 4}), Error);
  EXPECT_THROW(search(base.view(), queries.view(), p, ResultView{d.data(), i.data(), 3, 4, Memory::Device}), Error);
  FloatView device_base = base.view();
  device_base.memory = Memory::Device;
  EXPECT_THROW(search(device_base, queries.view(), p), Error);
}

}  // namespace
}  // namespace gknn::testing
