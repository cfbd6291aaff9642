// queues.cuh: the three per-thread queues of Tang et al. (insertion, heap, merge), each keeping the best
// `k` entries of one row seen so far with the worst of them at q[0] (the "head", cached in a register).
//
// One thread owns one queue; the array lives in the thread's local memory (it is indexed dynamically), sized
// by the compile-time bucket K >= capacity. Local memory is interleaved across the lanes of a warp, so when
// all lanes touch the same slot at once (aligned merges) the access is coalesced.
//
// Interface shared by the three (used by buffer.cuh, search.cuh and the kernel):
//   reset(shape)             empty queue (every slot worse than any element)
//   head                     the current k-th best entry; only entries ranking before it may be pushed
//   push<W>(want, e, shape)  inserts e when `want`; warp-uniform call (the merge queue votes through W)
//   finish(shape)            sorts; then sorted(j, shape) is the j-th best (ascending total order)
//   collect(out, n, shape)   writes the real entries (is_real(e, n)) as Candidates, returns their count
#pragma once

#include "cuda/select/tang/entry.cuh"

namespace gknn::detail::cuda::tang {

/// Drops q[0] (the worst entry) of the descending run q[0, len) and insertion-sorts e into it: the entries that
/// e ranks before shift one slot towards the head.
template <class E>
GKNN_HD void insert_descending(E* q, int len, const E& e) {
  int i = 0;
  while (i + 1 < len && ranks_before(e, q[i + 1])) {
    q[i] = q[i + 1];
    ++i;
  }
  q[i] = e;
}

/// The state of the queues that hold exactly k slots (insertion, heap): q[0, k), worst entry q[0] = head.
template <int K, class E>
struct KSlotQueue {
  E q[K];
  E head;
  int k;

  GKNN_HD void reset(const QueueShape& s) {
    k = s.k;
    for (int i = 0; i < k; ++i) q[i] = E::worst();
    head = q[0];
  }
};

/// Sorted array, descending (q[0] = worst of the best k): an insertion shifts the better-than-e prefix one
/// slot towards the head, dropping the old head. O(k) per insertion.
template <int K, class E>
struct InsertionQueue : KSlotQueue<K, E> {
  using KSlotQueue<K, E>::q, KSlotQueue<K, E>::head, KSlotQueue<K, E>::k;

  /// The insertion queue has no merges: `aligned` does not apply (its warp already inserts in lock step
  /// as far as divergence allows), so the flag leaves this queue unchanged.
  template <class W>
  GKNN_HD void push(bool want, const E& e, const QueueShape&) {
    if (want) insert(e);
  }
  GKNN_HD void insert(const E& e) {
    insert_descending(q, k, e);
    head = q[0];
  }
  GKNN_HD void finish(const QueueShape&) {}
  GKNN_HD E sorted(int j, const QueueShape&) const { return q[k - 1 - j]; }
  /// Best first, so that the top-down search fills the next queue with good entries early.
  GKNN_HD int collect(Candidate* out, int32_t n, const QueueShape&) const {
    int c = 0;
    for (int i = k - 1; i >= 0; --i)
      if (is_real(q[i], n)) out[c++] = {q[i].key, q[i].pos};
    return c;
  }
};

/// Binary max-heap over [0, k) (a parent never ranks before its children): an insertion replaces the root
/// and sifts it down. O(log k) per insertion; finish() heap-sorts in place (ascending).
template <int K, class E>
struct HeapQueue : KSlotQueue<K, E> {
  using KSlotQueue<K, E>::q, KSlotQueue<K, E>::head, KSlotQueue<K, E>::k;

  /// No merges: `aligned` does not apply to the heap queue (see InsertionQueue::push).
  template <class W>
  GKNN_HD void push(bool want, const E& e, const QueueShape&) {
    if (want) {
      sift_down(e, k);
      head = q[0];
    }
  }
  /// Places e in the hole at the root of the heap q[0, size).
  GKNN_HD void sift_down(const E& e, int size) {
    int i = 0;
    for (;;) {
      int child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && ranks_before(q[child], q[child + 1])) ++child;
      if (!ranks_before(e, q[child])) break;
      q[i] = q[child];
      i = child;
    }
    q[i] = e;
  }
  GKNN_HD void finish(const QueueShape&) {
    for (int end = k - 1; end > 0; --end) {
      const E last = q[end];
      q[end] = q[0];
      sift_down(last, end);
    }
  }
  GKNN_HD E sorted(int j, const QueueShape&) const { return q[j]; }
  GKNN_HD int collect(Candidate* out, int32_t n, const QueueShape&) const {
    int c = 0;
    for (int i = 0; i < k; ++i)
      if (is_real(q[i], n)) out[c++] = {q[i].key, q[i].pos};
    return c;
  }
};

