// kernels.cu: the bucketer-independent kernels of a large-k selection (see launch.cuh).
#include "cuda/common/error.cuh"
#include "cuda/select/large_k/launch.cuh"
#include "cuda/select/large_k/passes.cuh"

namespace gknn::detail::cuda::large_k {
namespace {

__global__ void init_kernel(Problem pb) {
  const uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= pb.rows) return;
  RowSearch s{};
  s.n_cand = pb.cols;
  s.k_rem = pb.k;
  s.location = kInput;
  s.shift = 32 - kRadixBits;
  pb.state[row].search = s;
}

__global__ void __launch_bounds__(kThreads, kMinBlocks) filter_kernel(Problem pb) {
  __shared__ Shared sh;
  const uint32_t row = blockIdx.y;
  RowSearch& s = pb.state[row].search;
  const uint32_t kth = s.kth, need_ties = pb.k - s.count_less;
  filter_pass(sh, pb.row_io(row), pb.cols, kth, s.count_eq == need_ties, blockIdx.x, gridDim.x, pb.tie_buffer(row),
              &s.cursor_aux, &s.cursor_out);
}

__global__ void __launch_bounds__(kThreads) ties_kernel(Problem pb) {
  __shared__ Shared sh;
  const uint32_t row = blockIdx.x;
  const RowSearch s = pb.state[row].search;
  const uint32_t need_ties = pb.k - s.count_less;
  if (s.count_eq == need_ties) return;  // the filter took every tie
  Source ties;
  ties.cols = pb.tie_buffer(row);
  ties.fixed_key = s.kth;
  select_ties(sh, pb.row_io(row), ties, s.kth, s.count_eq, need_ties, s.count_less);
}

}  // namespace

void launch_init(const Problem& pb, cudaStream_t stream) {
  init_kernel<<<(pb.rows + kThreads - 1) / kThreads, kThreads, 0, stream>>>(pb);
  GKNN_CUDA_CHECK_LAUNCH();
}

void launch_filter(const Problem& pb, uint32_t blocks_per_row, cudaStream_t stream) {
  filter_kernel<<<dim3(blocks_per_row, pb.rows), kThreads, 0, stream>>>(pb);
  GKNN_CUDA_CHECK_LAUNCH();
}

void launch_ties(const Problem& pb, cudaStream_t stream) {
  ties_kernel<<<pb.rows, kThreads, 0, stream>>>(pb);
  GKNN_CUDA_CHECK_LAUNCH();
}

}  // namespace gknn::detail::cuda::large_k
