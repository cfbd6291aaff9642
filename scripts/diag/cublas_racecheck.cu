// cublas_racecheck.cu: does compute-sanitizer's racecheck survive cuBLAS's own GEMM kernels at gknn's shapes?
// (Issue 16: racecheck stopped with "The Sanitizer failed to handle a hardware exception" in the two tests whose
// Auto search takes cuBLAS's TF32 GEMM, whichever one gknn kernel was instrumented, 2026-11-27.)
// One GEMM keys = base^T queries as gemm_keys.cu issues it, nothing of gknn's. Build and run on the device:
//   nvcc -O2 -arch=sm_90 scripts/diag/cublas_racecheck.cu -lcublas -o /tmp/cublas_racecheck
//   compute-sanitizer --tool racecheck /tmp/cublas_racecheck NB NQ AD tf32|fp16|fp32
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    const int e_ = static_cast<int>(x);                                                   \
    if (e_ != 0) { std::fprintf(stderr, "%s failed: %d (line %d)\n", #x, e_, __LINE__); std::exit(1); } \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 5) { std::fprintf(stderr, "usage: cublas_racecheck NB NQ AD tf32|fp16|fp32\n"); return 2; }
  const int nb = std::atoi(argv[1]), nq = std::atoi(argv[2]), ad = std::atoi(argv[3]);
  const bool fp16 = std::strcmp(argv[4], "fp16") == 0, tf32 = std::strcmp(argv[4], "tf32") == 0;
  const size_t elem = fp16 ? sizeof(__half) : sizeof(float);
  const int ldc = (nb + 31) / 32 * 32;
  void *base, *queries;
  float* keys;
  CHECK(cudaMalloc(&base, size_t(nb) * ad * elem));
  CHECK(cudaMalloc(&queries, size_t(nq) * ad * elem));
  CHECK(cudaMalloc(&keys, size_t(ldc) * nq * sizeof(float)));
  CHECK(cudaMemset(base, 0, size_t(nb) * ad * elem));
  CHECK(cudaMemset(queries, 0, size_t(nq) * ad * elem));
  cublasHandle_t h;
  CHECK(cublasCreate(&h));
  const float one = 1.f, zero = 0.f;
  for (int rep = 0; rep < 3; ++rep) {
    if (tf32 || fp16) {
      CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
      const cudaDataType_t t = fp16 ? CUDA_R_16F : CUDA_R_32F;
      CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, nb, nq, ad, &one, base, t, ad, queries, t, ad, &zero, keys,
                         CUDA_R_32F, ldc, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT));
    } else {
      CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
      CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, nb, nq, ad, &one, static_cast<const float*>(base), ad,
                        static_cast<const float*>(queries), ad, &zero, keys, ldc));
    }
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("ok %s %d x %d x %d\n", argv[4], nb, nq, ad);
  cublasDestroy(h);
  return 0;
}
