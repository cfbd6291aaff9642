# Index::add of host rows through the upload's kept pinned slots: chunk edges, strided and 8-bit rows, the device
# scan's facts and errors, no pinned allocation by repeated adds (issue 12: uploads). Internal hooks: CUDA builds only.
if(GKNN_HAS_CUDA)
  gknn_test(gpu_upload LABEL gpu SOURCES gpu_upload_test.cpp)
  # The Index's rows from cudaMalloc instead of gknn's device pool (common/buffer.cuh): the adds after a free, the
  # 8-bit and the concurrent adds give the same answers both ways.
  gknn_test_part(gpu_upload no_pool
                 "GpuUpload.IndexAddedAgain*:GpuUpload.ByteRowsEqualTheirFloats:GpuUpload.ConcurrentAddsToTwoIndexes")
  set_tests_properties(gpu_upload_no_pool PROPERTIES ENVIRONMENT GKNN_INDEX_POOL=0)
endif()
