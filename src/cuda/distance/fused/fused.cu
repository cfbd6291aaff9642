// fused.cu: the fused distance + selection kernel (thesis, seed 000: distances and top-k in one kernel, so that
// the q x n key matrix is never written). gknn's version runs on tensor cores and is exact on integer data.
//
// Each block owns 64 queries and one split of the base; it walks its split in tiles of 128 base rows:
//   1. the tile's rows arrive in shared memory (cp.async, 2-3 stages deep); the queries' operand fragments stay
//      in registers for the whole walk;
//   2. 8 warps (2 x 4, each 32 x 32 keys) multiply them with mma.sync: u8 x u8 or s8 x s8 -> s32 (m16n8k32), or
//      f16 x f16 -> f32 (m16n8k16) for integers up to 2048;
//   3. every key below its row's running threshold (the k-th key kept so far) is appended to the row's buffer in
//      shared memory; all others are dropped in registers. Once a row's buffer could overflow in the next tile,
//      the block sorts the buffers (one warp per row, bitonic) and keeps the k best: the new thresholds.
// Base rows are visited in increasing index order, so a later key equal to the threshold ranks after the k-th
// (ties go to the smaller index) and is dropped rightly: the kept list is exact in the library's total order.
// Several splits per query give every SM work when queries are few; their sorted lists (k each) are combined by
// the pipeline with a selection over the splits' lists, which orders ties by label.
//
// Keys (gknn's GEMM form): squared L2 -> |x|^2 - 2 q.x (the finaliser adds |q|^2), inner product -> -q.x.
// Exactness: products of integers are exact on tensor cores; s32 accumulation is exact; f32 accumulation is
// exact while partial sums stay below 2^24 (fp16_exact(), the same bound as fp16_mma); keys are converted to
// float exactly under that bound. Data outside it are refused (exact_on), and k > 128 or rows longer than 256
// bytes run the two-stage fp16 path (fp16_mma's GEMM, then selection).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <cuda_fp16.h>

#include "cuda/common/device.cuh"
#include "cuda/common/error.cuh"
#include "cuda/distance/cublas/gemm_keys.cuh"
#include "cuda/distance/kernels.cuh"

