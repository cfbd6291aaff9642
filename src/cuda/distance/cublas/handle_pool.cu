// handle_pool.cu: a free list of cuBLAS handles per device. Handles live for the whole process: destroying
// them during static destruction can race the CUDA runtime's own teardown, and the context reclaims them.
#include <map>
#include <mutex>
#include <vector>

#include "cuda/common/error.cuh"
#include "cuda/distance/cublas/handle_pool.cuh"

namespace gknn::detail::cuda {
namespace {

std::mutex g_mutex;
std::map<int, std::vector<cublasHandle_t>>& free_handles() {
  static auto* pool = new std::map<int, std::vector<cublasHandle_t>>();  // never destroyed, see above
  return *pool;
}

}  // namespace

CublasLease::CublasLease(int device, cudaStream_t stream) : device_(device), handle_(nullptr) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::vector<cublasHandle_t>& list = free_handles()[device];
    if (!list.empty()) {
      handle_ = list.back();
      list.pop_back();
    }
  }
  if (!handle_) {
    GKNN_CUDA_TRY(cudaSetDevice(device));
    GKNN_CUBLAS_TRY(cublasCreate(&handle_));
    GKNN_CUBLAS_TRY(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH));
  }
  try {
    GKNN_CUBLAS_TRY(cublasSetStream(handle_, stream));
  } catch (...) {
    std::lock_guard<std::mutex> lock(g_mutex);
    free_handles()[device_].push_back(handle_);
    throw;
  }
}

CublasLease::~CublasLease() {
  std::lock_guard<std::mutex> lock(g_mutex);
  free_handles()[device_].push_back(handle_);
}

void release_cublas_handles() {
  std::map<int, std::vector<cublasHandle_t>> idle;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    idle.swap(free_handles());
  }
  for (const auto& [device, handles] : idle) {
    GKNN_CUDA_TRY(cudaSetDevice(device));
    for (cublasHandle_t handle : handles) GKNN_CUBLAS_TRY(cublasDestroy(handle));
  }
}

}  // namespace gknn::detail::cuda
