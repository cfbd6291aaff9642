// int8_mma.cu: exact integer keys for byte-sized integer data on the int8 tensor cores (gknn, issue 12).
//
// Data whose every value is an integer in 0..255 (SIFT/BIGANN descriptors, uint8 embeddings) or in -127..127 are
// moved into int8 by an offset o (128 for values above 127, else 0): v' = v - o in -128..127. Then
//   squared L2:    |q - x|^2 = |q'|^2 + |x'|^2 - 2 q'.x'                    (the offsets cancel)
//   inner product: q.x = q'.x' + o (sum q' + sum x') + o^2 d
// with q'.x' from one cuBLAS int8 GEMM accumulating in int32 and the norms and row sums from the conversion kernel,
// all exact integers: |q'.x'| <= 128^2 d < 2^31 for d <= 131071 (kMaxDim), the keys formed in int64. Each key is
// rounded once to float32: exact while it stays below 2^24 (d max|x|^2 for non-negative data, 4 d max|x|^2 else:
// SIFT-like uint8 rows up to d = 258, twice fp16_mma's range), and otherwise within the one-rounding bound the
// exactness guard certifies (core/guard.cpp, precision integer_keys). Unlike fp16_mma's fp32 accumulation the
// dimension is not bounded by 2^24 / (2 M^2): uint8 rows of d = 960 run here at int8 rate where fp16_mma refuses
// them and SGEMM keys need the guard's much wider float32 bound.
//
// cuBLAS's int8 (IMMA) kernels need 4-byte aligned pointers, leading dimensions that are multiples of 4 and m, k
// multiples of 4: the operands are padded (zero columns to a multiple of 16, zero base rows to a multiple of 4). The
// int32 products land in the key matrix itself where the base tile needs no padded row and the stride is a multiple
// of 4 (an int32 and a float key are both 4 bytes: the epilogue turns each product into its key in place), else in
// a workspace matrix of padded width, from which the epilogue writes the keys.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/common/error.cuh"
#include "cuda/common/initialized_mark.cuh"
#include "cuda/distance/cublas/handle_pool.cuh"
#include "cuda/distance/kernels.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
/// Largest dimension whose int32 products cannot overflow: 128^2 d < 2^31.
constexpr int64_t kMaxDim = 131071;

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }
int64_t padded_dim(int64_t dim) { return (dim + 15) / 16 * 16; }
int64_t padded_rows(int64_t rows) { return (rows + 3) / 4 * 4; }

/// The offset that moves these data into int8 (see the header).
int byte_offset(const DataFacts& facts) { return facts.values.max_abs > 127.f ? 128 : 0; }

/// Per row: |v'|^2 and sum v' (exact in int32: at most 128^2 d and 128 d).
struct RowStats {
  int32_t norm;
  int32_t sum;
};

/// One warp per row: rows' = rows - offset as int8 in `out` (padded_count rows of `out_dim` columns, zero past
/// `count` rows and `dim` columns), and each row's RowStats.
__global__ void to_int8_kernel(const float* __restrict__ rows, int64_t stride, int64_t count, int64_t dim, int offset,
                               int8_t* __restrict__ out, int64_t out_dim, int64_t padded_count,
                               RowStats* __restrict__ stats) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; r < padded_count; r += warps) {
    int32_t norm = 0, sum = 0;
    for (int64_t c = lane; c < out_dim; c += 32) {
      const int v = r < count && c < dim ? static_cast<int>(rows[r * stride + c]) - offset : 0;
      out[r * out_dim + c] = static_cast<int8_t>(v);
      norm += v * v;
      sum += v;
    }
    for (int s = 16; s > 0; s >>= 1) {
      norm += __shfl_xor_sync(0xffffffffu, norm, s);
      sum += __shfl_xor_sync(0xffffffffu, sum, s);
    }
    if (lane == 0) stats[r] = RowStats{norm, sum};
  }
}

/// keys[q][j] from the int32 products dots[q][j] (row width `dots_stride`): the squared L2 or inner-product key
/// formed exactly in int64, then rounded to float32 once.
/// `dots` and `keys` may be the same memory (products in place): not restrict.
__global__ void keys_kernel(const int32_t* dots, int64_t dots_stride, const RowStats* __restrict__ qs,
                            const RowStats* __restrict__ xs, int64_t nq, int64_t nb, int64_t dim, int offset, bool l2,
                            float* keys, int64_t stride) {
  const int64_t o = offset;
  for (int64_t q = blockIdx.y; q < nq; q += gridDim.y) {
    const RowStats sq = qs[q];
    for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < nb; j += int64_t(gridDim.x) * blockDim.x) {
      const int64_t dot = dots[q * dots_stride + j];
      const RowStats sx = xs[j];
      const int64_t key = l2 ? int64_t(sq.norm) + sx.norm - 2 * dot
                             : -(dot + o * (int64_t(sq.sum) + sx.sum) + o * o * dim);
      keys[q * stride + j] = __ll2float_rn(key);
    }
  }
}

void check_int(int64_t value, const char* what) {
  GKNN_EXPECT(value <= INT_MAX, ErrorCode::Unsupported, "int8_mma: ", what, " = ", value,
              " exceeds cuBLAS's 32-bit sizes (use smaller tiles or another distance algorithm)");
}