namespace gknn::detail::cuda {
namespace {

enum class Elem { U8, S8, F16 };

constexpr int kBM = 64;        // queries per block
constexpr int kBN = 128;       // base rows per tile
constexpr int kThreads = 256;  // 8 warps: 2 (queries) x 4 (base rows), 32 x 32 keys each
constexpr int kBuf = 256;      // buffer entries per query row: the kept list + room for two tiles' appends
constexpr int kMaxFusedK = 128;
constexpr int kMaxRowBytes = 256;
constexpr int kWavesPerSplitPlan = 4;  // blocks per SM the split count aims at (1 block resident per SM)
constexpr int64_t kMinSplitRows = 1024;

// ---- operand types and the tensor-core instruction -----------------------------------------------------------
/// 8-bit integer operands: u8 x u8 or s8 x s8 -> s32, m16n8k32.
template <Elem E>
struct Mma {
  static_assert(E == Elem::U8 || E == Elem::S8);
  using Acc = int;
  static constexpr int kElemBytes = 1;
  __device__ static void run(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (E == Elem::U8)
      asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
          : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
      asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
          : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct Mma<Elem::F16> {
  using Acc = float;
  static constexpr int kElemBytes = 2;
  __device__ static void run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
// Both shapes read a 32-byte slice of the reduction dimension per instruction with the same register layout
// (PTX ISA, mma.m16n8k32 for 8-bit and mma.m16n8k16 for 16-bit types): lane (g = lane / 4, t = lane % 4) holds
// A rows g and g + 8 at bytes 4t and 16 + 4t, B column (base row) g at bytes 4t and 16 + 4t, and C rows g, g + 8 at
// columns 2t, 2t + 1. So one loader serves all three types.

// ---- conversion of float rows into the operand layout ---------------------------------------------------------
template <Elem E>
__device__ uint32_t pack_word(const float* row, int64_t dim, int64_t first, float scale) {
  if constexpr (E == Elem::F16) {
    const float v0 = first < dim ? scale * row[first] : 0.f, v1 = first + 1 < dim ? scale * row[first + 1] : 0.f;
    const __half2 h = __floats2half2_rn(v0, v1);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    uint32_t w = 0;
    for (int i = 0; i < 4; ++i) {
      const int v = first + i < dim ? static_cast<int>(row[first + i]) : 0;
      w |= (static_cast<uint32_t>(v) & 0xFFu) << (8 * i);
    }
    return w;
  }
}

/// rows x row_bytes operand rows (zero padded), one 4-byte word per thread; f16 rows are multiplied by `scale`.
template <Elem E>
__global__ void convert_kernel(const float* __restrict__ src, int64_t stride, int64_t rows, int64_t dim,
                               int row_bytes, float scale, uint32_t* __restrict__ dst) {
  constexpr int kPerWord = 4 / Mma<E>::kElemBytes;
  const int64_t words_per_row = row_bytes / 4, total = rows * words_per_row;
  for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < total; w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = w / words_per_row, c = (w % words_per_row) * kPerWord;
    dst[w] = pack_word<E>(src + r * stride, dim, c, scale);
  }
}

// ---- small device helpers ------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t ordered_bits(float f) {
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float from_ordered(uint32_t u) {
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7FFFFFFFu) : ~u);
}
__device__ __forceinline__ uint32_t ld32(const unsigned char* p) { return *reinterpret_cast<const uint32_t*>(p); }

__device__ __forceinline__ void cp_async16(void* smem_dst, const void* src, int src_bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

/// Ascending bitonic sort of v[0, n) (n a power of two) by one warp.
__device__ void warp_sort(uint64_t* v, int n, int lane) {
  for (int size = 2; size <= n; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = lane; i < n / 2; i += 32) {
        const int lo = 2 * stride * (i / stride) + (i % stride), hi = lo + stride;
        const bool up = (lo & size) == 0;
        const uint64_t x = v[lo], y = v[hi];
        if ((x > y) == up) {
          v[lo] = y;
          v[hi] = x;
        }
      }
      __syncwarp();
    }
}

struct Shared {
  uint64_t* buf;  // kBM x kBuf composite (ordered key << 32 | base row)
  int* count;     // entries in a row's buffer
  int* kept;      // of which the first `kept` are sorted (the list)
  float* tau;     // a row's threshold: keys must be below it to enter
  int* flag;      // a buffer may overflow in the next tile: sort before it
};

/// Sorts every row with new entries and keeps its k best; sets the thresholds. Called by the whole block.
__device__ void keep_best(const Shared& sh, int k, int rows_valid) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int r = warp; r < rows_valid; r += kThreads / 32) {
    const int c = sh.count[r];
    if (c == sh.kept[r]) continue;
    uint64_t* v = sh.buf + r * kBuf;
    int n = 32;
    while (n < c) n <<= 1;
    for (int i = c + lane; i < n; i += 32) v[i] = ~uint64_t(0);
    __syncwarp();
    warp_sort(v, n, lane);
    if (lane == 0) {
      const int keep = min(c, k);
      sh.count[r] = keep;
      sh.kept[r] = keep;
      sh.tau[r] = keep == k ? from_ordered(static_cast<uint32_t>(v[k - 1] >> 32)) : INFINITY;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) *sh.flag = 0;
  __syncthreads();
}

struct KernelArgs {
  const unsigned char* queries;  // nq x row_bytes operands
  const unsigned char* base;     // nb x row_bytes operands
  const float* norms;            // squared L2: |x|^2 per base row; inner product: null
  int nq;
  int64_t nb;
  int k;
  int64_t split_rows;
  float scale;  // key = norm + scale * dot (int operands: -2 for L2, -1 for IP; f16 queries are pre-scaled: 1)
  float* out_keys;
  int64_t* out_labels;
  int64_t out_stride;  // elements between query rows of the output; split s writes columns [s k, s k + k)
  int64_t label_offset;
};

template <int kRowBytes, int kStages>
constexpr size_t shared_bytes() {
  return size_t(kBM) * kBuf * 8 + size_t(kStages) * kBN * (kRowBytes + 16) + 3 * kBM * 4 + 16;
}

template <Elem E, int kSteps, int kStages>
__global__ void __launch_bounds__(kThreads, 1) fused_kernel(const KernelArgs a) {
  using M = Mma<E>;
  using Acc = typename M::Acc;
  constexpr int kRowBytes = kSteps * 32, kPitch = kRowBytes + 16;  // +16 B: conflict-free fragment loads
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* tiles = smem + size_t(kBM) * kBuf * 8;
  int* ints = reinterpret_cast<int*>(tiles + size_t(kStages) * kBN * kPitch);
  const Shared sh{reinterpret_cast<uint64_t*>(smem), ints, ints + kBM, reinterpret_cast<float*>(ints + 2 * kBM),
                  ints + 3 * kBM};

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp >> 2, wn = warp & 3, g = lane >> 2, t4 = lane & 3;
  const int m0 = blockIdx.x * kBM;
  const int rows_valid = min(kBM, a.nq - m0);
  const int64_t b_begin = int64_t(blockIdx.y) * a.split_rows, b_end = min(a.nb, b_begin + a.split_rows);
  const int64_t tiles_n = (b_end - b_begin + kBN - 1) / kBN;

  if (tid < kBM) {
    sh.count[tid] = 0;
    sh.kept[tid] = 0;
    sh.tau[tid] = tid < rows_valid ? INFINITY : -INFINITY;  // rows past the queries take nothing
  }
  if (tid == 0) *sh.flag = 0;

  auto load_tile = [&](int64_t t, int stage) {
    constexpr int kChunks = kRowBytes / 16;
    unsigned char* dst = tiles + stage * kBN * kPitch;
    const int64_t t0 = b_begin + t * kBN;
    for (int c = tid; c < kBN * kChunks; c += kThreads) {
      const int r = c / kChunks, cc = c % kChunks;
      const bool ok = t0 + r < b_end;
      cp_async16(dst + r * kPitch + cc * 16, a.base + (ok ? t0 + r : b_begin) * kRowBytes + cc * 16, ok ? 16 : 0);
    }
  };
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles_n) load_tile(s, s);
    cp_async_commit();
  }

  // The queries' fragments, for the whole walk.
  uint32_t af[2][kSteps][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + wm * 32 + mt * 16 + g + 8 * h;
      const unsigned char* q = a.queries + int64_t(row) * kRowBytes + 4 * t4;
#pragma unroll
      for (int ks = 0; ks < kSteps; ++ks) {
        af[mt][ks][h] = row < a.nq ? ld32(q + ks * 32) : 0u;
        af[mt][ks][2 + h] = row < a.nq ? ld32(q + ks * 32 + 16) : 0u;
      }
    }
  __syncthreads();
  float tau[2][2];
  auto read_thresholds = [&] {
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) tau[mt][h] = sh.tau[wm * 32 + mt * 16 + g + 8 * h];
  };
  read_thresholds();

  for (int64_t t = 0; t < tiles_n; ++t) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile t is in; every warp is done with the stage the next load overwrites
    if (t + kStages - 1 < tiles_n) load_tile(t + kStages - 1, int((t + kStages - 1) % kStages));
    cp_async_commit();
    const unsigned char* tile = tiles + (t % kStages) * kBN * kPitch;

    Acc acc[2][4][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nb = 0; nb < 4; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mt][nb][e] = Acc(0);
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      uint32_t b[4][2];
#pragma unroll
      for (int nb = 0; nb < 4; ++nb) {
        const unsigned char* p = tile + (wn * 32 + nb * 8 + g) * kPitch + ks * 32 + 4 * t4;
        b[nb][0] = ld32(p);
        b[nb][1] = ld32(p + 16);
      }
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nb = 0; nb < 4; ++nb) M::run(acc[mt][nb], af[mt][ks], b[nb][0], b[nb][1]);
    }

    const int64_t t0 = b_begin + t * kBN;
    float norm[4][2];
