// host_array_test: gknn::HostArray (include/gknn/host_array.hpp), the storage of a Result: std::vector's
// behaviour where a result is used (value-initialised sizes, copies, comparison and conversion with
// std::vector), for_overwrite, which leaves the values to their producer, and adopt, a block given back by its own
// function.
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

// adopt(): a block from elsewhere goes back through its releaser exactly once, with the byte count it came with,
// whoever holds it last (moves, swaps, move assignment); a growth past it moves the contents into an ordinary
// block and gives it back at once.
struct Released {
  static inline std::vector<std::pair<void*, std::size_t>> calls;
  static void give(void* block, std::size_t bytes) noexcept { calls.emplace_back(block, bytes); }
};

TEST(HostArray, AdoptedBlockGoesBackOnceThroughItsReleaser) {
  Released::calls.clear();
  alignas(8) static int64_t block_a[16], block_b[16];
  {
    HostArray<int64_t> a = HostArray<int64_t>::adopt(block_a, 10, sizeof(block_a), &Released::give);
    EXPECT_EQ(a.data(), block_a);
    EXPECT_EQ(a.size(), 10u);
    std::iota(a.begin(), a.end(), int64_t(0));
    HostArray<int64_t> moved = std::move(a);
    EXPECT_EQ(moved.data(), block_a);
    HostArray<int64_t> b = HostArray<int64_t>::adopt(block_b, 4, 100, &Released::give);
    b.swap(moved);  // b holds block_a now, moved block_b
    EXPECT_EQ(b[9], 9);
    EXPECT_TRUE(Released::calls.empty());
    moved = HostArray<int64_t>(3);  // block_b goes back when replaced
    ASSERT_EQ(Released::calls.size(), 1u);
    EXPECT_EQ(Released::calls[0], std::make_pair(static_cast<void*>(block_b), std::size_t(100)));
    b.push_back(10);  // past its size: the contents move out, block_a goes back
    ASSERT_EQ(Released::calls.size(), 2u);
    EXPECT_EQ(Released::calls[1], std::make_pair(static_cast<void*>(block_a), sizeof(block_a)));
    EXPECT_NE(b.data(), block_a);
    ASSERT_EQ(b.size(), 11u);
    for (int64_t i = 0; i <= 10; ++i) EXPECT_EQ(b[static_cast<size_t>(i)], i);
  }
  EXPECT_EQ(Released::calls.size(), 2u);  // the ordinary blocks went to std::allocator, not the releaser
  {
    HostArray<int64_t> c = HostArray<int64_t>::adopt(block_a, 2, 16, &Released::give);
  }
  ASSERT_EQ(Released::calls.size(), 3u);
  EXPECT_EQ(Released::calls[2], std::make_pair(static_cast<void*>(block_a), std::size_t(16)));
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
