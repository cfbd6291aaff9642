// bitonic.cuh: bitonic sorting networks on (key, index) pairs held in registers, at three scales.
//
// Every comparator of every network puts the pair that ranks first in the library's total order
// (core/order.hpp: smaller key, ties by smaller index) at the LOWER position. Sorting therefore never
// needs descending sub-sorts: the first layer of each merge is a *reversed* separator (thesis 3.4.1, R_2s),
// and a sequence whose length N is not a power of two is handled as if padded with +inf up to the next
// power of two: a comparator whose upper operand lies in the padding can never move anything, so it is
// simply left out (the FAISS trick of thesis 3.6.3). All sizes are template parameters and every loop is
// unrolled, so register arrays are only ever indexed by compile-time constants (no local memory).
//
// Three layouts (one name per layout, same operations):
//  * thread_*: one thread's array k[N], v[N]; element e is k[e].
//  * warp_*:   a warp-wide array of 32*N elements, STRIDED: element e = s*32 + lane is slot s of lane
//              `lane` (FAISS' WarpSelect layout; sorted output is written to global memory coalesced).
//  * block_*:  an array of T*MT elements over the first MT threads of a block, BLOCKED: element
//              e = t*T + i is slot i of thread t (thesis 4.1: small strides stay thread-local, middle strides
//              use shuffles, strides >= 32*T go through shared memory by rows without bank conflicts).
//              With MT == 32 the block_* functions never touch shared memory: a warp-level blocked layout.
//
// Operation names (S is the half-width of the comparator blocks, i.e. the distance of a separator):
//  *_separator<.., S>:           S_2S  (e <-> e + S inside each block of 2S)
//  *_reversed_separator<.., S>:  R_2S  (e <-> mirror of e inside each block of 2S): turns two sorted
//                                halves of each 2S-block into a lower half of the S smallest (bitonic) and
//                                an upper half of the S largest (bitonic)
//  *_merge_steps<.., S>:         S_2S, S_S, ..., S_2: sorts every 2S-block that is bitonic
//  *_sort<..>:                   full ascending sort
//  *_merge_keep_smallest<NA,NB>: a (sorted, NA a power of two) := the NA smallest of a ∪ b (b sorted), sorted
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "core/order.hpp"

namespace gknn::detail::cuda::bitonic {

constexpr unsigned kFullMask = 0xffffffffu;

/// The padding pair: ranks after every real pair (real indices are smaller than the largest Idx).
template <class Idx>
__host__ __device__ constexpr Idx sentinel_index() {
  static_assert(sizeof(Idx) == 4 || sizeof(Idx) == 8, "indices are int32 or int64");
  if constexpr (sizeof(Idx) == 4) return Idx(0x7fffffff);
  else return Idx(0x7fffffffffffffffLL);
}
__host__ __device__ constexpr float sentinel_key() { return __builtin_huge_valf(); }

__host__ __device__ constexpr int log2_exact(int x) { return x <= 1 ? 0 : 1 + log2_exact(x / 2); }
__host__ __device__ constexpr bool is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }
__host__ __device__ constexpr int pow2_ceil(int x) { return x <= 1 ? 1 : 2 * pow2_ceil((x + 1) / 2); }
__host__ __device__ constexpr int min_int(int a, int b) { return a < b ? a : b; }

template <class Idx>
__device__ __forceinline__ bool before(float ka, Idx ia, float kb, Idx ib) {
  return detail::ranks_before(ka, ia, kb, ib);
}

/// Compare-and-swap: afterwards (ka, ia) ranks before (or equals) (kb, ib).
template <class Idx>
__device__ __forceinline__ void cas(float& ka, Idx& ia, float& kb, Idx& ib) {
  const bool swap = before(kb, ib, ka, ia);
  const float k0 = swap ? kb : ka, k1 = swap ? ka : kb;
  const Idx i0 = swap ? ib : ia, i1 = swap ? ia : ib;
  ka = k0, ia = i0, kb = k1, ib = i1;
}

/// Half of a comparator whose other operand lives in another thread: keep the first (keep_first) or the
/// second of the two. Both threads evaluate the same predicate, so they always agree.
template <class Idx>
__device__ __forceinline__ void keep(float& k, Idx& v, float pk, Idx pv, bool keep_first) {
  const bool partner_first = before(pk, pv, k, v);
  if (partner_first == keep_first) k = pk, v = pv;
}

template <class Idx>
__device__ __forceinline__ void fill_sentinel(float* k, Idx* v, int n) {
  for (int i = 0; i < n; ++i) k[i] = sentinel_key(), v[i] = sentinel_index<Idx>();
}

// ---- thread level -----------------------------------------------------------------------------------------