#pragma unroll
    for (int nb = 0; nb < 4; ++nb)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int64_t col = t0 + wn * 32 + nb * 8 + 2 * t4 + j;
        norm[nb][j] = col < b_end ? (a.norms ? __ldg(a.norms + col) : 0.f) : INFINITY;  // past the end: never kept
      }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nb = 0; nb < 4; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float key = norm[nb][e & 1] + a.scale * static_cast<float>(acc[mt][nb][e]);
          if (key == 0.f) key = 0.f;  // -0 and +0 tie: one bit pattern, so the index decides
          if (key < tau[mt][e >> 1]) {
            const int row = wm * 32 + mt * 16 + g + 8 * (e >> 1);
            const uint32_t col = static_cast<uint32_t>(t0 + wn * 32 + nb * 8 + 2 * t4 + (e & 1));
            const int pos = atomicAdd(sh.count + row, 1);
            sh.buf[row * kBuf + pos] = (uint64_t(ordered_bits(key)) << 32) | col;
            if (pos >= kBuf - kBN) *sh.flag = 1;
          }
        }
    __syncthreads();
    if (*sh.flag) {
      keep_best(sh, a.k, rows_valid);
      read_thresholds();
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  keep_best(sh, a.k, rows_valid);

  // Each row kept k entries: its split has at least k rows (split planning).
  for (int r = warp; r < rows_valid; r += kThreads / 32) {
    const uint64_t* v = sh.buf + r * kBuf;
    float* keys = a.out_keys + int64_t(m0 + r) * a.out_stride + int64_t(blockIdx.y) * a.k;
    int64_t* labels = a.out_labels + int64_t(m0 + r) * a.out_stride + int64_t(blockIdx.y) * a.k;
    for (int j = lane; j < a.k; j += 32) {
      keys[j] = from_ordered(static_cast<uint32_t>(v[j] >> 32));
      labels[j] = a.label_offset + static_cast<int64_t>(v[j] & 0xFFFFFFFFu);
    }
  }
}

