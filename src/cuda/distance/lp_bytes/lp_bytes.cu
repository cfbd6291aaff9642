// lp_bytes.cu: L1 and L-infinity keys of byte-sized integer data with packed SIMD instructions (gknn, issue 12).
//
// lp_gemm (the thesis' modified GEMM) spends two float instructions on every |q - x| term and is at the SIMT
// floor. Data whose values are integers that fit a byte (0..255, or -127..127) pack several components into a
// 32-bit word, and one instruction takes several terms:
//   L1:   four bytes a word (negative data shifted by 128, which keeps every |q - x|); __vsadu4 adds the four byte
//         |differences| to the accumulator. Integer sums are exact, every key (<= 255 d < 2^24) is a float.
//   Linf: two halves a word (every such value and difference is an fp16 integer); |q - x| and the running maximum
//         per half, two terms an instruction (H100, SIFT1M shape: the bytes' form, __vabsdiffu4 and then __vmaxu4,
//         which sm_90 emulates, took 125 ms, slower than lp_gemm's 116).
// So the keys are garcia_global's and lp_gemm's float32 keys bit for bit, for the data this entry serves (exact_on;
// other data are refused and Auto takes lp_gemm). H100, SIFT1M shape (1M x 128 uint8 base, 10k queries): L1
// distance stage 38.2 ms vs lp_gemm's 112.
//
// The kernel is lp_gemm's register blocking on words: 256 threads, a 128 x 128 tile of keys, 8 x 8 per thread;
// each step stages 8 words of the tile's 128 query and 128 base rows in shared memory, transposed (word-major), so
// that a thread reads the word of its 8 queries and of its 8 base rows as two uint4 each. Rows are packed once per
// call (zero padded to whole steps: |0 - 0| changes no key).
#include <algorithm>
#include <cmath>

#include <cuda_fp16.h>

#include "cuda/common/error.cuh"
#include "cuda/distance/kernels.cuh"
#include "cuda/distance/tile_store.cuh"
#include "cuda/distance/key_ops.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTileRows = 128;
constexpr int kPerThread = 8;
constexpr int kStepWords = 8;            ///< packed words staged per step
constexpr int kPitch = kTileRows + 4;    ///< shared row pitch in words: a warp's transposed stores hit 32 banks

/// L1: four components a word, value + offset as bytes; __vsadu4 adds their four |differences| (exact integers).
struct L1Bytes {
  static constexpr int kPerWord = 4;
  using Acc = uint32_t;
  __device__ static uint32_t pack(const float* row, int64_t dim, int64_t c0, int offset) {
    uint32_t word = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (c0 + i < dim) word |= (static_cast<uint32_t>(static_cast<int>(row[c0 + i]) + offset) & 0xFFu) << (8 * i);
    return word;
  }
  __device__ static Acc zero() { return 0; }
  __device__ static Acc fold(Acc acc, uint32_t q, uint32_t x) { return __vsadu4(q, x) + acc; }
  __device__ static float key(Acc acc) { return static_cast<float>(acc); }
};

/// Linf: two components a word as halves (integers up to 2048 are exact, and so are the differences of bytes);
/// |q - x| and the running maximum per half, two terms per half2 instruction (the bytes' form, __vabsdiffu4 and
/// __vmaxu4, which sm_90 emulates, took 125 ms at the SIFT1M shape against lp_gemm's 116).
struct LinfHalves {
  static constexpr int kPerWord = 2;
  using Acc = __half2;
  __device__ static uint32_t pack(const float* row, int64_t dim, int64_t c0, int /*offset: differences keep*/) {
    const __half2 h = __floats2half2_rn(c0 < dim ? row[c0] : 0.f, c0 + 1 < dim ? row[c0 + 1] : 0.f);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  __device__ static Acc zero() { return __float2half2_rn(0.f); }
  __device__ static Acc fold(Acc acc, uint32_t q, uint32_t x) {
    return __hmax2(acc, __habs2(__hsub2(*reinterpret_cast<const __half2*>(&q), *reinterpret_cast<const __half2*>(&x))));
  }
  __device__ static float key(Acc acc) { return fmaxf(__low2float(acc), __high2float(acc)); }
};

/// Packed words per row: the components' words rounded up to whole steps (zero padded: |0 - 0| = 0 changes no key).
template <class F>
int64_t row_words(int64_t dim) {
  return ((dim + F::kPerWord - 1) / F::kPerWord + kStepWords - 1) / kStepWords * kStepWords;
}

template <class F>
__global__ void pack_kernel(const float* __restrict__ src, int64_t stride, int64_t rows, int64_t dim, int64_t words,
                            int offset, uint32_t* __restrict__ dst) {
  for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < rows * words;
       w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = w / words, c0 = (w % words) * F::kPerWord;
    dst[w] = F::pack(src + r * stride, dim, c0, offset);
  }
}