template <int N, int S, class Idx>
__device__ __forceinline__ void thread_separator(float (&k)[N], Idx (&v)[N]) {
#pragma unroll
  for (int e = 0; e < N; ++e)
    if ((e & S) == 0 && e + S < N) cas(k[e], v[e], k[e + S], v[e + S]);
}

template <int N, int S, class Idx>
__device__ __forceinline__ void thread_reversed_separator(float (&k)[N], Idx (&v)[N]) {
#pragma unroll
  for (int e = 0; e < N; ++e)
    if ((e & S) == 0 && (e ^ (2 * S - 1)) < N) cas(k[e], v[e], k[e ^ (2 * S - 1)], v[e ^ (2 * S - 1)]);
}

template <int N, int S, class Idx>
__device__ __forceinline__ void thread_merge_steps(float (&k)[N], Idx (&v)[N]) {
  if constexpr (S >= 1) {
    thread_separator<N, S>(k, v);
    thread_merge_steps<N, S / 2>(k, v);
  }
}

template <int N, class Idx, int Width = 2>
__device__ __forceinline__ void thread_sort(float (&k)[N], Idx (&v)[N]) {
  if constexpr (Width / 2 < N) {
    thread_reversed_separator<N, Width / 2>(k, v);
    thread_merge_steps<N, Width / 4>(k, v);
    thread_sort<N, Idx, Width * 2>(k, v);
  }
}

/// a := the NA smallest of a ∪ b, sorted. a and b sorted ascending; NA a power of two, NB any.
template <int NA, int NB, class Idx>
__device__ __forceinline__ void thread_merge_keep_smallest(float (&ak)[NA], Idx (&av)[NA], const float (&bk)[NB],
                                                           const Idx (&bv)[NB]) {
  static_assert(is_pow2(NA), "the kept array must have a power-of-two length");
#pragma unroll
  for (int s = 0; s < min_int(NA, NB); ++s)
    if (before(bk[s], bv[s], ak[NA - 1 - s], av[NA - 1 - s])) ak[NA - 1 - s] = bk[s], av[NA - 1 - s] = bv[s];
  thread_merge_steps<NA, NA / 2>(ak, av);  // a is now ascending-then-descending: bitonic
}

// ---- warp level, strided layout (element e = s*32 + lane) -------------------------------------------------

__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x) & 31; }

template <int N, int S, class Idx>
__device__ __forceinline__ void warp_separator(float (&k)[N], Idx (&v)[N]) {
  if constexpr (S >= 32) {
    constexpr int D = S / 32;
#pragma unroll
    for (int s = 0; s < N; ++s)
      if ((s & D) == 0 && s + D < N) cas(k[s], v[s], k[s + D], v[s + D]);
  } else {
    const bool lower = (lane_id() & S) == 0;
#pragma unroll
    for (int s = 0; s < N; ++s) {
      const float pk = __shfl_xor_sync(kFullMask, k[s], S);
      const Idx pv = __shfl_xor_sync(kFullMask, v[s], S);
      keep(k[s], v[s], pk, pv, lower);
    }
  }
}

template <int N, int S, class Idx>
__device__ __forceinline__ void warp_reversed_separator(float (&k)[N], Idx (&v)[N]) {
  if constexpr (2 * S <= 32) {
    const bool lower = (lane_id() & S) == 0;
#pragma unroll
    for (int s = 0; s < N; ++s) {
      const float pk = __shfl_xor_sync(kFullMask, k[s], 2 * S - 1);
      const Idx pv = __shfl_xor_sync(kFullMask, v[s], 2 * S - 1);
      keep(k[s], v[s], pk, pv, lower);
    }
  } else {
    // (slot s, lane l) <-> (slot s ^ (2D-1), lane 31-l): each lane exchanges both slots with lane 31-l.
    constexpr int D = S / 32;
#pragma unroll
    for (int s = 0; s < N; ++s) {
      constexpr int kMask = 2 * D - 1;
      if ((s & D) == 0 && (s ^ kMask) < N) {
        const int u = s ^ kMask;
        const float pk_s = __shfl_xor_sync(kFullMask, k[u], 31);
        const Idx pv_s = __shfl_xor_sync(kFullMask, v[u], 31);
        const float pk_u = __shfl_xor_sync(kFullMask, k[s], 31);
        const Idx pv_u = __shfl_xor_sync(kFullMask, v[s], 31);
        keep(k[s], v[s], pk_s, pv_s, true);
        keep(k[u], v[u], pk_u, pv_u, false);
      }
    }
  }
}

template <int N, int S, class Idx>
__device__ __forceinline__ void warp_merge_steps(float (&k)[N], Idx (&v)[N]) {
  if constexpr (S >= 1) {
    warp_separator<N, S>(k, v);
    warp_merge_steps<N, S / 2>(k, v);
  }
}

