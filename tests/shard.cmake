# ShardedIndex (several shards in one process), identical to one Index bit for bit: CPU shards everywhere,
# logical shards on CUDA device 0 (and a second device when visible) in CUDA builds.
gknn_test(sharded_index_test LABEL cpu TIMEOUT 300 SOURCES sharded_index_test.cpp)
if(GKNN_HAS_CUDA)
  gknn_test(gpu_sharded_index_test LABEL gpu SOURCES sharded_index_test.cpp)
  target_compile_definitions(gpu_sharded_index_test PRIVATE GKNN_SHARD_TEST_CUDA=1)
endif()
