# The kNN self-join (gknn/join.hpp): every CPU mode and the GPU side emulated on the host grid, against the
# float64 oracle; the CUDA grid searcher and the GPU modes on a device.
gknn_test(join_test LABEL cpu TIMEOUT 300 SOURCES join_test.cpp)
# The join mixes std::thread workers with OpenMP regions; spinning OpenMP threads starve them on a busy 2-core CI box.
set_tests_properties(join_test PROPERTIES ENVIRONMENT OMP_WAIT_POLICY=passive)
if(GKNN_HAS_CUDA)
  gknn_test(join_gpu_test LABEL gpu SOURCES join_gpu_test.cpp)
endif()
