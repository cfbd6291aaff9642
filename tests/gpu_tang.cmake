# Tang et al.'s queues (src/cuda/select/tang). The select and search suites already run all 24 combinations;
# these add the host emulation of the same queue code (runs without a GPU), the memory-cost formula, and on
# the device m / G variations, k at the bucket edges and rows that are a multiple of no G^levels.
if(GKNN_HAS_CUDA)
  gknn_test(tang_emulation LABEL cpu SOURCES tang_emulation_test.cpp)
  gknn_test(gpu_tang LABEL gpu SOURCES gpu_tang_test.cpp)
endif()