// ---- host side --------------------------------------------------------------------------------------------------
/// The operand type exact on these data (fp16_exact() holds): 8-bit integers where the values fit, else f16.
Elem element_for(const DataFacts& f) {
  if (f.values.nonnegative && f.values.max_abs <= 255.f) return Elem::U8;
  if (f.values.max_abs <= 127.f) return Elem::S8;
  return Elem::F16;
}
int elem_bytes(Elem e) { return e == Elem::F16 ? 2 : 1; }

/// Row bytes of the operands: 32, 64, 128 or 256 (one kernel each); 0 when the row is longer.
int row_bytes_for(int64_t dim, Elem e) {
  const int64_t bytes = dim * elem_bytes(e);
  for (int rb = 32; rb <= kMaxRowBytes; rb *= 2)
    if (bytes <= rb) return rb;
  return 0;
}

int64_t split_count(int64_t nq, int64_t nb, int64_t k, int sms) {
  const int64_t qtiles = (nq + kBM - 1) / kBM;
  const int64_t want = (int64_t(kWavesPerSplitPlan) * sms + qtiles - 1) / qtiles;
  const int64_t most = std::max<int64_t>(1, nb / std::max<int64_t>(k, kMinSplitRows));
  return std::clamp<int64_t>(want, 1, most);
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

template <Elem E>
void convert(const float* rows, int64_t stride, int64_t count, int64_t dim, int row_bytes, float scale, void* dst,
             cudaStream_t s) {
  const int64_t words = count * row_bytes / 4;
  if (words == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((words + 255) / 256, 1 << 16));
  convert_kernel<E><<<blocks, 256, 0, s>>>(rows, stride, count, dim, row_bytes, scale, static_cast<uint32_t*>(dst));
  GKNN_CUDA_CHECK_LAUNCH();
}

template <Elem E, int kSteps>
void launch(const KernelArgs& args, int64_t splits, cudaStream_t s) {
  constexpr int kStages = kSteps >= 8 ? 2 : 3;
  constexpr size_t bytes = shared_bytes<kSteps * 32, kStages>();
  auto* kernel = fused_kernel<E, kSteps, kStages>;
  GKNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  const dim3 grid(static_cast<unsigned>((args.nq + kBM - 1) / kBM), static_cast<unsigned>(splits));
  kernel<<<grid, kThreads, bytes, s>>>(args);
  GKNN_CUDA_CHECK_LAUNCH();
}

template <Elem E>
void launch_for_rows(const KernelArgs& args, int row_bytes, int64_t splits, cudaStream_t s) {
  switch (row_bytes) {
    case 32: return launch<E, 1>(args, splits, s);
    case 64: return launch<E, 2>(args, splits, s);
    case 128: return launch<E, 4>(args, splits, s);
    default: return launch<E, 8>(args, splits, s);
  }
}

template <Elem E>
void convert_and_launch(const DistanceInput& in, KernelArgs args, int row_bytes, int64_t splits, void* q_ops,
                        void* b_ops, cudaStream_t s) {
  const bool l2 = in.metric == Metric::SquaredL2;
  // f16 queries carry the factor (-2 q or -q: exact, even integers up to 4096 are fp16 values); 8-bit operands
  // cannot, so their keys apply it to the exact s32 dot product.
  const float factor = l2 ? -2.f : -1.f;
  convert<E>(in.queries, in.query_stride, in.nq, in.dim, row_bytes, E == Elem::F16 ? factor : 1.f, q_ops, s);
  convert<E>(in.base, in.base_stride, in.nb, in.dim, row_bytes, 1.f, b_ops, s);
  args.queries = static_cast<const unsigned char*>(q_ops);
  args.base = static_cast<const unsigned char*>(b_ops);
  args.scale = E == Elem::F16 ? 1.f : factor;
  launch_for_rows<E>(args, row_bytes, splits, s);
}

}  // namespace

