// large_k_emulation_test.cpp: the sorted-output stage of sample select and radix select (large_k/
// sort_output.cu) run on the host through the same host-and-device key code (large_k/ordered.cuh), with
// CUB's radix sort emulated by its contract: a stable sort by bits [begin_bit, end_bit) of the keys only.
// Runs without a GPU.
//
// Why: the first H100 run returned wrongly ordered sorted output for every large-k variant while the
// selection itself was right (user-label rows, sorted by another path, passed). The composite key put the
// ordered key at bit 32 but the sort stopped at bit 32 + column bits, so rows were ordered by the keys' low
// bits. These tests fail on that encoding.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/order.hpp"
#include "cuda/select/large_k/ordered.cuh"

namespace gknn::testing {
namespace {

using namespace gknn::cuda_detail::large_k;

uint32_t ordered_of(float f) { return ordered_from_bits(std::bit_cast<uint32_t>(f)); }
float float_of(uint32_t ordered) { return std::bit_cast<float>(bits_from_ordered(ordered)); }

/// CUB DeviceRadixSort::SortKeys' contract: stable, looks only at bits [begin_bit, end_bit). Emulated as an
/// LSD radix sort with 8-bit digits, as CUB runs it.
void emulated_cub_sort(std::vector<uint64_t>& keys, int begin_bit, int end_bit) {
  std::vector<uint64_t> tmp(keys.size());
  for (int shift = begin_bit; shift < end_bit; shift += 8) {
    const int width = std::min(8, end_bit - shift);
    const uint64_t mask = (uint64_t{1} << width) - 1;
    std::vector<size_t> start((size_t{1} << width) + 1, 0);
    for (uint64_t k : keys) ++start[((k >> shift) & mask) + 1];
    for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
    for (uint64_t k : keys) tmp[start[(k >> shift) & mask]++] = k;
    keys.swap(tmp);
  }
}

std::vector<float> make_keys(const std::string& kind, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 7);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    if (kind == "uniform") x = u(rng);
    else if (kind == "negatives") x = -u(rng);
    else if (kind == "tiny") x = std::ldexp(1.f + u(rng), -120);
    else if (kind == "many_equal") x = float(small(rng) / 2);
    else if (kind == "powers") x = std::ldexp(1.f, small(rng) * 3 - 10) * (small(rng) < 3 ? -1.f : 1.f);
    else {  // special
      const int s = small(rng);
      x = s == 0 ? INFINITY : s == 1 ? -INFINITY : s == 2 ? -0.0f : s == 3 ? 0.0f : float(s);
    }
  }
  return v;
}

struct Pair {
  float key;
  int64_t label;
};
bool before(const Pair& a, const Pair& b) {
  // -0.0 == +0.0 in the library's order, as in the ordered map
  return detail::ranks_before(a.key == 0.f ? 0.f : a.key, a.label, b.key == 0.f ? 0.f : b.key, b.label);
}

TEST(LargeKEmulation, OrderedKeysPreserveTheOrderAndRoundTrip) {
  std::vector<float> v = {-INFINITY, -3e38f, -1.f, -1e-38f, -1e-45f, 0.f, 1e-45f, 1e-38f, 1.f, 3e38f, INFINITY};
  for (size_t i = 0; i + 1 < v.size(); ++i) EXPECT_LT(ordered_of(v[i]), ordered_of(v[i + 1])) << v[i];
  EXPECT_EQ(ordered_of(-0.f), ordered_of(0.f));
  EXPECT_LT(ordered_of(INFINITY), kKeySentinel);
  for (float f : v) EXPECT_EQ(float_of(ordered_of(f)), f);
  EXPECT_EQ(std::bit_cast<uint32_t>(float_of(ordered_of(-0.f))), 0u);  // -0.0 comes back as +0.0
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1e6f, 1e6f);
  for (int i = 0; i < 100000; ++i) {
    const float a = u(rng), b = u(rng);
    EXPECT_EQ(a < b, ordered_of(a) < ordered_of(b));
    EXPECT_EQ(float_of(ordered_of(a)), a);
  }
}

