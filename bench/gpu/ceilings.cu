// ceilings.cu: the arithmetic ceilings gknn_gpu_bench relates each distance stage to (ceilings.hpp): cuBLAS GEMM
// rates in fp32 (SGEMM, pedantic math as the `cublas` path runs it), TF32, fp16 with fp32 accumulation and int8 with
// int32 accumulation, and the SIMT fp32 FMA instruction rate of a small kernel. A .cu file for its two kernels
// (operand fill, FMA throughput).
#include "ceilings.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace gknn_bench {
namespace {

__device__ __forceinline__ uint32_t mix(uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint32_t>(x >> 32);
}

/// Pseudo-random operands (zeros would draw less power and overstate the rate): floats in [-1, 1), int8 in
/// [-128, 127].
template <class T>
__global__ void fill_kernel(T* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t h = mix(static_cast<uint64_t>(i));
    if constexpr (std::is_same_v<T, int8_t>)
      p[i] = static_cast<int8_t>(h >> 24);
    else
      p[i] = static_cast<T>(static_cast<float>(h >> 8) * 0x1p-23f - 1.f);
  }
}

/// 8 independent FMA chains per thread, `iters` x 16 x 8 FMAs; the result is stored only if it equals a value it
/// never takes, so the compiler keeps every FMA and the stores cost nothing.
__global__ void fma_kernel(float* out, int iters, float m, float c) {
  float a[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-3f + j;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u)
#pragma unroll
      for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], m, c);
  }
  float s = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += a[j];
  if (s == -1.2345f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <class F>
double median_ms(int warmups, int reps, F&& launch) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < warmups; ++i) launch();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(ms);
}

template <class T>
void fill(void* p, int64_t n) {
  fill_kernel<T><<<1024, 256>>>(static_cast<T*>(p), n);
}

}  // namespace

Ceilings measure_ceilings(int64_t gemm_n, int reps, double copy_bytes_per_s) {
  Ceilings c;
  c.copy_bytes_per_s = copy_bytes_per_s;
  c.gemm_n = gemm_n;
  const int n = static_cast<int>(gemm_n);
  const size_t elems = size_t(gemm_n) * size_t(gemm_n);
  void *a = nullptr, *b = nullptr, *out = nullptr;
  cublasHandle_t handle = nullptr;
  if (cudaMalloc(&a, elems * 4) != cudaSuccess || cudaMalloc(&b, elems * 4) != cudaSuccess ||
      cudaMalloc(&out, elems * 4) != cudaSuccess || cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    c.errors = "GEMM ceilings: could not allocate 3 x " + std::to_string(elems * 4 >> 20) + " MiB or a cuBLAS handle";
    cudaGetLastError();
  } else {
    const double flops = 2.0 * double(gemm_n) * double(gemm_n) * double(gemm_n);
    // One GemmEx configuration: C (n x n, column-major) = A^T B, A and B n x n; 0 when cuBLAS refuses it.
    const auto rate = [&](const char* name, cudaDataType_t ab, cudaDataType_t ct, cublasComputeType_t compute,
                          cublasMath_t math, const void* alpha, const void* beta) {
      cublasSetMathMode(handle, math);
      cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
      const double ms = median_ms(2, reps, [&] {
        const cublasStatus_t s = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, alpha, a, ab, n, b, ab, n,
                                              beta, out, ct, n, compute, CUBLAS_GEMM_DEFAULT);
        if (s != CUBLAS_STATUS_SUCCESS) status = s;
      });
      const cudaError_t e = cudaDeviceSynchronize();
      if (status != CUBLAS_STATUS_SUCCESS || e != cudaSuccess || ms <= 0) {
        c.errors += std::string(c.errors.empty() ? "" : "; ") + name + ": cuBLAS status " +
                    std::to_string(static_cast<int>(status)) + ", " + cudaGetErrorString(e);
        cudaGetLastError();
        return 0.0;
      }
      return flops / (ms * 1e-3);
    };
    const float one = 1.f, zero = 0.f;
    const int32_t ione = 1, izero = 0;
    fill<float>(a, int64_t(elems));
    fill<float>(b, int64_t(elems));
    c.sgemm = rate("fp32 SGEMM", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_PEDANTIC_MATH, &one, &zero);
    c.tf32 = rate("TF32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_DEFAULT_MATH, &one, &zero);
    fill<__half>(a, int64_t(elems));
    fill<__half>(b, int64_t(elems));
    c.fp16 = rate("fp16", CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH, &one, &zero);
    fill<int8_t>(a, int64_t(elems));
    fill<int8_t>(b, int64_t(elems));
    c.int8 = rate("int8", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUBLAS_DEFAULT_MATH, &ione, &izero);
  }
  if (handle) cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  // SIMT: 8 blocks of 256 threads per SM, ~10 ms a launch on an H100.
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int blocks = std::max(1, sms) * 8, threads = 256, iters = 8192;
  const double fmas = double(blocks) * threads * iters * 16 * 8;
  const double ms =
      median_ms(1, 5, [&] { fma_kernel<<<blocks, threads>>>(static_cast<float*>(out), iters, 0.9999f, 1e-4f); });
  if (cudaDeviceSynchronize() == cudaSuccess && out && ms > 0)
    c.simt = fmas / (ms * 1e-3);
  else
    c.errors += std::string(c.errors.empty() ? "" : "; ") + "SIMT FMA kernel failed";
  cudaGetLastError();
  cudaFree(out);
  return c;
}

}  // namespace gknn_bench
