// cublas_racecheck.cu: does compute-sanitizer's racecheck survive cuBLAS's own GEMM kernels at gknn's shapes?
// (Issue 16: racecheck stopped with "The Sanitizer failed to handle a hardware exception" in the two tests whose
// Auto search takes cuBLAS's TF32 GEMM, whichever one gknn kernel was instrumented, 2026-11-27.)
// One GEMM keys = base^T queries as gemm_keys.cu issues it, nothing of gknn's. Build and run on the device:
//   nvcc -O2 -arch=sm_90 scripts/diag/cublas_racecheck.cu -lcublas -ldl -o /tmp/cublas_racecheck
//   compute-sanitizer --tool racecheck /tmp/cublas_racecheck NB NQ AD tf32|fp16|fp32 [OPTION...]
// Options, each bringing the call closer to gemm_keys.cu's (all of them: as gknn issues it):
//   ldc=exact  C's leading dimension nb (gknn's DistanceOutput stride: the base tile's rows), not nb rounded to 32
//   stream     a cudaStreamNonBlocking stream (gknn's pipeline streams), not the legacy default stream
//   onebuf     queries then base in one allocation, the base 256-byte aligned after the queries (the workspace)
//   pedantic   the handle made in CUBLAS_PEDANTIC_MATH and one SGEMM run before (the handle pool's handles)
//   mark       nvtxMemCudaMarkInitialized over C after every GEMM (cuda/common/initialized_mark.cu); link with -ldl
// Beside them, compute-sanitizer's own kernel filter: --kernel-name-exclude kns=nvjet (the sanitize
// script's racecheck runs) leaves the GEMM uninstrumented.
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <nvtx3/nvToolsExtMemCudaRt.h>
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
  if (argc < 5) {
    std::fprintf(stderr, "usage: cublas_racecheck NB NQ AD tf32|fp16|fp32 [ldc=exact] [stream] [onebuf] [pedantic] [mark]\n");
    return 2;
  }
  const int nb = std::atoi(argv[1]), nq = std::atoi(argv[2]), ad = std::atoi(argv[3]);
  const bool fp16 = std::strcmp(argv[4], "fp16") == 0, tf32 = std::strcmp(argv[4], "tf32") == 0;
  bool exact_ldc = false, own_stream = false, onebuf = false, pedantic = false, mark = false;
  for (int i = 5; i < argc; ++i) {
    if (!std::strcmp(argv[i], "ldc=exact")) exact_ldc = true;
    else if (!std::strcmp(argv[i], "stream")) own_stream = true;
    else if (!std::strcmp(argv[i], "onebuf")) onebuf = true;
    else if (!std::strcmp(argv[i], "pedantic")) pedantic = true;
    else if (!std::strcmp(argv[i], "mark")) mark = true;
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  const size_t elem = fp16 ? sizeof(__half) : sizeof(float);
  const int ldc = exact_ldc ? nb : (nb + 31) / 32 * 32;
  const size_t query_bytes = size_t(nq) * ad * elem, base_bytes = size_t(nb) * ad * elem;
  const size_t base_at = (query_bytes + 255) / 256 * 256;
  void *base, *queries;
  float* keys;
  if (onebuf) {
    CHECK(cudaMalloc(&queries, base_at + (base_bytes + 255) / 256 * 256));
    base = static_cast<char*>(queries) + base_at;
  } else {
    CHECK(cudaMalloc(&base, base_bytes));
    CHECK(cudaMalloc(&queries, query_bytes));
  }
  CHECK(cudaMalloc(&keys, size_t(ldc) * nq * sizeof(float)));
  CHECK(cudaMemset(base, 0, base_bytes));
  CHECK(cudaMemset(queries, 0, query_bytes));
  cudaStream_t stream = nullptr;
  if (own_stream) CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t h;
  CHECK(cublasCreate(&h));
  CHECK(cublasSetStream(h, stream));
  const float one = 1.f, zero = 0.f;
  if (pedantic && !fp16) {
    CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
    CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, nb, nq, ad, &one, static_cast<const float*>(base), ad,
                      static_cast<const float*>(queries), ad, &zero, keys, ldc));
  }
  const nvtxDomainHandle_t domain = mark ? nvtxDomainCreateA("cublas_racecheck") : nullptr;
  for (int rep = 0; rep < 3; ++rep) {
    if (tf32 || fp16) {
      CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
      const cudaDataType_t t = fp16 ? CUDA_R_16F : CUDA_R_32F;
      CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, nb, nq, ad, &one, base, t, ad, queries, t, ad, &zero, keys,
                         CUDA_R_32F, ldc, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT));
      if (pedantic) CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
    } else {
      CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
      CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, nb, nq, ad, &one, static_cast<const float*>(base), ad,
                        static_cast<const float*>(queries), ad, &zero, keys, ldc));
    }
    if (mark) {
      const nvtxMemVirtualRangeDesc_t whole{size_t(ldc) * nq * sizeof(float), keys};
      nvtxMemMarkInitializedBatch_t batch{};
      batch.extCompatID = NVTX_EXT_COMPATID_MEM;
      batch.structSize = sizeof(batch);
      batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
      batch.regionDescCount = 1;
      batch.regionDescElementSize = sizeof(nvtxMemVirtualRangeDesc_t);
      batch.regionDescElements = &whole;
      nvtxMemCudaMarkInitialized(domain, stream, 0, &batch);
    }
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGetLastError());
  std::printf("ok %s %d x %d x %d%s%s%s%s%s\n", argv[4], nb, nq, ad, exact_ldc ? " ldc=exact" : "",
              own_stream ? " stream" : "", onebuf ? " onebuf" : "", pedantic ? " pedantic" : "", mark ? " mark" : "");
  cublasDestroy(h);
  if (own_stream) cudaStreamDestroy(stream);
  return 0;
}
