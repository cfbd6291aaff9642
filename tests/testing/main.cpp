// main.cpp: GoogleTest main for every test binary. With --require-gpu the binary exits 77 (CTest: skipped)
// and says why when no CUDA device can run the tests, so a GPU test never passes silently without a GPU.
// GKNN_TEST_SANITIZE=1 in the environment selects the sanitizer-sized inputs (testing/sanitize.hpp); it is an
// environment switch, not a flag, because parameter lists are built before main runs.
#include <cstdio>
#include <cstring>
#include <exception>

#include <gtest/gtest.h>

#include "gknn/search.hpp"
#include "testing/sanitize.hpp"
#ifdef GKNN_HAS_CUDA
#include "cuda/hooks.hpp"
#endif

int main(int argc, char** argv) {
  bool require_gpu = false;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--require-gpu") == 0) require_gpu = true;
    else argv[out++] = argv[i];
  }
  argc = out;
  if (require_gpu && !gknn::backend_available(gknn::Backend::Cuda)) {
#ifdef GKNN_HAS_CUDA
    std::printf("GPU tests SKIPPED: this build has CUDA but no CUDA device is visible\n");
#else
    std::printf("GPU tests SKIPPED: this build has no CUDA backend (GKNN_CUDA=OFF or nvcc not found)\n");
#endif
    return 77;
  }
  if (gknn::testing::sanitize_mode()) std::printf("sanitizer-sized inputs (GKNN_TEST_SANITIZE=1)\n");
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
#ifdef GKNN_HAS_CUDA
  // Cached pipelines and cuBLAS handles hold device memory until exit: freed here, memcheck's leak check shows only
  // real leaks. A failure to free them fails the binary.
  try {
    gknn::detail::cuda::release_cached_device_resources();
  } catch (const std::exception& e) {
    std::printf("releasing the cached device resources failed: %s\n", e.what());
    return status != 0 ? status : 1;
  }
#endif
  return status;
}
