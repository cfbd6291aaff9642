// host_array_test: gknn::HostArray (include/gknn/host_array.hpp), the storage of a Result: std::vector's
// behaviour where a result is used (value-initialised sizes, copies, comparison and conversion with
// std::vector), and for_overwrite, which leaves the values to their producer.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "gknn/types.hpp"

namespace gknn {
namespace {

TEST(HostArray, SizesAreValueInitialisedLikeStdVector) {
  HostArray<float> a(5);
  EXPECT_EQ(a, std::vector<float>(5, 0.f));
  a.resize(8, 2.f);
  EXPECT_EQ(a, (std::vector<float>{0, 0, 0, 0, 0, 2, 2, 2}));
  a.resize(2);
  a.resize(4);
  EXPECT_EQ(a, (std::vector<float>{0, 0, 0, 0}));
  HostArray<int64_t> b(3, -1);
  EXPECT_EQ(b, (std::vector<int64_t>{-1, -1, -1}));
  b.assign(2, 7);
  EXPECT_EQ(b, (std::vector<int64_t>{7, 7}));
}

TEST(HostArray, ForOverwriteHasTheSizeAndTakesEveryWrite) {
  HostArray<int64_t> a = HostArray<int64_t>::for_overwrite(100000);
  ASSERT_EQ(a.size(), 100000u);
  std::iota(a.begin(), a.end(), int64_t(0));
  EXPECT_EQ(a.front(), 0);
  EXPECT_EQ(a.back(), 99999);
  EXPECT_EQ(HostArray<float>::for_overwrite(0).size(), 0u);
}

TEST(HostArray, ComparesConvertsAndAssignsWithStdVector) {
  const std::vector<int64_t> v{3, 1, 2};
  HostArray<int64_t> a = v;
  EXPECT_EQ(a, v);
  EXPECT_EQ(v, a);
  EXPECT_NE(a, (std::vector<int64_t>{3, 1}));
  std::vector<int64_t> back = a;
  EXPECT_EQ(back, v);
  a = std::vector<int64_t>{9};
  EXPECT_EQ(a, std::vector<int64_t>{9});
  a = {4, 5};
  EXPECT_EQ(a, (HostArray<int64_t>{4, 5}));
  a.assign(v.begin(), v.end());
  EXPECT_EQ(a, v);
}

TEST(HostArray, CopiesMovesAndGrows) {
  HostArray<float> a;
  EXPECT_TRUE(a.empty());
  for (int i = 0; i < 1000; ++i) a.push_back(static_cast<float>(i));
  ASSERT_EQ(a.size(), 1000u);
  EXPECT_EQ(a[999], 999.f);
  HostArray<float> copy = a;
  EXPECT_EQ(copy, a);
  const float* storage = a.data();
  HostArray<float> moved = std::move(a);
  EXPECT_EQ(moved.data(), storage);  // the storage moves, no copy
  EXPECT_TRUE(a.empty());             // NOLINT: a moved-from array is empty
  a = copy;
  EXPECT_EQ(a, moved);
  a.clear();
  EXPECT_TRUE(a.empty());
  a.swap(moved);
  EXPECT_EQ(a.size(), 1000u);
  EXPECT_THROW((void)a.at(1000), std::out_of_range);
  EXPECT_EQ(a.at(10), 10.f);
}

TEST(HostArray, ResultKeepsItsAggregateForm) {
  Result r{2, 1, {0.5f, 1.5f}, {7, 3}};
  EXPECT_EQ(r.distance(1, 0), 1.5f);
  EXPECT_EQ(r.index(0, 0), 7);
  Result empty{0, 4, {}, {}};
  EXPECT_TRUE(empty.indices.empty());
}

}  // namespace
}  // namespace gknn