/// Sorts the 32*N elements of the warp (N any, >= 1).
template <int N, class Idx, int Width = 2>
__device__ __forceinline__ void warp_sort(float (&k)[N], Idx (&v)[N]) {
  if constexpr (Width / 2 < 32 * N) {
    warp_reversed_separator<N, Width / 2>(k, v);
    warp_merge_steps<N, Width / 4>(k, v);
    warp_sort<N, Idx, Width * 2>(k, v);
  }
}

/// a := the 32*NA smallest of a ∪ b, sorted (both warp-wide, sorted ascending; NA a power of two).
template <int NA, int NB, class Idx>
__device__ __forceinline__ void warp_merge_keep_smallest(float (&ak)[NA], Idx (&av)[NA], const float (&bk)[NB],
                                                         const Idx (&bv)[NB]) {
  static_assert(is_pow2(NA), "the kept array must have a power-of-two number of slots");
  // a[32NA-1-j] vs b[j]: slot NA-1-s of lane l meets slot s of lane 31-l.
#pragma unroll
  for (int s = 0; s < min_int(NA, NB); ++s) {
    const float pk = __shfl_xor_sync(kFullMask, bk[s], 31);
    const Idx pv = __shfl_xor_sync(kFullMask, bv[s], 31);
    keep(ak[NA - 1 - s], av[NA - 1 - s], pk, pv, true);
  }
  warp_merge_steps<NA, 16 * NA>(ak, av);
}

// ---- block level, blocked layout (element e = t*T + i over threads t < MT) --------------------------------
//
// Every thread of the block must call these (they contain __syncthreads when a stride reaches 32*T);
// threads t >= MT hold no data and only take part in the barriers. `scratch` holds 2*MT pairs; it may alias
// memory the caller does not read during the call.

template <class Idx>
struct Scratch {
  float* keys;
  Idx* idx;
};

namespace block_impl {

/// Lower operand of comparator c at stride rs (a power of two): c with a zero bit inserted at log2(rs).
__device__ __forceinline__ int insert_zero(int c, int rs) { return ((c & ~(rs - 1)) << 1) | (c & (rs - 1)); }

template <int T, int MT, class Idx>
__device__ __forceinline__ void store_rows(const float (&k)[T], const Idx (&v)[T], int r, Scratch<Idx> sc) {
  const int t = threadIdx.x;
  if (t < MT) {
#pragma unroll
    for (int i = 0; i < T; i += 2)
      if (i == r) {
        sc.keys[t] = k[i], sc.idx[t] = v[i];
        sc.keys[MT + t] = k[i + 1], sc.idx[MT + t] = v[i + 1];
      }
  }
}

template <int T, int MT, class Idx>
__device__ __forceinline__ void load_rows(float (&k)[T], Idx (&v)[T], int r, Scratch<Idx> sc) {
  const int t = threadIdx.x;
  if (t < MT) {
#pragma unroll
    for (int i = 0; i < T; i += 2)
      if (i == r) {
        k[i] = sc.keys[t], v[i] = sc.idx[t];
        k[i + 1] = sc.keys[MT + t], v[i + 1] = sc.idx[MT + t];
      }
  }
}

/// One comparator per thread over the two rows in scratch: row-local stride `rs` (>= 32, so a warp touches
/// 32 consecutive words: no bank conflicts); `mirror` selects R (partner = mirror in the 2rs block).
template <int MT, class Idx>
__device__ __forceinline__ void row_comparator(Scratch<Idx> sc, int rs, bool mirror) {
  const int t = threadIdx.x;
  if (t < MT) {
    const int row = t / (MT / 2), c = t % (MT / 2);
    const int lo = insert_zero(c, rs);
    const int hi = mirror ? (lo ^ (2 * rs - 1)) : (lo + rs);
    float* kr = sc.keys + row * MT;
    Idx* vr = sc.idx + row * MT;
    float ka = kr[lo], kb = kr[hi];
    Idx ia = vr[lo], ib = vr[hi];
    cas(ka, ia, kb, ib);
    kr[lo] = ka, kr[hi] = kb, vr[lo] = ia, vr[hi] = ib;
  }
}

template <int T, class Idx>
__device__ __forceinline__ void reverse_slots(float (&k)[T], Idx (&v)[T]) {
#pragma unroll
  for (int i = 0; i < T / 2; ++i) {
    const float tk = k[i];
    const Idx tv = v[i];
    k[i] = k[T - 1 - i], v[i] = v[T - 1 - i];
    k[T - 1 - i] = tk, v[T - 1 - i] = tv;
  }
}

/// Shuffle separators for strides S down to T (thread distances S/T .. 1), each slot independently.
template <int T, int MT, int S, class Idx>
__device__ __forceinline__ void shuffle_separators(float (&k)[T], Idx (&v)[T]) {
  if constexpr (S >= T) {
    if (threadIdx.x < MT) {
      constexpr int kLanes = S / T;
      const bool lower = (lane_id() & kLanes) == 0;
#pragma unroll
      for (int i = 0; i < T; ++i) {
        const float pk = __shfl_xor_sync(kFullMask, k[i], kLanes);
        const Idx pv = __shfl_xor_sync(kFullMask, v[i], kLanes);
        keep(k[i], v[i], pk, pv, lower);
      }
    }
    shuffle_separators<T, MT, S / 2>(k, v);
  }
}

}  // namespace block_impl

