// large_k_emulation_test.cpp: the sorted-output stage of sample select and radix select (the composite-key path
// of primitives/row_sort.cu) run on the host through the same host-and-device key code (primitives/ordered.cuh), with
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
#include "cuda/primitives/ordered.cuh"

namespace gknn::testing {
namespace {

using namespace gknn::detail::cuda;

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

/// The output stage of one row as row_sort.cu runs it with column labels: the k selected pairs (in the
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

// ---- the column-label path end to end, rows chunked as row_sort.cu chunks them --------------------
//
// Second H100 run: the failures were identical, message for message, to the first run. Emulating the OLD
// encoding (key << 32, end bit 32 + column bits) on gpu_large_k's data sets reproduces every one of those
// messages exactly, and the current encoding passes them all: that run still executed the old binary.
// These tests pin both facts on the CPU: the current encoding sorts those very data sets, and the emulation
// does catch the old one (so a passing run here means something).

/// cub::DoubleBuffer as CUB uses it: the sort ping-pongs between the two buffers, one pass per 8-bit digit,
/// and leaves the result wherever the selector ends up; only Current() is valid afterwards.
struct EmulatedDoubleBuffer {
  std::vector<uint64_t> buffer[2];
  int selector = 0;
  std::vector<uint64_t>& current() { return buffer[selector]; }
};

/// DeviceSegmentedRadixSort::SortKeys' contract on segments [offsets[s], offsets[s+1]): stable, bits
/// [begin_bit, end_bit) only, result in d_keys.Current().
void emulated_cub_segmented_sort(EmulatedDoubleBuffer& d_keys, const std::vector<int>& offsets, int begin_bit,
                                 int end_bit) {
  for (int shift = begin_bit; shift < end_bit; shift += 8) {
    const int width = std::min(8, end_bit - shift);
    const uint64_t mask = (uint64_t{1} << width) - 1;
    const std::vector<uint64_t>& in = d_keys.buffer[d_keys.selector];
    std::vector<uint64_t>& out = d_keys.buffer[d_keys.selector ^ 1];
    for (size_t s = 0; s + 1 < offsets.size(); ++s) {
      std::vector<size_t> start((size_t{1} << width) + 1, size_t(offsets[s]));
      for (int i = offsets[s]; i < offsets[s + 1]; ++i) ++start[((in[size_t(i)] >> shift) & mask) + 1];
      for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1] - size_t(offsets[s]);
      for (int i = offsets[s]; i < offsets[s + 1]; ++i) out[start[(in[size_t(i)] >> shift) & mask]++] = in[size_t(i)];
    }
    d_keys.selector ^= 1;
  }
}

/// A composite-key encoding: how gather packs (ordered key, column), the sort's end bit, how scatter unpacks.
struct Encoding {
  uint64_t (*pack)(uint32_t ordered, uint32_t column, int column_bits);
  int (*end_bit)(int column_bits);
  uint32_t (*ordered)(uint64_t composite, int column_bits);
  uint32_t (*column)(uint64_t composite, int column_bits);
};
const Encoding kCurrent{composite_key, composite_end_bit, composite_ordered, composite_column};
/// The first version: key at bit 32, sort ending at 32 + column bits (orders by the key's LOW bits).
const Encoding kFirstVersion{
    [](uint32_t o, uint32_t c, int) { return (uint64_t{o} << 32) | c; }, [](int bits) { return 32 + bits; },
    [](uint64_t c, int) { return static_cast<uint32_t>(c >> 32); },
    [](uint64_t c, int) { return static_cast<uint32_t>(c & 0xFFFFFFFFu); }};

/// row_sort.cu with column labels on a chunk of rows: the selection's output rows (stride out_stride,
/// k pairs each, labels = label_offset + column) -> gather (row r to [r*k, r*k + k)) -> segmented sort ->
/// scatter from Current() back into the output rows.
void emulate_sort_output_chunk(std::vector<float>& keys, std::vector<int64_t>& labels, int64_t rows,
                               int64_t out_stride, int64_t cols, int64_t k, int64_t label_offset, const Encoding& e) {
  const int bits = composite_column_bits(static_cast<uint64_t>(cols));
  EmulatedDoubleBuffer d;
  d.buffer[0].resize(size_t(rows * k));
  d.buffer[1].assign(size_t(rows * k), 0xDEADBEEFDEADBEEFull);  // the alternate buffer must never be read
  std::vector<int> offsets;
  for (int64_t r = 0; r <= rows; ++r) offsets.push_back(static_cast<int>(r * k));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const size_t src = size_t(r * out_stride + j);
      d.buffer[0][size_t(r * k + j)] =
          e.pack(ordered_of(keys[src]), static_cast<uint32_t>(labels[src] - label_offset), bits);
    }
  emulated_cub_segmented_sort(d, offsets, 0, e.end_bit(bits));
  const std::vector<uint64_t>& sorted = d.current();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const uint64_t c = sorted[size_t(r * k + j)];
      keys[size_t(r * out_stride + j)] = float_of(e.ordered(c, bits));
      labels[size_t(r * out_stride + j)] = label_offset + int64_t{e.column(c, bits)};
    }
}

/// gpu_large_k's generator (same kinds, seeds and draw order), so the data sets are the ones the H100 ran.
std::vector<float> gpu_test_rows(const std::string& kind, int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 7);
  for (float& x : v) {
    if (kind == "uniform") x = u(rng);
    else if (kind == "many_equal") x = float(small(rng) / 2);
    else if (kind == "negatives") x = -u(rng);
    else if (kind == "powers") x = std::ldexp(1.f, small(rng) * 3 - 10) * (small(rng) < 3 ? -1.f : 1.f);
    else {  // special
      const int s = small(rng);
      x = s == 0 ? INFINITY : s == 1 ? -INFINITY : s == 2 ? -0.0f : s == 3 ? 0.0f : float(s);
    }
  }
  return v;
}

