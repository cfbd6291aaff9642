// lp_bytes.cu: L1 keys of 8-bit integer data with the GPU's byte-SIMD instructions (gknn, issue 12).
//
// lp_gemm (the thesis' modified GEMM) spends two float instructions on every |q - x| term and is at the SIMT
// floor. Data whose values are integers that fit a byte (0..255, or -128..127 shifted by 128, which keeps every
// |q - x|) pack four components into a 32-bit word, and __vsadu4 sums the four byte |differences| in one
// instruction. Integer sums are exact, and every key (<= 255 d < 2^24) is a float exactly: the same float32 keys as
// garcia_global and lp_gemm, bit for bit, for the data this entry serves (exact_on; other data are refused and Auto
// takes lp_gemm). H100, SIFT1M shape (1M x 128 uint8 base, 10k queries): distance stage 38.4 ms vs lp_gemm's 113.
// L-infinity is not served: its byte form (__vabsdiffu4, then __vmaxu4 per byte lane, which sm_90 emulates) took
// 125 ms, slower than lp_gemm's two float instructions per term (116 ms).
//
// The kernel is lp_gemm's register blocking on words: 256 threads, a 128 x 128 tile of keys, 8 x 8 per thread;
// each step stages 8 words (32 components) of the tile's 128 query and 128 base rows in shared memory, transposed
// (word-major), so that a thread reads the word of its 8 queries and of its 8 base rows as two uint4 each. Rows
// are converted to packed words once per call (zero padded to a multiple of 8 words: |0 - 0| adds nothing).
#include <algorithm>
#include <cmath>

#include "cuda/common/error.cuh"
#include "cuda/distance/kernels.cuh"
#include "cuda/distance/key_ops.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTileRows = 128;
constexpr int kPerThread = 8;
constexpr int kStepWords = 8;            ///< words (4 components each) staged per step
constexpr int kPitch = kTileRows + 4;    ///< shared row pitch in words: a warp's transposed stores hit 32 banks

/// Packed words per row: ceil(dim / 4) rounded up to whole steps.
int64_t row_words(int64_t dim) { return ((dim + 3) / 4 + kStepWords - 1) / kStepWords * kStepWords; }

/// rows x words packed bytes: component c of row r is byte c % 4 of word c / 4, value + offset; 0 past dim.
__global__ void pack_kernel(const float* __restrict__ src, int64_t stride, int64_t rows, int64_t dim, int64_t words,
                            int offset, uint32_t* __restrict__ dst) {
  for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < rows * words;
       w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = w / words, c0 = (w % words) * 4;
    const float* row = src + r * stride;
    uint32_t word = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (c0 + i < dim) word |= (static_cast<uint32_t>(static_cast<int>(row[c0 + i]) + offset) & 0xFFu) << (8 * i);
    dst[w] = word;
  }
}

__global__ void __launch_bounds__(kThreads, 2)
    l1_bytes_kernel(const uint32_t* __restrict__ queries, int64_t nq, const uint32_t* __restrict__ base, int64_t nb,
                    int64_t words, float* __restrict__ out, int64_t out_stride) {
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

  uint32_t acc[kPerThread][kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) acc[i][j] = 0;

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
        for (int j = 0; j < kPerThread; ++j) acc[i][j] = __vsadu4(a[i], b[j]) + acc[i][j];
    }
    __syncthreads();
  }

  // As lp_gemm: a thread's 4 consecutive keys of a row as one float4 where the output allows it.
  const bool vector_store = out_stride % 4 == 0 && (reinterpret_cast<uintptr_t>(out) & 15) == 0;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int64_t qi = q_first + (i < 4 ? 4 * ty + i : 64 + 4 * ty + (i - 4));
    if (qi >= nq) continue;
    float* row = out + qi * out_stride;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t bj = b_first + 64 * half + 4 * tx;
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = static_cast<float>(acc[i][4 * half + j]);
      if (vector_store && bj + 3 < nb) {
        *reinterpret_cast<float4*>(row + bj) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (bj + j < nb) row[bj + j] = v[j];
      }
    }
  }
}

void pack(const float* rows, int64_t stride, int64_t count, int64_t dim, int64_t words, int offset, uint32_t* dst,
          cudaStream_t s) {
  if (count == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((count * words + 255) / 256, 1 << 16));
  pack_kernel<<<blocks, 256, 0, s>>>(rows, stride, count, dim, words, offset, dst);
  GKNN_CUDA_CHECK_LAUNCH();
}

size_t packed_bytes(int64_t rows, int64_t dim) { return static_cast<size_t>(rows * row_words(dim)) * 4; }

}  // namespace

bool lp_bytes_serves(Metric m) { return m == Metric::L1; }

/// Integers that fit a byte (0..255, or -128..127 shifted), and L1 sums below 2^24 (the float keys are exact).
bool lp_bytes_exact_on(const DataFacts& facts) {
  const ValueStats& v = facts.values;
  const bool bytes = v.nonnegative ? v.max_abs <= 255.f : v.max_abs <= 127.f;
  return v.known && v.integral && bytes && 255.0 * static_cast<double>(facts.dim) < 16777216.0;
}

size_t lp_bytes_workspace(int64_t nq, int64_t nb, int64_t dim) {
  return packed_bytes(nq, dim) + 256 + packed_bytes(nb, dim);
}

void lp_bytes_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  GKNN_EXPECT(lp_bytes_serves(in.metric), ErrorCode::Internal, "lp_bytes called with metric ", to_string(in.metric));
  const int64_t words = row_words(in.dim);
  const size_t q_bytes = (packed_bytes(in.nq, in.dim) + 255) / 256 * 256;
  auto* scratch = static_cast<unsigned char*>(ctx.workspace.get(q_bytes + packed_bytes(in.nb, in.dim)));
  auto* q = reinterpret_cast<uint32_t*>(scratch);
  auto* b = reinterpret_cast<uint32_t*>(scratch + q_bytes);
  // The data were checked (exact_on) for base and queries together: one negative value anywhere puts every value
  // in -128..127, and both sides take the same shift by 128.
  GKNN_EXPECT(in.facts && lp_bytes_exact_on(*in.facts), ErrorCode::Internal, "lp_bytes called on data it does not serve");
  const int offset = in.facts->values.nonnegative ? 0 : 128;
  pack(in.queries, in.query_stride, in.nq, in.dim, words, offset, q, ctx.stream);
  pack(in.base, in.base_stride, in.nb, in.dim, words, offset, b, ctx.stream);
  for (int64_t q0 = 0; q0 < in.nq; q0 += kMaxGridY * kTileRows) {
    const int64_t rows = std::min(kMaxGridY * kTileRows, in.nq - q0);
    const dim3 grid(static_cast<unsigned>((in.nb + kTileRows - 1) / kTileRows),
                    static_cast<unsigned>((rows + kTileRows - 1) / kTileRows));
    l1_bytes_kernel<<<grid, kThreads, 0, ctx.stream>>>(q + q0 * words, rows, b, in.nb, words, out.keys + q0 * out.stride,
                                                       out.stride);
    GKNN_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace gknn::detail::cuda
