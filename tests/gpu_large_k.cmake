# Large-k selection (sample select, radix select): called through the selection table on long, skewed and
# labelled rows; both variants, sorted and unsorted output, one block per row and cooperating blocks.
if(GKNN_HAS_CUDA)
  gknn_test(gpu_large_k LABEL gpu SOURCES gpu_large_k_test.cpp)
endif()