/// Runs the emulated selection output + sort on the first `rows` rows of a data set; "" when every row is the
/// sorted prefix of the total order, else the first mismatch (in gpu_large_k's words).
std::string emulated_sorted_select(const std::vector<float>& data, int64_t rows, int64_t cols, int64_t k,
                                   int64_t label_offset, const Encoding& e, uint64_t seed) {
  const int64_t out_stride = k + 3;  // as gpu_large_k: the output stride differs from k
  std::vector<float> keys(size_t(rows * out_stride), NAN);
  std::vector<int64_t> labels(size_t(rows * out_stride), -1);
  std::vector<std::vector<Pair>> want(static_cast<size_t>(rows));
  std::mt19937_64 rng(seed);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<Pair> all;
    for (int64_t j = 0; j < cols; ++j) all.push_back({data[size_t(r * cols + j)], label_offset + j});
    std::sort(all.begin(), all.end(), before);
    std::vector<Pair> selected(all.begin(), all.begin() + k);  // the right set, in a scrambled order
    std::shuffle(selected.begin(), selected.end(), rng);
    for (int64_t j = 0; j < k; ++j) {
      keys[size_t(r * out_stride + j)] = selected[size_t(j)].key;
      labels[size_t(r * out_stride + j)] = selected[size_t(j)].label;
    }
    want[size_t(r)].assign(all.begin(), all.begin() + k);
  }
  emulate_sort_output_chunk(keys, labels, rows, out_stride, cols, k, label_offset, e);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const Pair got{keys[size_t(r * out_stride + j)], labels[size_t(r * out_stride + j)]};
      const Pair& w = want[size_t(r)][size_t(j)];
      const bool same_key = got.key == w.key;  // -0.0 comes back as +0.0: equal
      if (!same_key || got.label != w.label)
        return "row " + std::to_string(r) + " rank " + std::to_string(j) + ": got (" + std::to_string(got.key) + ", " +
               std::to_string(got.label) + "), expected (" + std::to_string(w.key) + ", " +
               std::to_string(w.label) + ")";
    }
  return "";
}

/// Data sets (generator, seed, k) on which the H100 returned wrongly sorted output, emulated on a few rows.
struct FailedOnTheGpu {
  const char* kind;
  int64_t rows, cols;  ///< the GPU test's shape (rows: as many as generated; emulated: at most 3)
  uint64_t seed;
  int64_t k;
};
const FailedOnTheGpu kFailedOnTheGpu[] = {
    {"many_equal", 130, 2, 42, 2},        {"many_equal", 130, 100, 140, 50},  {"many_equal", 130, 5000, 5040, 2048},
    {"uniform", 300, 50000, 31, 2048},    {"powers", 160, 30000, 27, 2048},   {"negatives", 160, 30000, 29, 2048},
    {"special", 160, 30000, 31, 4096},    {"many_equal", 160, 30000, 23, 15000},
};

TEST(LargeKEmulation, ColumnLabelPathSortsTheRowsTheGpuGotWrong) {
  for (const FailedOnTheGpu& f : kFailedOnTheGpu) {
    const int64_t rows = 3;  // rows 0..2 of the GPU data set: a chunk of several segments
    // The GPU test's rows 0..2 (its pad = 5 for uniform_300x50000 changes the layout, not the values).
    const std::vector<float> data = gpu_test_rows(f.kind, rows, f.cols, f.seed);
    for (int64_t label_offset : {int64_t{0}, int64_t{1000000007}}) {
      SCOPED_TRACE(std::string(f.kind) + "_" + std::to_string(f.rows) + "x" + std::to_string(f.cols) +
                   " k=" + std::to_string(f.k) + " offset=" + std::to_string(label_offset));
      EXPECT_EQ("", emulated_sorted_select(data, rows, f.cols, f.k, label_offset, kCurrent, f.seed));
    }
  }
}

TEST(LargeKEmulation, TheEmulationCatchesTheFirstEncoding) {
  for (const FailedOnTheGpu& f : kFailedOnTheGpu) {
    SCOPED_TRACE(std::string(f.kind) + " cols=" + std::to_string(f.cols) + " k=" + std::to_string(f.k));
    const std::vector<float> data = gpu_test_rows(f.kind, 1, f.cols, f.seed);
    EXPECT_NE("", emulated_sorted_select(data, 1, f.cols, f.k, 0, kFirstVersion, f.seed));
  }
}

TEST(LargeKEmulation, SortResultIsReadFromTheCurrentBuffer) {
  // Two columns: 33 key bits -> 5 digit passes, so the result ends in the alternate buffer. +1 and -1 differ
  // only in the top (33rd) bit after the packing, so the buffer the gather wrote still holds them unsorted:
  // a scatter reading it instead of Current() would return +1 first.
  EmulatedDoubleBuffer d;
  d.buffer[0] = {composite_key(ordered_of(1.f), 0, 1), composite_key(ordered_of(-1.f), 1, 1)};
  d.buffer[1].assign(2, 0);
  emulated_cub_segmented_sort(d, {0, 2}, 0, composite_end_bit(1));
  EXPECT_EQ(d.selector, 1);
  EXPECT_EQ(float_of(composite_ordered(d.current()[0], 1)), -1.f);
  EXPECT_EQ(float_of(composite_ordered(d.buffer[0][0], 1)), 1.f);
}

}  // namespace
}  // namespace gknn::testing
