// cpu_plan_test.cpp: the tile planner keeps one thread's working set within memory_budget / threads.
#include <gtest/gtest.h>
#include <omp.h>

#include "cpu/plan.hpp"

namespace gknn::detail::cpu {
namespace {

TEST(CpuPlan, FitsTheBudgetWheneverTheSmallestPlanDoes) {
  for (DistanceAlgorithm d : {DistanceAlgorithm::Direct, DistanceAlgorithm::Gemm})
    for (SelectAlgorithm s : {SelectAlgorithm::Sort, SelectAlgorithm::Heap, SelectAlgorithm::Quickselect})
      for (int64_t n : {1, 17, 1000, 100000})
        for (int64_t q : {1, 3, 1000})
          for (int threads : {1, 2, 16})
            for (size_t budget : {size_t(1), size_t(100000), size_t(4) << 20, size_t(0)}) {
              const SearchShape shape{n, q, 96, std::min<int64_t>(n, 100), d, s};
              const TilePlan plan = make_plan(shape, budget, threads);
              SCOPED_TRACE(::testing::Message() << to_string(d) << " " << to_string(s) << " n=" << n << " q=" << q
                                                << " threads=" << threads << " budget=" << budget);
              EXPECT_GE(plan.query_block, 1);
              EXPECT_LE(plan.query_block, std::max<int64_t>(q, 1));
              EXPECT_EQ(plan.tile_rows % 16, 0);
              EXPECT_GE(plan.tile_rows, 16);
              EXPECT_GE(plan.base_parts, 1);
              const int slots = std::max(threads, omp_get_num_procs());
              EXPECT_LE(plan.base_parts, omp_get_num_procs());
              TilePlan smallest = plan;
              smallest.query_block = 1;
              smallest.tile_rows = 16;
              const int64_t per_thread = int64_t(budget ? budget : kDefaultMemoryBudget) / slots;
              if (thread_bytes(shape, smallest) <= per_thread) {
                EXPECT_LE(thread_bytes(shape, plan), per_thread);
              }
            }
}

TEST(CpuPlan, CutsDoNotDependOnThreadsWhenTheBudgetAllows) {
  const SearchShape shape{50000, 777, 64, 10, DistanceAlgorithm::Gemm, SelectAlgorithm::Heap};
  const TilePlan one = make_plan(shape, 0, 1);
  for (int threads : {2, 3, 8, 64}) {
    const TilePlan many = make_plan(shape, 0, threads);
    EXPECT_EQ(one.query_block, many.query_block);
    EXPECT_EQ(one.tile_rows, many.tile_rows);
    EXPECT_EQ(one.base_parts, many.base_parts);
  }
}

TEST(CpuPlan, FewQueriesSplitTheBase) {
  const TilePlan plan = make_plan({100000, 1, 128, 10, DistanceAlgorithm::Gemm, SelectAlgorithm::Heap}, 0, 2);
  EXPECT_GE(plan.base_parts, 2);
  const TilePlan many = make_plan({100000, 1000, 128, 10, DistanceAlgorithm::Gemm, SelectAlgorithm::Heap}, 0, 2);
  EXPECT_EQ(many.base_parts, 1);
  EXPECT_EQ(many.query_blocks(1000) % std::max(2, omp_get_num_procs()), 0);  // balanced over the threads
}

}  // namespace
}  // namespace gknn::detail::cpu
