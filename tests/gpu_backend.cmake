# CUDA backend tests beyond the parameterised suites (tiling, Index, texture fallback, cuBLAS exactness, errors).
# They use the backend's test hooks (src/cuda/hooks.hpp), so they exist only in CUDA builds; without a device
# they exit 77 and CTest reports them as skipped.
if(GKNN_HAS_CUDA)
  gknn_test(gpu_backend LABEL gpu SOURCES gpu_backend_test.cpp)
endif()
