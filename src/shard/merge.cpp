// merge.cpp: k-way merge of sorted (key, index) lists with a binary heap of the parts' heads.
#include "shard/merge.hpp"

#include <algorithm>
#include <vector>

#include "core/host_parallel.hpp"
#include "core/order.hpp"
#include "cpu/parallel.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {
namespace {

constexpr size_t kScanMaxParts = 8;  // up to here a linear scan of the heads beats a heap

/// The next unread entry of one part's list for the current row.
template <class Key>
struct Head {
  Key key;
  int64_t index;
  int part;
  int64_t pos;
};

/// std heap algorithms keep the greatest on top, so "greater" ranks the best (first in total order) on top.
template <class Key>
bool after(const Head<Key>& a, const Head<Key>& b) {
  return ranks_before(b.key, b.index, a.key, a.index);
}

/// The heads of the parts' lists for one row (parts with entries only).
template <class Key>
void start_row(const std::vector<KeyListsOf<Key>>& parts, int64_t row, std::vector<Head<Key>>& heads) {
  heads.clear();
  for (size_t p = 0; p < parts.size(); ++p)
    if (parts[p].k > 0) {
      const int64_t at = row * parts[p].k;
      heads.push_back({parts[p].keys[at], parts[p].indices[at], int(p), 0});
    }
}

/// Moves `head` to its part's next entry; false when the part is exhausted.
template <class Key>
bool advance(const std::vector<KeyListsOf<Key>>& parts, int64_t row, Head<Key>& head) {
  const KeyListsOf<Key>& part = parts[size_t(head.part)];
  if (++head.pos >= part.k) return false;
  head.key = part.keys[row * part.k + head.pos];
  head.index = part.indices[row * part.k + head.pos];
  return true;
}

[[noreturn]] void too_few(int64_t k, int64_t row) {
  fail(ErrorCode::Internal, "merge_key_lists: the parts hold fewer than k = ", k, " entries for row ", row);
}

/// Few parts (the devices of one host): the best head by a linear scan, no heap upkeep.
template <class Key>
void merge_row_scan(const std::vector<KeyListsOf<Key>>& parts, int64_t row, int64_t k, std::vector<Head<Key>>& heads,
                    Key* keys, int64_t* indices) {
  start_row(parts, row, heads);
  for (int64_t j = 0; j < k; ++j) {
    if (heads.empty()) too_few(k, row);
    size_t best = 0;
    for (size_t h = 1; h < heads.size(); ++h)
      if (ranks_before(heads[h].key, heads[h].index, heads[best].key, heads[best].index)) best = h;
    keys[j] = heads[best].key;
    indices[j] = heads[best].index;
    if (!advance(parts, row, heads[best])) heads.erase(heads.begin() + std::ptrdiff_t(best));
  }
}

/// Many parts (MPI ranks): a binary heap of the heads, O(log P) per entry.
template <class Key>
void merge_row_heap(const std::vector<KeyListsOf<Key>>& parts, int64_t row, int64_t k, std::vector<Head<Key>>& heap,
                    Key* keys, int64_t* indices) {
  start_row(parts, row, heap);
  std::make_heap(heap.begin(), heap.end(), after<Key>);
  for (int64_t j = 0; j < k; ++j) {
    if (heap.empty()) too_few(k, row);
    std::pop_heap(heap.begin(), heap.end(), after<Key>);
    keys[j] = heap.back().key;
    indices[j] = heap.back().index;
    if (advance(parts, row, heap.back())) std::push_heap(heap.begin(), heap.end(), after<Key>);
    else heap.pop_back();
  }
}

}  // namespace

template <class Key>
void merge_key_lists_into(const std::vector<KeyListsOf<Key>>& parts, int64_t rows, int64_t k, int threads,
                          Key* out_keys, int64_t* out_indices) {
  int64_t available = 0;
  for (const KeyListsOf<Key>& part : parts) {
    GKNN_EXPECT(part.k == 0 || part.rows == rows, ErrorCode::Internal, "merge_key_lists: a part has ", part.rows,
                " rows, expected ", rows);
    available += part.k;
  }
  GKNN_EXPECT(k >= 0 && k <= available, ErrorCode::Internal, "merge_key_lists: k = ", k, " but the parts hold ",
              available, " entries per row");
  // One part with entries (one shard, one MPI rank, the others empty) already is the merge: its first k entries.
  // Into its own storage (the callers' merge into the first part) that is nothing to do: no pass over q x k.
  const auto filled = std::find_if(parts.begin(), parts.end(), [](const KeyListsOf<Key>& part) { return part.k > 0; });
  if (k == 0 || (filled != parts.end() && filled->k == available && filled->k == k && filled->keys == out_keys &&
                 filled->indices == out_indices))
    return;
  // Row ranges on gknn's host pool (host_for), not an OpenMP team: the merge follows the shards' threads, and
  // OpenMP's idle threads spin for milliseconds after a region, which held up the next team (finalize.cpp says how
  // much). too_few (an internal error) is rethrown here.
  constexpr int64_t kEntriesPerPart = int64_t(1) << 14;
  const int threads_used = cpu::resolve_threads(threads);
  host_for(rows, k, kEntriesPerPart, threads_used, [&](int64_t row) {
    // Scratch of the pool thread, reused row after row (its threads live on between calls).
    thread_local std::vector<Head<Key>> heads;
    thread_local std::vector<Key> keys;  // the row's merge, before it replaces the output row
    thread_local std::vector<int64_t> indices;
    keys.resize(static_cast<size_t>(k));
    indices.resize(static_cast<size_t>(k));
    if (parts.size() <= kScanMaxParts) merge_row_scan(parts, row, k, heads, keys.data(), indices.data());
    else merge_row_heap(parts, row, k, heads, keys.data(), indices.data());
    std::copy(keys.begin(), keys.end(), out_keys + row * k);
    std::copy(indices.begin(), indices.end(), out_indices + row * k);
  });
}

template void merge_key_lists_into(const std::vector<KeyListsOf<float>>&, int64_t, int64_t, int, float*, int64_t*);
template void merge_key_lists_into(const std::vector<KeyListsOf<double>>&, int64_t, int64_t, int, double*, int64_t*);

void round_keys_into(const double* keys, float* out, int64_t count) {
  host_for(count, 1, int64_t(1) << 16, 0, [&](int64_t i) { out[i] = static_cast<float>(keys[i]); });
}

KeyResult merge_key_lists(const std::vector<KeyListsView>& parts, int64_t rows, int64_t k, int threads) {
  KeyResult out{rows, k, std::vector<float>(size_t(rows * k)), std::vector<int64_t>(size_t(rows * k))};
  merge_key_lists_into(parts, rows, k, threads, out.distances.data(), out.indices.data());
  return out;
}

}  // namespace gknn::detail
