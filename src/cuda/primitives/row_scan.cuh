// row_scan.cuh: reads one row segment of float keys at memory speed for a group of G cooperating threads.
//
// Selection kernels are bound by global memory reads (thesis 4.1.5), so every thread keeps V 16-byte loads in
// flight per round and uses nothing loaded before all V were issued. Loads bypass L1 persistence (.cs: every
// key is read once). The optional L2 prefetch (prefetch.global.L2) asks for the NEXT round while the current
// one is processed. The row start need not be 16-byte aligned: the unaligned head and the short tail are
// delivered first, in one scalar round. Every thread of the group receives the same number of rounds, so
// the callback may use barriers and warp votes.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace gknn::detail::cuda::rowscan {

/// One round: up to 4*V keys of this thread. Element e = 4*v + c has column col[v] + c (relative to the
/// segment start) and is present when bit e of `valid` is set.
template <int V>
struct Round {
  float key[4 * V];
  int col[V];
  unsigned valid;
};

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

/// Calls on_round(const Round<V>&) for every round of the segment row[0, cols); g is this thread's rank in
/// the group (0 <= g < G). cols < 2^31.
template <int G, int V, class F>
__device__ __forceinline__ void scan_row(const float* row, int cols, int g, bool prefetch, F&& on_round) {
  static_assert(G >= 8 && 4 * V <= 32, "the scalar round needs 6 threads; valid has 32 bits");
  const int misalign = static_cast<int>((reinterpret_cast<uintptr_t>(row) >> 2) & 3);
  const int head = min(cols, (4 - misalign) & 3);
  const int body4 = (cols - head) / 4;
  const int tail = cols - head - 4 * body4;
  if (head + tail > 0) {
    Round<V> r;
#pragma unroll
    for (int e = 0; e < 4 * V; ++e) r.key[e] = __builtin_huge_valf();
#pragma unroll
    for (int v = 0; v < V; ++v) r.col[v] = 0;
    r.valid = 0;
    if (g < head + tail) {
      const int col = g < head ? g : head + 4 * body4 + (g - head);
      r.key[0] = row[col];
      r.col[0] = col;
      r.valid = 1u;
    }
    on_round(static_cast<const Round<V>&>(r));
  }
  const float4* body = reinterpret_cast<const float4*>(row + head);
  for (int base = 0; base < body4; base += G * V) {
    Round<V> r;
    r.valid = 0;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int f = base + v * G + g;
      float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
      if (f < body4) {
        x = __ldcs(body + f);
        r.valid |= 0xfu << (4 * v);
      }
      r.key[4 * v] = x.x, r.key[4 * v + 1] = x.y, r.key[4 * v + 2] = x.z, r.key[4 * v + 3] = x.w;
      r.col[v] = head + 4 * f;
    }
    if (prefetch) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int f = base + G * V + v * G + g;
        if (f < body4) prefetch_l2(body + f);
      }
    }
    on_round(static_cast<const Round<V>&>(r));
  }
}

}  // namespace gknn::detail::cuda::rowscan
