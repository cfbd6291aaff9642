# Tang et al.'s queues (src/cuda/select/tang). The select and search suites already run all 24 combinations;
# these add the host emulation of the same queue code and the memory-cost formula (cpu: runs everywhere, the
# queue code is host-and-device), and on the device m / G variations, k at the bucket edges, rows that are a
# multiple of no G^levels, idle lanes, strided rows and label offsets.
gknn_test(tang_emulation LABEL cpu SOURCES tang_emulation_test.cpp)
if(GKNN_HAS_CUDA)
  gknn_test(gpu_tang LABEL gpu SOURCES gpu_tang_test.cpp)
endif()
