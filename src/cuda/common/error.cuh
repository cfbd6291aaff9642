// error.cuh: every CUDA / cuBLAS call and every launch is checked; failures throw gknn::Error with file:line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gknn/error.hpp"

namespace gknn::detail::cuda {

[[noreturn]] void throw_cuda(cudaError_t err, const char* expr, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t st, const char* expr, const char* file, int line);
/// A failed cudaMalloc of `bytes`: OutOfMemory naming the request and the device's free and total memory (the
/// planner shrinks tiles to the budget first, so this remains only where even the smallest tile cannot fit),
/// else the CUDA error as throw_cuda reports it.
[[noreturn]] void throw_device_allocation(cudaError_t err, size_t bytes);
/// For destructors: reports to stderr instead of throwing.
void warn_cuda(cudaError_t err, const char* expr, const char* file, int line) noexcept;

}  // namespace gknn::detail::cuda

#define GKNN_CUDA_TRY(expr)                                                                     \
  do {                                                                                          \
    cudaError_t gknn_err_ = (expr);                                                             \
    if (gknn_err_ != cudaSuccess) ::gknn::detail::cuda::throw_cuda(gknn_err_, #expr, __FILE__, __LINE__); \
  } while (0)

#define GKNN_CUDA_TRY_NOTHROW(expr)                                                             \
  do {                                                                                          \
    cudaError_t gknn_err_ = (expr);                                                             \
    if (gknn_err_ != cudaSuccess) ::gknn::detail::cuda::warn_cuda(gknn_err_, #expr, __FILE__, __LINE__); \
  } while (0)

/// After every kernel launch: catches bad configurations at once (asynchronous faults surface at the next sync).
#define GKNN_CUDA_CHECK_LAUNCH() GKNN_CUDA_TRY(cudaGetLastError())

#define GKNN_CUBLAS_TRY(expr)                                                                   \
  do {                                                                                          \
    cublasStatus_t gknn_st_ = (expr);                                                           \
    if (gknn_st_ != CUBLAS_STATUS_SUCCESS) ::gknn::detail::cuda::throw_cublas(gknn_st_, #expr, __FILE__, __LINE__); \
  } while (0)