/// S_2S ... S_2 over blocks of 2S elements (each bitonic before, sorted after).
template <int T, int MT, int S, class Idx>
__device__ __forceinline__ void block_merge_steps(float (&k)[T], Idx (&v)[T], Scratch<Idx> sc) {
  static_assert(is_pow2(T) && T >= 2 && is_pow2(MT) && MT % 32 == 0, "T >= 2 and MT a multiple of 32");
  static_assert(2 * S <= T * MT, "comparator blocks larger than the array");
  if constexpr (S >= 32 * T) {
    // Thesis Algorithm 1: rows (slot i of every thread) are independent for strides >= T; two rows at a time.
#pragma unroll
    for (int r = 0; r < T; r += 2) {
      block_impl::store_rows<T, MT>(k, v, r, sc);
      __syncthreads();
#pragma unroll
      for (int rs = S / T; rs >= 32; rs /= 2) {
        block_impl::row_comparator<MT>(sc, rs, false);
        __syncthreads();
      }
      block_impl::load_rows<T, MT>(k, v, r, sc);
      __syncthreads();
    }
  }
  block_impl::shuffle_separators<T, MT, min_int(S, 16 * T)>(k, v);
  if (threadIdx.x < MT) thread_merge_steps<T, min_int(S, T / 2)>(k, v);
}

/// R_2S over blocks of 2S elements.
template <int T, int MT, int S, class Idx>
__device__ __forceinline__ void block_reversed_separator(float (&k)[T], Idx (&v)[T], Scratch<Idx> sc) {
  static_assert(is_pow2(T) && T >= 2 && is_pow2(MT) && MT % 32 == 0, "T >= 2 and MT a multiple of 32");
  static_assert(2 * S <= T * MT, "comparator blocks larger than the array");
  const int t = threadIdx.x;
  if constexpr (S < T) {
    if (t < MT) thread_reversed_separator<T, S>(k, v);
  } else if constexpr (S < 32 * T) {
    // (thread t, slot i) <-> (thread t ^ (2S/T-1), slot T-1-i): exchange slot pairs (i, T-1-i) together.
    if (t < MT) {
      constexpr int kMask = 2 * S / T - 1;
      const bool lower = (lane_id() & (S / T)) == 0;
#pragma unroll
      for (int i = 0; i < T / 2; ++i) {
        const int j = T - 1 - i;
        const float pk_i = __shfl_xor_sync(kFullMask, k[j], kMask);
        const Idx pv_i = __shfl_xor_sync(kFullMask, v[j], kMask);
        const float pk_j = __shfl_xor_sync(kFullMask, k[i], kMask);
        const Idx pv_j = __shfl_xor_sync(kFullMask, v[i], kMask);
        keep(k[i], v[i], pk_i, pv_i, lower);
        keep(k[j], v[j], pk_j, pv_j, lower);
      }
    }
  } else {
    // Thesis Algorithm 2: upper threads reverse their slots, then the mirror pairs lie in the same row.
    const bool upper = (t & (S / T)) != 0;
    if (upper) block_impl::reverse_slots(k, v);
#pragma unroll
    for (int r = 0; r < T; r += 2) {
      block_impl::store_rows<T, MT>(k, v, r, sc);
      __syncthreads();
      block_impl::row_comparator<MT>(sc, S / T, true);
      __syncthreads();
      block_impl::load_rows<T, MT>(k, v, r, sc);
      __syncthreads();
    }
    if (upper) block_impl::reverse_slots(k, v);
  }
}

/// Sorts every aligned block of Width elements of the array (Width a power of two <= T*MT).
template <int T, int MT, int Width, class Idx, int W = 2>
__device__ __forceinline__ void block_sort(float (&k)[T], Idx (&v)[T], Scratch<Idx> sc) {
  if constexpr (W <= Width) {
    block_reversed_separator<T, MT, W / 2>(k, v, sc);
    block_merge_steps<T, MT, W / 4>(k, v, sc);
    block_sort<T, MT, Width, Idx, W * 2>(k, v, sc);
  }
}

}  // namespace gknn::detail::cuda::bitonic
