#include <cstdio>

#include "cuda/common/error.cuh"

namespace gknn::cuda_detail {

void throw_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  cudaGetLastError();  // clear a sticky-free error so the next call is not blamed for this one
  const ErrorCode code = err == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::Cuda;
  detail::fail(code, "CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ") in ", expr, " at ",
               file, ":", line);
}

void throw_cublas(cublasStatus_t st, const char* expr, const char* file, int line) {
  const ErrorCode code = st == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::OutOfMemory : ErrorCode::Cuda;
  detail::fail(code, "cuBLAS error ", cublasGetStatusName(st), " in ", expr, " at ", file, ":", line);
}

void warn_cuda(cudaError_t err, const char* expr, const char* file, int line) noexcept {
  std::fprintf(stderr, "gknn: CUDA error %s in %s at %s:%d (ignored in a destructor)\n", cudaGetErrorName(err), expr,
               file, line);
}

}  // namespace gknn::cuda_detail