bool fused_serves(int64_t k, int64_t dim, const DataFacts& facts) {
  return k >= 1 && k <= kMaxFusedK && fp16_exact(facts) && row_bytes_for(dim, element_for(facts)) > 0;
}

FusedResult fused_search(const DistanceInput& in, const DataFacts& facts, int64_t k, const FusedTarget& target,
                         const DistanceContext& ctx) {
  const bool l2 = in.metric == Metric::SquaredL2;
  GKNN_EXPECT(l2 || in.metric == Metric::InnerProduct, ErrorCode::Internal, "fused kernel called with metric ",
              to_string(in.metric));
  GKNN_EXPECT(fused_serves(k, in.dim, facts) && k <= in.nb && in.nq <= INT32_MAX && in.nb < (int64_t(1) << 32),
              ErrorCode::Internal, "fused kernel called outside its range (k = ", k, ", d = ", in.dim, ")");
  GKNN_EXPECT(!l2 || in.base_norms, ErrorCode::Internal, "fused kernel: base norms not provided");
  const Elem elem = element_for(facts);
  const int row_bytes = row_bytes_for(in.dim, elem);
  const int64_t splits = split_count(in.nq, in.nb, k, device_props(ctx.device).sm_count);

  const size_t q_bytes = aligned(static_cast<size_t>(in.nq) * row_bytes);
  const size_t b_bytes = aligned(static_cast<size_t>(in.nb) * row_bytes);
  const size_t label_bytes = splits > 1 ? static_cast<size_t>(in.nq * splits * k) * sizeof(int64_t) : 0;
  GKNN_EXPECT(splits == 1 || static_cast<size_t>(in.nq * splits * k) <= target.partial_capacity, ErrorCode::Internal,
              "fused kernel: partial lists exceed the key buffer");
  auto* scratch = static_cast<unsigned char*>(ctx.workspace.get(q_bytes + b_bytes + label_bytes));

  KernelArgs args{};
  args.norms = l2 ? in.base_norms : nullptr;
  args.nq = static_cast<int>(in.nq);
  args.nb = in.nb;
  args.k = static_cast<int>(k);
  args.split_rows = (in.nb + splits - 1) / splits;
  args.label_offset = target.label_offset;
  FusedResult result;
  if (splits == 1) {  // one list per query: straight into the destination
    args.out_keys = target.keys;
    args.out_labels = target.labels;
    args.out_stride = target.stride;
    result.direct = true;
  } else {
    args.out_keys = target.partial_keys;
    args.out_labels = reinterpret_cast<int64_t*>(scratch + q_bytes + b_bytes);
    args.out_stride = splits * k;
    result = FusedResult{false, args.out_keys, args.out_labels, splits * k, splits * k};
  }
  void* q_ops = scratch;
  void* b_ops = scratch + q_bytes;
  switch (elem) {
    case Elem::U8: convert_and_launch<Elem::U8>(in, args, row_bytes, splits, q_ops, b_ops, ctx.stream); break;
    case Elem::S8: convert_and_launch<Elem::S8>(in, args, row_bytes, splits, q_ops, b_ops, ctx.stream); break;
    case Elem::F16: convert_and_launch<Elem::F16>(in, args, row_bytes, splits, q_ops, b_ops, ctx.stream); break;
  }
  return result;
}

// Outside the fused range the entry is the two-stage fp16 path: fp16_mma's GEMM keys, then a selection.
void fused_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  gemm_keys(in, out, ctx, GemmPrecision::Fp16);
}

size_t fused_workspace(int64_t nq, int64_t nb, int64_t dim) {
  // Operands (at most 256 bytes a row) and the splits' labels. split_count() gives nq x splits <= kBM x (query
  // tiles + kWavesPerSplitPlan x SMs); the device is not known here, so 160 SMs bound every Hopper part.
  constexpr int64_t kMaxSms = 160;
  const int64_t qtiles = (nq + kBM - 1) / kBM;
  const size_t labels =
      static_cast<size_t>(kBM) * (kWavesPerSplitPlan * kMaxSms + qtiles) * kMaxFusedK * sizeof(int64_t);
  const size_t fused = aligned(static_cast<size_t>(nq) * kMaxRowBytes) + aligned(static_cast<size_t>(nb) * kMaxRowBytes) +
                       std::min(labels, static_cast<size_t>(nq) * static_cast<size_t>(nb) * sizeof(int64_t));
  return std::max(fused, gemm_keys_workspace(nq, nb, dim, GemmPrecision::Fp16));
}

bool fused_exact_on(const DataFacts& facts) { return fp16_exact(facts); }

}  // namespace gknn::detail::cuda
