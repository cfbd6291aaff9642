// buffer.cuh: buffered search (Tang et al. III-D) and the one entry point through which every element of a
// row reaches a queue, buffered or not.
//
// Without a buffer, a thread whose element beats its queue's head inserts at once while its warp-mates idle.
// With a buffer, such elements are parked in a small per-thread buffer (registers: every index is a
// compile-time constant after unrolling); when any lane's buffer is full (intra-warp vote, W::any) the whole
// warp sorts its buffers ("local sort") and inserts them best first, stopping a lane at its first buffered
// entry that no longer beats the head (all later ones are worse still: "early stop").
#pragma once

#include "cuda/select/tang/entry.cuh"
#include "cuda/select/tang/tuning.hpp"

namespace gknn::detail::cuda::tang {

/// Slots of the candidate buffer (tuning.hpp: Policy::buffer_slots).
inline constexpr int kBufferSize = kPolicy.buffer_slots;

template <class E, int B = kBufferSize>
struct CandidateBuffer {
  static_assert(B >= 2 && (B & (B - 1)) == 0, "the sort network needs a power-of-two buffer");
  E slot[B];
  int count = 0;

  GKNN_HD void add(bool want, const E& e) {
    if (!want) return;
    GKNN_TANG_UNROLL
    for (int i = 0; i < B; ++i)
      if (i == count) slot[i] = e;
    ++count;
  }

  /// Ascending bitonic sort network over the B slots (unused slots hold worst()).
  GKNN_HD void sort() {
    GKNN_TANG_UNROLL
    for (int size = 2; size <= B; size *= 2) {
      GKNN_TANG_UNROLL
      for (int stride = size / 2; stride > 0; stride /= 2) {
        GKNN_TANG_UNROLL
        for (int i = 0; i < B; ++i) {
          const int j = i ^ stride;
          if (j <= i || j >= B) continue;  // j < B always holds (B a power of two); said for the compiler
          const bool ascending = (i & size) == 0;
          if (ascending ? ranks_before(slot[j], slot[i]) : ranks_before(slot[i], slot[j])) {
            const E t = slot[i];
            slot[i] = slot[j];
            slot[j] = t;
          }
        }
      }
    }
  }

  /// Warp-uniform: sorts and inserts every lane's buffered entries, best first, then empties the buffers.
  template <class W, class Queue>
  GKNN_HD void flush(Queue& q, const QueueShape& s) {
    GKNN_TANG_UNROLL
    for (int i = 0; i < B; ++i)
      if (i >= count) slot[i] = E::worst();
    sort();
    // Not unrolled: each step inlines a whole queue insertion. The best entry is always slot[0], the slots
    // shifting down after each step, so every index stays a compile-time constant (registers).
    bool going = true;
    GKNN_TANG_NO_UNROLL
    for (int i = 0; i < B; ++i) {
      const bool want = going && i < count && ranks_before(slot[0], q.head);
      going = want;
      if (!W::any(want)) break;
      q.template push<W>(want, slot[0], s);
      GKNN_TANG_UNROLL
      for (int j = 0; j + 1 < B; ++j) slot[j] = slot[j + 1];
    }
    count = 0;
  }
};

/// Offers one element (key at position `pos` of a level whose labels are `labels`) to the queue. `valid`
/// false means "no element here" (an idle lane, a column past the row). Warp-uniform call.
template <class W, bool Buffered, class Queue, class E>
GKNN_HD void offer(Queue& q, CandidateBuffer<E>& buffer, bool valid, float key, const int64_t* labels, int32_t pos,
                   const QueueShape& s) {
  E e = E::worst();
  const bool want = valid && E::admit(key, labels, pos, q.head, e);
  if constexpr (Buffered) {
    buffer.add(want, e);
    if (W::any(buffer.count == kBufferSize)) buffer.template flush<W>(q, s);
  } else {
    q.template push<W>(want, e, s);
  }
}

/// Warp-uniform: inserts whatever is still buffered (end of a row, end of a hierarchy level).
template <class W, bool Buffered, class Queue, class E>
GKNN_HD void drain(Queue& q, CandidateBuffer<E>& buffer, const QueueShape& s) {
  if constexpr (Buffered) {
    if (W::any(buffer.count > 0)) buffer.template flush<W>(q, s);
  }
}

}  // namespace gknn::detail::cuda::tang
