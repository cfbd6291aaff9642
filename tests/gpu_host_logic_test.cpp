// gpu_host_logic_test.cpp: the index logic of CUDA kernels that is plain host/device code, checked on the CPU
// (label cpu, so CI without a GPU runs it): the merge-path pick of the tile merge, and the bounded insertion
// step of the insertion selector, against std::sort in the total order (ties, -0.0, infinities, user labels);
// the row split of bits (the single-query path); the k-bucket mechanism of the selection families.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/order.hpp"
#include "cuda/pipeline/merge_path.hpp"
#include "cuda/select/bits/tuning.hpp"
#include "cuda/select/buckets.hpp"
#include "cuda/select/insertion/insert_bounded.hpp"

namespace gknn::detail::cuda {
namespace {

struct Pair {
  float key;
  int64_t label;
};

bool before(const Pair& a, const Pair& b) { return detail::ranks_before(a.key, a.label, b.key, b.label); }

float tricky_key(std::mt19937& rng) {
  const int v = std::uniform_int_distribution<int>(0, 9)(rng);
  if (v == 0) return INFINITY;
  if (v == 1) return -INFINITY;
  if (v == 2) return -0.0f;
  if (v == 3) return 0.0f;
  return float(v % 4);  // many ties
}

TEST(MergePath, PicksTheMergeOfTwoSortedListsAtEveryPosition) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 2000; ++trial) {
    const int a_len = std::uniform_int_distribution<int>(0, 17)(rng);
    const int b_len = std::uniform_int_distribution<int>(0, 17)(rng);
    std::vector<int64_t> labels(size_t(a_len + b_len));
    std::iota(labels.begin(), labels.end(), 100);
    std::shuffle(labels.begin(), labels.end(), rng);  // disjoint labels in any order
    std::vector<Pair> a, b;
    for (int i = 0; i < a_len + b_len; ++i) (i < a_len ? a : b).push_back({tricky_key(rng), labels[size_t(i)]});
    std::sort(a.begin(), a.end(), before);
    std::sort(b.begin(), b.end(), before);
    std::vector<Pair> want(a);
    want.insert(want.end(), b.begin(), b.end());
    std::sort(want.begin(), want.end(), before);
    std::vector<float> ak, bk;
    std::vector<int64_t> al, bl;
    for (const Pair& p : a) ak.push_back(p.key), al.push_back(p.label);
    for (const Pair& p : b) bk.push_back(p.key), bl.push_back(p.label);
    for (int64_t j = 0; j < a_len + b_len; ++j) {
      const MergePick pick = merge_path_pick(ak.data(), al.data(), a_len, bk.data(), bl.data(), b_len, j);
      const int64_t got = pick.from_a ? al[size_t(pick.index)] : bl[size_t(pick.index)];
      ASSERT_EQ(want[size_t(j)].label, got) << "trial " << trial << " position " << j << " of " << a_len << "+" << b_len;
    }
  }
}

TEST(InsertBounded, KeepsTheKBestInTotalOrder) {
  std::mt19937 rng(2);
  const int64_t step = 3;  // entries interleaved like the kernel's k x rows layout
  for (int trial = 0; trial < 500; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 60)(rng);
    const int64_t k = std::uniform_int_distribution<int>(1, n + 2)(rng);
    std::vector<Pair> row;
    for (int i = 0; i < n; ++i) row.push_back({tricky_key(rng), int64_t(1000 - 7 * i)});  // labels descend
    std::vector<float> keys(size_t(k * step), NAN);
    std::vector<int64_t> labels(size_t(k * step), -1);
    int64_t len = 0;
    for (const Pair& p : row) len = insert_bounded(keys.data(), labels.data(), step, len, k, p.key, p.label);
    std::sort(row.begin(), row.end(), before);
    ASSERT_EQ(std::min<int64_t>(k, n), len);
    for (int64_t i = 0; i < len; ++i) {
      ASSERT_EQ(row[size_t(i)].label, labels[size_t(i * step)]) << "trial " << trial << " rank " << i;
      ASSERT_TRUE(row[size_t(i)].key == keys[size_t(i * step)]);
    }
  }
}

TEST(BitsSplit, OnlyFewRowsAreSpreadOverTheDevice) {
  EXPECT_EQ(bits_tuning::split_parts(1, int64_t{1} << 27, 32, 132), 528);  // 4 blocks per SM
  EXPECT_EQ(bits_tuning::split_parts(1, 20000, 32, 132), 2);                // segments of at least 8192 keys
  EXPECT_EQ(bits_tuning::split_parts(1, 5000, 32, 132), 1);
  EXPECT_EQ(bits_tuning::split_parts(131, 8192, 2048, 132), 1);            // 8 * k > row
  EXPECT_EQ(bits_tuning::split_parts(132, int64_t{1} << 27, 32, 132), 1);  // a block per SM already
  EXPECT_EQ(bits_tuning::split_parts(1024, int64_t{1} << 20, 128, 132), 1);
}

TEST(Buckets, EveryKGoesToTheSmallestBucketThatHoldsIt) {
  using List = BucketList<32, 128, 1024>;
  static_assert(List::count == 3 && List::largest == 1024);
  for (int64_t k : {1, 31, 32, 33, 127, 128, 129, 1000, 1024}) {
    int called = 0;
    with_bucket(List{}, k, "test", [&](auto bucket) { called = decltype(bucket)::value; });
    EXPECT_EQ(called, List::smallest_at_least(k)) << "k = " << k;
    EXPECT_GE(called, k);
    for (int b : List::values) {
      if (b >= k) {
        EXPECT_LE(called, b) << "k = " << k;
      }
    }
  }
  try {
    with_bucket(List{}, 1025, "test_family", [](auto) { FAIL() << "called beyond the largest bucket"; });
    FAIL() << "k above the largest bucket was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("test_family"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gknn::detail::cuda