/// Levels of sizes m, m, 2m, 4m, ..., capacity/2 stored back to back in q[0, capacity); each level sorted
/// descending, level heads descending, so q[0] is the worst entry. A new entry replaces q[0] and is insertion-
/// sorted into level 0 (m slots); only when level 0's head then ranks before level 1's head are the two merged,
/// and so on down while the next head is out of order ("lazy update"). Merging the sorted prefix [0, next)
/// with the level [next, 2 next) is a reverse bitonic merge (two runs sorted the same way).
///
/// capacity = merge_capacity(k, m) may exceed k: slots [k, capacity) start as phantoms, entries that rank
/// before every real element. They are never the head, so they are never evicted and the head stays the k-th
/// best real entry; after finish() they are the tail q[k, capacity) and are not reported.
///
/// Aligned: one thread's merge is a long, divergent loop while its warp-mates wait. With shape.aligned the
/// warp votes (W::any) at each level and merges it in every lane whenever one lane needs it. Merging a lane
/// whose level heads are in order is harmless (the merged prefix is sorted, so its levels are sorted); it may
/// put that lane's next level out of order, which the next vote (which includes that lane) repairs.
template <int K, class E>
struct MergeQueue {
  E q[K];
  E head;

  GKNN_HD void reset(const QueueShape& s) {
    for (int i = 0; i < s.capacity; ++i) q[i] = i < s.k ? E::worst() : E::phantom();
    head = q[0];
  }
  template <class W>
  GKNN_HD void push(bool want, const E& e, const QueueShape& s) {
    if (s.aligned) {
      if (!W::any(want)) return;
      if (want) insert_descending(q, s.m, e);
      merge_out_of_order<W>(s);
    } else if (want) {
      insert_descending(q, s.m, e);
      merge_out_of_order<SoloWarp>(s);
    }
  }
  /// After an insertion into level 0: walks the levels down, merging the prefix q[0, lower) with the level
  /// q[lower, 2 lower) while V::any votes that q[upper] (the head of the level before it) ranks before q[lower]
  /// (the levels are out of order); then refreshes the head. V is the warp when aligned, else SoloWarp (the
  /// thread's own predicate decides).
  template <class V>
  GKNN_HD void merge_out_of_order(const QueueShape& s) {
    for (int upper = 0, lower = s.m; lower < s.capacity; upper = lower, lower *= 2) {
      if (!V::any(ranks_before(q[upper], q[lower]))) break;
      merge_prefix(2 * lower);
    }
    head = q[0];
  }
  /// Puts the worse of q[a], q[b] first (descending order).
  GKNN_HD void order_pair(int a, int b) {
    const E x = q[a];
    const E y = q[b];
    if (ranks_before(x, y)) {
      q[a] = y;
      q[b] = x;
    }
  }
  /// Reverse bitonic merge of the descending runs q[0, len/2) and q[len/2, len) into one descending run:
  /// comparing q[i] with q[len-1-i] (the second run read backwards) leaves two bitonic halves, every entry
  /// of the first no better than any of the second; half-cleaners of strides len/4 ... 1 then sort each half.
  GKNN_HD void merge_prefix(int len) {
    const int half = len / 2;
    for (int i = 0; i < half; ++i) order_pair(i, len - 1 - i);
    for (int stride = half / 2; stride > 0; stride /= 2)
      for (int j = 0; j < half; ++j) {
        const int i = ((j & ~(stride - 1)) << 1) | (j & (stride - 1));  // j-th index with bit `stride` clear
        order_pair(i, i + stride);
      }
  }
  /// Merges every level into the prefix: q[0, capacity) becomes one descending run.
  GKNN_HD void finish(const QueueShape& s) {
    for (int lower = s.m; lower < s.capacity; lower *= 2) merge_prefix(2 * lower);
  }
  GKNN_HD E sorted(int j, const QueueShape& s) const { return q[s.k - 1 - j]; }
  GKNN_HD int collect(Candidate* out, int32_t n, const QueueShape& s) const {
    int c = 0;
    for (int i = 0; i < s.capacity; ++i)
      if (is_real(q[i], n)) out[c++] = {q[i].key, q[i].pos};
    return c;
  }
};

}  // namespace gknn::detail::cuda::tang
