// merge.cpp: k-way merge of sorted (key, index) lists with a binary heap of the parts' heads.
#include "shard/merge.hpp"

#include <algorithm>

#include "core/order.hpp"
#include "cpu/parallel.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {
namespace {

/// The next unread entry of one part's list for the current row.
struct Head {
  float key;
  int64_t index;
  int part;
  int64_t pos;
};

/// std heap algorithms keep the greatest on top, so "greater" ranks the best (first in total order) on top.
bool after(const Head& a, const Head& b) { return ranks_before(b.key, b.index, a.key, a.index); }

void merge_row(const std::vector<KeyListsView>& parts, int64_t row, int64_t k, std::vector<Head>& heap, float* keys,
               int64_t* indices) {
  heap.clear();
  for (size_t p = 0; p < parts.size(); ++p)
    if (parts[p].k > 0) {
      const int64_t at = row * parts[p].k;
      heap.push_back({parts[p].keys[at], parts[p].indices[at], static_cast<int>(p), 0});
    }
  std::make_heap(heap.begin(), heap.end(), after);
  for (int64_t j = 0; j < k; ++j) {
    GKNN_EXPECT(!heap.empty(), ErrorCode::Internal, "merge_key_lists: the parts hold fewer than k = ", k,
                " entries for row ", row);
    std::pop_heap(heap.begin(), heap.end(), after);
    Head& best = heap.back();
    keys[j] = best.key;
    indices[j] = best.index;
    const KeyListsView& part = parts[size_t(best.part)];
    if (++best.pos < part.k) {
      const int64_t at = row * part.k + best.pos;
      best.key = part.keys[at];
      best.index = part.indices[at];
      std::push_heap(heap.begin(), heap.end(), after);
    } else {
      heap.pop_back();
    }
  }
}

}  // namespace

KeyResult merge_key_lists(const std::vector<KeyListsView>& parts, int64_t rows, int64_t k, int threads) {
  int64_t available = 0;
  for (const KeyListsView& part : parts) {
    GKNN_EXPECT(part.k == 0 || part.rows == rows, ErrorCode::Internal, "merge_key_lists: a part has ", part.rows,
                " rows, expected ", rows);
    available += part.k;
  }
  GKNN_EXPECT(k >= 0 && k <= available, ErrorCode::Internal, "merge_key_lists: k = ", k, " but the parts hold ",
              available, " entries per row");
  KeyResult out{rows, k, std::vector<float>(size_t(rows * k)), std::vector<int64_t>(size_t(rows * k))};
  constexpr int64_t kRowsPerItem = 64;  // amortises the scheduling of one OpenMP item
  cpu::parallel_for(cpu::resolve_threads(threads), (rows + kRowsPerItem - 1) / kRowsPerItem, [&](int64_t item) {
    std::vector<Head> heap;
    heap.reserve(parts.size());
    for (int64_t row = item * kRowsPerItem; row < std::min(rows, (item + 1) * kRowsPerItem); ++row)
      merge_row(parts, row, k, heap, out.distances.data() + row * k, out.indices.data() + row * k);
  });
  return out;
}

}  // namespace gknn::detail