TEST(LargeKEmulation, CompositeKeysFitBelowTheEndBit) {
  for (uint64_t cols : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{13}, uint64_t{3001}, uint64_t{1} << 22,
                        (uint64_t{1} << 22) + 1, uint64_t{UINT32_MAX} - 1}) {
    const int bits = composite_column_bits(cols);
    EXPECT_EQ(bits, std::bit_width(cols - 1)) << cols;
    const int end = composite_end_bit(bits);
    ASSERT_LE(end, 64);
    const uint32_t last_col = static_cast<uint32_t>(cols - 1);
    const uint64_t c = composite_key(UINT32_MAX, last_col, bits);
    EXPECT_EQ(end == 64 ? 0 : c >> end, 0u) << "bits above the sort's end bit";
    EXPECT_EQ(composite_ordered(c, bits), UINT32_MAX);
    EXPECT_EQ(composite_column(c, bits), last_col);
    const uint64_t d = composite_key(0x80000001u, 0, bits);
    EXPECT_EQ(composite_ordered(d, bits), 0x80000001u);
    EXPECT_EQ(composite_column(d, bits), 0u);
  }
}

/// The output stage of one row as sort_output.cu runs it with column labels: the k selected pairs (in the
/// unspecified order the selection leaves) -> gather -> radix sort by [0, end bit) -> scatter.
std::vector<Pair> emulate_sorted_output(std::vector<Pair> selected, int64_t cols, int64_t label_offset) {
  const int bits = composite_column_bits(static_cast<uint64_t>(cols));
  std::vector<uint64_t> composite;
  for (const Pair& p : selected)
    composite.push_back(composite_key(ordered_of(p.key), static_cast<uint32_t>(p.label - label_offset), bits));
  emulated_cub_sort(composite, 0, composite_end_bit(bits));
  std::vector<Pair> out;
  for (uint64_t c : composite)
    out.push_back({float_of(composite_ordered(c, bits)), label_offset + int64_t{composite_column(c, bits)}});
  return out;
}

TEST(LargeKEmulation, SortedOutputFollowsTheTotalOrder) {
  uint64_t seed = 7;
  for (const char* kind : {"uniform", "negatives", "tiny", "many_equal", "powers", "special"})
    for (int64_t cols : {int64_t{2}, int64_t{13}, int64_t{100}, int64_t{3001}, int64_t{50000}, int64_t{300000}}) {
      const std::vector<float> keys = make_keys(kind, cols, seed++);
      const int64_t label_offset = cols % 2 ? 1000000007 : 0;
      std::vector<Pair> all;
      for (int64_t j = 0; j < cols; ++j) all.push_back({keys[size_t(j)], label_offset + j});
      std::sort(all.begin(), all.end(), before);
      std::mt19937_64 rng(seed);
      for (int64_t k : {int64_t{2}, int64_t{7}, std::min<int64_t>(2048, cols), cols / 2, cols}) {
        if (k < 2 || k > cols) continue;
        SCOPED_TRACE(std::string(kind) + " cols=" + std::to_string(cols) + " k=" + std::to_string(k));
        std::vector<Pair> selected(all.begin(), all.begin() + k);
        std::shuffle(selected.begin(), selected.end(), rng);
        const std::vector<Pair> got = emulate_sorted_output(selected, cols, label_offset);
        ASSERT_EQ(got.size(), size_t(k));
        for (int64_t r = 0; r < k; ++r) {
          const Pair& want = all[size_t(r)];
          ASSERT_TRUE(got[size_t(r)].key == want.key && got[size_t(r)].label == want.label)
              << "rank " << r << ": got (" << got[size_t(r)].key << ", " << got[size_t(r)].label << "), expected ("
              << want.key << ", " << want.label << ")";
        }
      }
    }
}

}  // namespace
}  // namespace gknn::testing
