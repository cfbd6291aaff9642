// tang_emulation_test.cpp: Tang et al.'s queues, buffer and hierarchical partition run on the host, one row
// at a time, through the same host-and-device code the CUDA kernel runs (src/cuda/select/tang/*.cuh), and
// checked against the float64 oracle. Runs without a GPU. What it cannot cover (the shared-memory tile, the
// real 32-lane votes) is covered by gpu_tang_test and the select suite on the device.
//
// Votes are emulated two ways: SoloWarp (a lane alone: exactly the non-aligned behaviour) and EagerWarp
// (every vote passes: some other lane always wants to merge or flush, the worst case of aligned merges and of
// the "buffer full" flag).
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/select/tang/buffer.cuh"
#include "cuda/select/tang/layout.hpp"
#include "cuda/select/tang/queues.cuh"
#include "cuda/select/tang/search.cuh"
#include "testing/oracle.hpp"

namespace gknn::testing {
namespace {

using namespace gknn::detail::cuda::tang;

enum class QueueKind { Insertion, Heap, Merge };

struct Rows {
  std::string name;
  int64_t rows, cols;
  std::vector<float> values;
  std::vector<int64_t> labels;  ///< empty: column labels
};

Rows make_rows(const std::string& kind, int64_t rows, int64_t cols, uint64_t seed, bool with_labels) {
  Rows r{kind + "_" + std::to_string(cols) + (with_labels ? "_labels" : ""), rows, cols,
         std::vector<float>(size_t(rows * cols)), {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 5);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float& v = r.values[size_t(i * cols + j)];
      if (kind == "uniform") v = u(rng);
      else if (kind == "descending") v = float(cols - j);  // every element beats the head: the buffer's worst case
      else if (kind == "ascending") v = float(j);
      else if (kind == "all_equal") v = 2.f;
      else if (kind == "ties") v = float(small(rng));
      else {  // special: +-inf and signed zeros among ties
        const int s = small(rng);
        v = s == 0 ? INFINITY : s == 1 ? -INFINITY : s == 2 ? -0.f : s == 3 ? 0.f : float(small(rng));
      }
    }
  if (with_labels) {
    r.labels.resize(r.values.size());
    for (size_t i = 0; i < r.labels.size(); ++i) r.labels[i] = int64_t(5000000) - 7 * int64_t(i);  // reversed
  }
  return r;
}

/// The host levels of the partition, in HierarchyLayout's shape (one vector per level instead of offsets).
struct HostHierarchy {
  std::vector<std::vector<float>> keys;
  std::vector<std::vector<int64_t>> labels;
  HierarchyView view;
};

void build_host_hierarchy(const Rows& r, int64_t k, int group, HostHierarchy& h) {
  const HierarchyLayout layout = hierarchy_layout(r.rows, r.cols, k, group, !r.labels.empty());
  h.view.levels = layout.levels;
  h.view.group = group;
  h.view.size[0] = int32_t(r.cols);
  h.view.keys[0] = r.values.data();
  h.view.labels[0] = r.labels.empty() ? nullptr : r.labels.data();
  h.view.stride[0] = r.cols;
  h.keys.resize(size_t(layout.levels + 1));
  h.labels.resize(size_t(layout.levels + 1));
  for (int l = 1; l <= layout.levels; ++l) {
    const int32_t n = layout.size[l];
    h.keys[size_t(l)].resize(size_t(r.rows * n));
    if (!r.labels.empty()) h.labels[size_t(l)].resize(size_t(r.rows * n));
    for (int64_t row = 0; row < r.rows; ++row)
      for (int32_t p = 0; p < n; ++p) {
        float key;
        int64_t label;
        const int64_t first = int64_t(p) * group;
        group_best(h.view.row(l - 1, row), int32_t(first), int32_t(std::min<int64_t>(first + group, layout.size[l - 1])),
                   key, label);
        h.keys[size_t(l)][size_t(row * n + p)] = key;
        if (!r.labels.empty()) h.labels[size_t(l)][size_t(row * n + p)] = label;
      }
    h.view.size[l] = n;
    h.view.keys[l] = h.keys[size_t(l)].data();
    h.view.labels[l] = r.labels.empty() ? nullptr : h.labels[size_t(l)].data();
    h.view.stride[l] = n;
  }
}

template <template <int, class> class QueueT, class W, bool Buffered, class E>
Result emulate(const Rows& r, int64_t k, const TangOptions& t, bool merges) {
  check_options(t, r.cols, k);
  QueueShape s;
  s.k = int(k);
  s.m = t.m;
  s.capacity = int(merges ? merge_capacity(k, t.m) : k);
  s.aligned = t.aligned;
  HostHierarchy h;
  if (t.hierarchical) build_host_hierarchy(r, k, t.group, h);
  const bool hierarchical = t.hierarchical && h.view.levels > 0;

  Result out{r.rows, k, std::vector<float>(size_t(r.rows * k)), std::vector<int64_t>(size_t(r.rows * k))};
  auto q = std::make_unique<QueueT<kMaxK, E>>();
  std::vector<Candidate> cand(static_cast<size_t>(kMaxK));
  for (int64_t row = 0; row < r.rows; ++row) {
    q->reset(s);
    CandidateBuffer<E> buffer;
    if (hierarchical) {
      const auto row_at = [&](int level) { return h.view.row(level, row); };
      top_down<W, Buffered>(*q, buffer, cand.data(), row_at, h.view.levels, t.group, true, s);
    } else {
      const float* keys = r.values.data() + row * r.cols;
      const int64_t* labels = r.labels.empty() ? nullptr : r.labels.data() + row * r.cols;
      for (int64_t c = 0; c < r.cols; ++c) offer<W, Buffered>(*q, buffer, true, keys[c], labels, int32_t(c), s);
      drain<W, Buffered>(*q, buffer, s);
    }
    q->finish(s);
    for (int64_t j = 0; j < k; ++j) {
      const E e = q->sorted(int(j), s);
      out.distances[size_t(row * k + j)] = e.key;
      out.indices[size_t(row * k + j)] = e.label(0);
    }
  }
  return out;
}

template <template <int, class> class QueueT, class W, bool Buffered>
Result emulate_any(const Rows& r, int64_t k, const TangOptions& t, bool merges) {
  return r.labels.empty() ? emulate<QueueT, W, Buffered, ColumnEntry>(r, k, t, merges)
                          : emulate<QueueT, W, Buffered, LabelEntry>(r, k, t, merges);
}

template <class W>
Result emulate_queue(QueueKind kind, const Rows& r, int64_t k, const TangOptions& t) {
  switch (kind) {
    case QueueKind::Insertion:
      return t.buffered ? emulate_any<InsertionQueue, W, true>(r, k, t, false)
                        : emulate_any<InsertionQueue, W, false>(r, k, t, false);
    case QueueKind::Heap:
      return t.buffered ? emulate_any<HeapQueue, W, true>(r, k, t, false) : emulate_any<HeapQueue, W, false>(r, k, t, false);
    case QueueKind::Merge:
      break;
  }
  return t.buffered ? emulate_any<MergeQueue, W, true>(r, k, t, true) : emulate_any<MergeQueue, W, false>(r, k, t, true);
}

std::string check(QueueKind kind, bool eager, const Rows& r, int64_t k, const TangOptions& t) {
  const Result got = eager ? emulate_queue<EagerWarp>(kind, r, k, t) : emulate_queue<SoloWarp>(kind, r, k, t);
  const FloatView view{r.values.data(), r.rows, r.cols, 0};
  return check_select(got, view, r.labels.empty() ? nullptr : r.labels.data(), k, Order::Ascending);
}

std::string name_of(QueueKind kind) {
  return kind == QueueKind::Insertion ? "insertion" : kind == QueueKind::Heap ? "heap" : "merge";
}

// Every queue x flag combination x both vote emulations, on every kind of row, with and without labels,
// k from 1 to the largest bucket (and its edges), rows whose length is a multiple of no G^levels.
TEST(TangEmulation, EveryCombinationMatchesOracle) {
  uint64_t seed = 1;
  for (const char* kind : {"uniform", "descending", "ascending", "all_equal", "ties", "special"})
    for (bool with_labels : {false, true}) {
      const Rows r = make_rows(kind, 3, 1531, seed++, with_labels);
      for (QueueKind q : {QueueKind::Insertion, QueueKind::Heap, QueueKind::Merge})
        for (int flags = 0; flags < 8; ++flags)
          for (int64_t k : {1, 7, 32, 33, 129, 1024}) {
            TangOptions t;
            t.aligned = flags & 1;
            t.buffered = flags & 2;
            t.hierarchical = flags & 4;
            for (bool eager : {false, true}) {
              if (eager && k > 129 && q == QueueKind::Merge) continue;  // every vote merging every level: slow
              SCOPED_TRACE(name_of(q) + " flags=" + std::to_string(flags) + " " + r.name + " k=" +
                           std::to_string(k) + (eager ? " eager" : " solo"));
              ASSERT_EQ("", check(q, eager, r, k, t));
            }
          }
    }
}

// m and G variations (the paper's m = 8 and G = 4 are the defaults).
TEST(TangEmulation, MergeLevelSizeAndGroupSize) {
  const Rows r = make_rows("uniform", 2, 4099, 77, false);
  const Rows ties = make_rows("ties", 2, 4099, 78, true);
  for (int m : {1, 2, 4, 8, 16, 64, 512})
    for (int group : {2, 3, 4, 8, 16})
      for (int64_t k : {1, 5, 32, 100, 512})
        for (const Rows* rows : {&r, &ties}) {
          TangOptions t;
          t.m = m;
          t.group = group;
          t.hierarchical = true;
          t.buffered = (m + group) % 2 == 0;
          SCOPED_TRACE(rows->name + " m=" + std::to_string(m) + " G=" + std::to_string(group) + " k=" + std::to_string(k));
          ASSERT_EQ("", check(QueueKind::Merge, false, *rows, k, t));
          ASSERT_EQ("", check(QueueKind::Heap, false, *rows, k, t));
        }
}

// Rows of k columns (no level above the input), of k+1, and lengths around powers of G.
TEST(TangEmulation, RowLengthsAroundLevelBoundaries) {
  for (int64_t cols : {1, 2, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025})
    for (int64_t k : {int64_t(1), int64_t(32), cols / 2, cols - 1, cols}) {
      if (k < 1 || k > cols || k > kMaxK) continue;
      const Rows r = make_rows("ties", 2, cols, uint64_t(cols * 31 + k), cols % 2 == 0);
      for (QueueKind q : {QueueKind::Insertion, QueueKind::Heap, QueueKind::Merge}) {
        TangOptions t;
        t.hierarchical = true;
        t.buffered = true;
        SCOPED_TRACE(name_of(q) + " cols=" + std::to_string(cols) + " k=" + std::to_string(k));
        ASSERT_EQ("", check(q, false, r, k, t));
        ASSERT_EQ("", check(q, true, r, k, t));
      }
    }
}

// The memory cost of the hierarchical partition: rows x sum_{l>=1} n_l entries, n_l = ceil(cols / G^l), levels
// built while the level below has more than k entries; 4 bytes per entry, 12 with labels.
TEST(TangLayout, MemoryCostFormula) {
  struct Expect {
    int64_t cols, k;
    int group;
    std::vector<int32_t> sizes;  // n_1 .. n_T
  };
  const std::vector<Expect> cases = {
      {32768, 256, 4, {8192, 2048, 512, 128}},  // the paper's N = 2^15, k = 2^8: about N/3 entries
      {1000, 10, 3, {334, 112, 38, 13, 5}},      // not a multiple of G^levels
      {1000, 1000, 4, {}},                       // cols <= k: no level, no memory
      {1001, 1000, 4, {251}},
      {17, 1, 2, {9, 5, 3, 2, 1}},
  };
  for (const Expect& e : cases)
    for (bool labels : {false, true}) {
      SCOPED_TRACE("cols=" + std::to_string(e.cols) + " k=" + std::to_string(e.k) + " G=" + std::to_string(e.group));
      const int64_t rows = 3;
      const HierarchyLayout h = hierarchy_layout(rows, e.cols, e.k, e.group, labels);
      ASSERT_EQ(size_t(h.levels), e.sizes.size());
      size_t bytes = 0;
      for (size_t l = 0; l < e.sizes.size(); ++l) {
        EXPECT_EQ(h.size[l + 1], e.sizes[l]);
        bytes += (size_t(rows) * e.sizes[l] * 4 + 255) / 256 * 256;
        if (labels) bytes += (size_t(rows) * e.sizes[l] * 8 + 255) / 256 * 256;
      }
      EXPECT_EQ(h.bytes, bytes);
      EXPECT_LE(h.bytes, workspace_bound(rows, e.cols, e.k));  // the registered workspace never under-estimates
    }
  // Paper's claim for G = 4: about N/3 extra keys per row.
  const HierarchyLayout paper = hierarchy_layout(1, 1 << 16, 32, 4, false);
  EXPECT_NEAR(double(paper.bytes) / 4.0, (1 << 16) / 3.0, 256.0);
}

TEST(TangLayout, RejectsBadOptions) {
  TangOptions t;
  t.m = 6;
  EXPECT_THROW(check_options(t, 100, 10), Error);
  t.m = 1024;
  EXPECT_THROW(check_options(t, 100, 10), Error);
  t.m = 8;
  t.group = 1;
  EXPECT_THROW(check_options(t, 100, 10), Error);
  t.group = 4;
  EXPECT_NO_THROW(check_options(t, 100, 10));
  EXPECT_EQ(merge_capacity(33, 8), 64);
  EXPECT_EQ(merge_capacity(1, 8), 16);
  EXPECT_EQ(merge_capacity(1024, 512), 1024);
  EXPECT_EQ(bucket_for(33), 128);
  EXPECT_EQ(bucket_for(1024), 1024);
}

}  // namespace
}  // namespace gknn::testing
