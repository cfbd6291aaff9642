// handle_pool.cuh: cuBLAS handles, created once per device and reused (creating one costs milliseconds).
#pragma once

#include <cublas_v2.h>

namespace gknn::detail::cuda {

/// Borrows a handle of `device` for one call sequence; concurrent callers get different handles. The handle is
/// bound to `stream` and set to CUBLAS_PEDANTIC_MATH (no TF32 or other reduced-precision shortcut: SGEMM then
/// computes in true float32, which keeps integer data exact).
class CublasLease {
 public:
  CublasLease(int device, cudaStream_t stream);
  ~CublasLease();
  CublasLease(const CublasLease&) = delete;
  CublasLease& operator=(const CublasLease&) = delete;
  cublasHandle_t get() const noexcept { return handle_; }

 private:
  int device_;
  cublasHandle_t handle_;
};

/// Destroys the idle handles of every device (release_cached_device_resources in cuda/hooks.hpp; a later lease
/// creates new ones).
void release_cublas_handles();

}  // namespace gknn::detail::cuda