/// The workspace's parts for an nq x nb tile: int8 queries and base rows, their RowStats, and the int32 products
/// unless they go into the key matrix (`in_place`: see products_in_place).
struct Int8Layout {
  int64_t cols, base_rows;
  size_t queries, base, query_stats, base_stats, dots, total;
  Int8Layout(int64_t nq, int64_t nb, int64_t dim, bool in_place) : cols(padded_dim(dim)), base_rows(padded_rows(nb)) {
    queries = 0;
    base = queries + aligned(static_cast<size_t>(nq * cols));
    query_stats = base + aligned(static_cast<size_t>(base_rows * cols));
    base_stats = query_stats + aligned(static_cast<size_t>(nq) * sizeof(RowStats));
    dots = base_stats + aligned(static_cast<size_t>(base_rows) * sizeof(RowStats));
    total = dots + (in_place ? 0 : aligned(static_cast<size_t>(nq * base_rows) * sizeof(int32_t)));
  }
};

/// Whether the products of an nb-row tile can go into a key matrix of this stride (see the header): no padded base
/// row (nb a multiple of 4), so that nothing lands past a key row's nb columns.
bool products_in_place(int64_t nb, int64_t stride) { return stride % 4 == 0 && padded_rows(nb) == nb; }

void to_int8(const float* rows, int64_t stride, int64_t count, int64_t dim, int offset, int8_t* out, int64_t cols,
             int64_t padded_count, RowStats* stats, cudaStream_t s) {
  if (padded_count == 0) return;
  const unsigned blocks = static_cast<unsigned>(
      std::min<int64_t>((padded_count + kWarpsPerBlock - 1) / kWarpsPerBlock, int64_t(1) << 16));
  to_int8_kernel<<<blocks, kThreads, 0, s>>>(rows, stride, count, dim, offset, out, cols, padded_count, stats);
  GKNN_CUDA_CHECK_LAUNCH();
}

/// dots = queries' x base'^T on the int8 tensor cores (int32 accumulation, exact). The pool's handles are pedantic
/// (handle_pool.cuh); integer products are exact in any math mode, so the default one (IMMA) runs and is restored.
void int8_gemm(cublasHandle_t handle, const Int8Layout& l, int64_t nq, const int8_t* base, const int8_t* queries,
               int32_t* dots, int64_t dots_stride) {
  const int32_t one = 1, zero = 0;
  GKNN_CUBLAS_TRY(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  const cublasStatus_t status =
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(l.base_rows), static_cast<int>(nq),
                   static_cast<int>(l.cols), &one, base, CUDA_R_8I, static_cast<int>(l.cols), queries, CUDA_R_8I,
                   static_cast<int>(l.cols), &zero, dots, CUDA_R_32I, static_cast<int>(dots_stride),
                   CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
  GKNN_CUBLAS_TRY(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH));
  GKNN_CUBLAS_TRY(status);
}

}  // namespace

bool int8_mma_exact_on(const DataFacts& facts) {
  const ValueStats& v = facts.values;
  return v.known && v.integral && facts.dim <= kMaxDim && v.max_abs <= (v.nonnegative ? 255.f : 127.f);
}

// The pipeline's key matrix has stride nb (search.cu): the products go in place where that allows.
size_t int8_mma_workspace(int64_t nq, int64_t nb, int64_t dim) {
  return Int8Layout(nq, nb, dim, products_in_place(nb, nb)).total;
}

void int8_mma_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx) {
  const bool l2 = in.metric == Metric::SquaredL2;
  GKNN_EXPECT(l2 || in.metric == Metric::InnerProduct, ErrorCode::Internal, "int8_mma called with metric ",
              to_string(in.metric));
  GKNN_EXPECT(in.facts && int8_mma_exact_on(*in.facts), ErrorCode::Internal,
              "int8_mma called without facts of byte-sized integer data");
  const bool in_place = products_in_place(in.nb, out.stride);
  const Int8Layout l(in.nq, in.nb, in.dim, in_place);
  if (in_place) check_int(out.stride, "key matrix stride");
  check_int(l.base_rows, "base rows");
  check_int(in.nq, "query rows");
  check_int(l.cols, "padded dimension");
  const int offset = byte_offset(*in.facts);
  auto* scratch = static_cast<unsigned char*>(ctx.workspace.get(l.total));
  auto* queries = reinterpret_cast<int8_t*>(scratch + l.queries);
  auto* base = reinterpret_cast<int8_t*>(scratch + l.base);
  auto* query_stats = reinterpret_cast<RowStats*>(scratch + l.query_stats);
  auto* base_stats = reinterpret_cast<RowStats*>(scratch + l.base_stats);
  // In place: each product and its key share a 4-byte slot, read then written by the same epilogue thread.
  auto* dots = in_place ? reinterpret_cast<int32_t*>(out.keys) : reinterpret_cast<int32_t*>(scratch + l.dots);
  const int64_t dots_stride = in_place ? out.stride : l.base_rows;
  to_int8(in.queries, in.query_stride, in.nq, in.dim, offset, queries, l.cols, in.nq, query_stats, ctx.stream);
  to_int8(in.base, in.base_stride, in.nb, in.dim, offset, base, l.cols, l.base_rows, base_stats, ctx.stream);
  if (in.nq == 0 || in.nb == 0) return;
  {
    CublasLease lease(ctx.device, ctx.stream);
    int8_gemm(lease.get(), l, in.nq, base, queries, dots, dots_stride);
  }
  // cuBLAS's Hopper kernels store through the TMA, which initcheck does not see (initialized_mark.cuh).
  mark_initialized(reinterpret_cast<const float*>(dots), in.nq, l.base_rows, dots_stride, ctx.stream);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((in.nb + kThreads - 1) / kThreads, 1024)),
                  static_cast<unsigned>(std::min<int64_t>(in.nq, 65535)));
  keys_kernel<<<grid, kThreads, 0, ctx.stream>>>(dots, dots_stride, query_stats, base_stats, in.nq, in.nb, in.dim,
                                                 offset, l2, out.keys, out.stride);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::detail::cuda
