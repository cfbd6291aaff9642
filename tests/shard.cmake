# ShardedIndex (several shards in one process), identical to one Index bit for bit: CPU shards everywhere,
# logical shards on CUDA device 0 (and a second device when visible) in CUDA builds.
gknn_test(sharded_index_test LABEL cpu TIMEOUT 300 SOURCES sharded_index_test.cpp)
if(GKNN_HAS_CUDA)
  gknn_test(gpu_sharded_index_test LABEL gpu SOURCES sharded_index_test.cpp)
  target_compile_definitions(gpu_sharded_index_test PRIVATE GKNN_SHARD_TEST_CUDA=1)
endif()
# The CLI on several CPU shards (and under mpiexec when MPI is found) writes the bytes of one search.
set(GKNN_SCALE_CLI_ARGS $<TARGET_FILE:gknn_cli>)
if(GKNN_HAS_MPI)
  list(APPEND GKNN_SCALE_CLI_ARGS ${MPIEXEC_EXECUTABLE})
endif()
add_test(NAME scale_cli_test COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scale_cli_test.sh ${GKNN_SCALE_CLI_ARGS})
set_tests_properties(scale_cli_test PROPERTIES LABELS cpu TIMEOUT 300 ENVIRONMENT "${GKNN_MPI_TEST_ENV}")
