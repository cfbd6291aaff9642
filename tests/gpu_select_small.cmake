# Small-k GPU selectors (partial_bitonic, warp_select, block_select, bits, bits_global): bucket edges,
# thread-queue lengths, forced single-query split, prefetch, strides, many rows. Uses internal hooks
# (cuda/select/bits/bits.cuh), so it exists only in CUDA builds.
if(GKNN_HAS_CUDA)
  gknn_test(gpu_select_small LABEL gpu SOURCES gpu_select_small_test.cpp)
endif()
# The bitonic primitives themselves (thread, warp and block level) against std::sort.
if(GKNN_HAS_CUDA)
  gknn_test(gpu_bitonic LABEL gpu SOURCES gpu_bitonic_test.cu)
endif()
