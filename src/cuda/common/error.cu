#include <cstdio>

#include "cuda/common/error.cuh"

namespace gknn::detail::cuda {

void throw_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  cudaGetLastError();  // clear a sticky-free error so the next call is not blamed for this one
  const ErrorCode code = err == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::Cuda;
  detail::fail(code, "CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ") in ", expr, " at ",
               file, ":", line);
}

void throw_device_allocation(cudaError_t err, size_t bytes) {
  cudaGetLastError();
  if (err != cudaErrorMemoryAllocation) throw_cuda(err, "cudaMalloc", __FILE__, __LINE__);
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  cudaGetLastError();
  constexpr double kMiB = 1024.0 * 1024.0;
  detail::fail(ErrorCode::OutOfMemory, "out of device memory: cannot allocate ", bytes, " bytes (",
               static_cast<double>(bytes) / kMiB, " MiB); the device has ", static_cast<double>(free_bytes) / kMiB,
               " MiB free of ", static_cast<double>(total_bytes) / kMiB,
               " MiB (the smallest tiling still needs this buffer: lower k or the dimension, or free device memory)");
}

void throw_cublas(cublasStatus_t st, const char* expr, const char* file, int line) {
  const ErrorCode code = st == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::OutOfMemory : ErrorCode::Cuda;
  detail::fail(code, "cuBLAS error ", cublasGetStatusName(st), " in ", expr, " at ", file, ":", line);
}

void warn_cuda(cudaError_t err, const char* expr, const char* file, int line) noexcept {
  std::fprintf(stderr, "gknn: CUDA error %s in %s at %s:%d (ignored in a destructor)\n", cudaGetErrorName(err), expr,
               file, line);
}

}  // namespace gknn::detail::cuda
