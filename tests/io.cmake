# Data formats, synthetic generators, recall and build information (CPU only).
gknn_test(io_test LABEL cpu SOURCES io_test.cpp)
gknn_test(generate_test LABEL cpu SOURCES generate_test.cpp)
gknn_test(recall_test LABEL cpu SOURCES recall_test.cpp)
gknn_test(info_test LABEL cpu SOURCES info_test.cpp)
# The HDF5 tests also write files with the HDF5 C API directly (float64 datasets, fixed-length strings),
# which gknn's writer never produces but real ann-benchmarks files contain.
if(GKNN_HAS_HDF5)
  target_compile_definitions(io_test PRIVATE GKNN_HAS_HDF5=1)
  target_include_directories(io_test PRIVATE ${HDF5_INCLUDE_DIRS})
  target_link_libraries(io_test PRIVATE ${HDF5_C_LIBRARIES})
endif()