template <class F>
__global__ void __launch_bounds__(kThreads, 2)
    packed_kernel(const uint32_t* __restrict__ queries, int64_t nq, const uint32_t* __restrict__ base, int64_t nb,
                  int64_t words, float* __restrict__ out, int64_t out_stride) {
  using Acc = typename F::Acc;
  __shared__ __align__(16) uint32_t sq[kStepWords][kPitch];
  __shared__ __align__(16) uint32_t sb[kStepWords][kPitch];
  const int tid = threadIdx.x;
  const int64_t q_first = int64_t(blockIdx.y) * kTileRows, b_first = int64_t(blockIdx.x) * kTileRows;
  // Staging: thread tid loads words [w0, w0 + 4) of tile row load_row of both matrices (one uint4 each).
  const int load_row = tid / 2, w0 = (tid % 2) * 4;
  const int tx = tid % 16, ty = tid / 16;
  const bool q_in = q_first + load_row < nq, b_in = b_first + load_row < nb;
  const uint4* q_src = reinterpret_cast<const uint4*>(queries + (q_first + load_row) * words + w0);
  const uint4* b_src = reinterpret_cast<const uint4*>(base + (b_first + load_row) * words + w0);

  Acc acc[kPerThread][kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) acc[i][j] = F::zero();

  const uint4 zero = make_uint4(0, 0, 0, 0);
  uint4 next_q = q_in ? __ldg(q_src) : zero, next_b = b_in ? __ldg(b_src) : zero;
  for (int64_t s = 0; s < words; s += kStepWords) {
    const uint32_t nq4[4] = {next_q.x, next_q.y, next_q.z, next_q.w}, nb4[4] = {next_b.x, next_b.y, next_b.z, next_b.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      sq[w0 + i][load_row] = nq4[i];
      sb[w0 + i][load_row] = nb4[i];
    }
    __syncthreads();
    if (s + kStepWords < words) {  // the next step's words are in flight while this one is computed
      q_src += kStepWords / 4;
      b_src += kStepWords / 4;
      next_q = q_in ? __ldg(q_src) : zero;
      next_b = b_in ? __ldg(b_src) : zero;
    }
#pragma unroll
    for (int w = 0; w < kStepWords; ++w) {
      uint32_t a[kPerThread], b[kPerThread];
      *reinterpret_cast<uint4*>(a) = *reinterpret_cast<const uint4*>(&sq[w][4 * ty]);
      *reinterpret_cast<uint4*>(a + 4) = *reinterpret_cast<const uint4*>(&sq[w][64 + 4 * ty]);
      *reinterpret_cast<uint4*>(b) = *reinterpret_cast<const uint4*>(&sb[w][4 * tx]);
      *reinterpret_cast<uint4*>(b + 4) = *reinterpret_cast<const uint4*>(&sb[w][64 + 4 * tx]);
#pragma unroll
      for (int i = 0; i < kPerThread; ++i)
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) acc[i][j] = F::fold(acc[i][j], a[i], b[j]);
    }
    __syncthreads();
  }

  store_tile_keys(acc, [](Acc a) { return F::key(a); }, out, out_stride, nq, nb, q_first, b_first, tx, ty);
}

template <class F>
void pack(const float* rows, int64_t stride, int64_t count, int64_t dim, int offset, uint32_t* dst, cudaStream_t s) {
  if (count == 0) return;
  const int64_t words = row_words<F>(dim);
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((count * words + 255) / 256, 1 << 16));
  pack_kernel<F><<<blocks, 256, 0, s>>>(rows, stride, count, dim, words, offset, dst);
  GKNN_CUDA_CHECK_LAUNCH();
}

/// Scratch of either form: the bytes' rows are half as long as the halves'.
size_t packed_bytes(int64_t rows, int64_t dim) {
  return (static_cast<size_t>(rows * row_words<LinfHalves>(dim)) * 4 + 255) / 256 * 256;
}

template <class F>
void run(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx, int offset) {
  const int64_t words = row_words<F>(in.dim);
  const size_t q_bytes = packed_bytes(in.nq, in.dim);
  auto* scratch = static_cast<unsigned char*>(ctx.workspace.get(q_bytes + packed_bytes(in.nb, in.dim)));
  auto* q = reinterpret_cast<uint32_t*>(scratch);
  auto* b = reinterpret_cast<uint32_t*>(scratch + q_bytes);
  pack<F>(in.queries, in.query_stride, in.nq, in.dim, offset, q, ctx.stream);
  pack<F>(in.base, in.base_stride, in.nb, in.dim, offset, b, ctx.stream);
  for (int64_t q0 = 0; q0 < in.nq; q0 += kMaxGridY * kTileRows) {
    const int64_t rows = std::min(kMaxGridY * kTileRows, in.nq - q0);
    const dim3 grid(static_cast<unsigned>((in.nb + kTileRows - 1) / kTileRows),
                    static_cast<unsigned>((rows + kTileRows - 1) / kTileRows));
    packed_kernel<F><<<grid, kThreads, 0, ctx.stream>>>(q + q0 * words, rows, b, in.nb, words,
                                                        out.keys + q0 * out.stride, out.stride);
    GKNN_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

bool lp_bytes_serves(Metric m) { return m == Metric::L1 || m == Metric::Linf; }

/// Integers that fit a byte (0..255, or -127..127 shifted by 128 for L1), so L1 sums stay below 2^24 (exact float
/// keys) for d < 65793, and every value and difference is an fp16 integer (Linf).
bool lp_bytes_exact_on(const DataFacts& facts) {
  const ValueStats& v = facts.values;
  const bool bytes = v.nonnegative ? v.max_abs <= 255.f : v.max_abs <= 127.f;
  return v.known && v.integral && bytes && 255.0 * static_cast<double>(facts.dim) < 16777216.0;
}

size_t lp_bytes_workspace(int64_t nq, int64_t nb, int64_t dim) { return packed_bytes(nq, dim) + packed_bytes(nb, dim); }

void lp_bytes_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  GKNN_EXPECT(lp_bytes_serves(in.metric), ErrorCode::Internal, "lp_bytes called with metric ", to_string(in.metric));
  // The data were checked (exact_on) for base and queries together: one negative value anywhere puts every value
  // in -127..127, and both sides take the same shift by 128.
  GKNN_EXPECT(in.facts && lp_bytes_exact_on(*in.facts), ErrorCode::Internal, "lp_bytes called on data it does not serve");
  if (in.metric == Metric::L1) run<L1Bytes>(in, out, ctx, in.facts->values.nonnegative ? 0 : 128);
  else run<LinfHalves>(in, out, ctx, 0);
}

}  // namespace gknn::detail::cuda
