// handle_pool.cu: idle cuBLAS handles per device (cuda/common/idle_pool.hpp). Handles live for the whole process:
// destroying them during static destruction can race the CUDA runtime's own teardown, and the context reclaims them.
#include "cuda/common/error.cuh"
#include "cuda/common/idle_pool.hpp"
#include "cuda/distance/cublas/handle_pool.cuh"

namespace gknn::detail::cuda {

CublasLease::CublasLease(int device, cudaStream_t stream) : device_(device), handle_(nullptr) {
  if (std::optional<cublasHandle_t> idle = idle_pool<cublasHandle_t>().take(device)) {
    handle_ = *idle;
  } else {
    GKNN_CUDA_TRY(cudaSetDevice(device));
    GKNN_CUBLAS_TRY(cublasCreate(&handle_));
    GKNN_CUBLAS_TRY(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH));
  }
  try {
    GKNN_CUBLAS_TRY(cublasSetStream(handle_, stream));
  } catch (...) {
    idle_pool<cublasHandle_t>().give(device_, handle_);
    throw;
  }
}

CublasLease::~CublasLease() { idle_pool<cublasHandle_t>().give(device_, handle_); }

void release_cublas_handles() {
  for (const auto& [device, handles] : idle_pool<cublasHandle_t>().drain()) {
    GKNN_CUDA_TRY(cudaSetDevice(device));
    for (cublasHandle_t handle : handles) GKNN_CUBLAS_TRY(cublasDestroy(handle));
  }
}

}  // namespace gknn::detail::cuda
