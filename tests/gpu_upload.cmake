# Index::add of host rows through the upload's kept pinned slots: chunk edges, strided and 8-bit rows, the device
# scan's facts and errors, no pinned allocation by repeated adds (issue 12: uploads). Internal hooks: CUDA builds only.
if(GKNN_HAS_CUDA)
  gknn_test(gpu_upload LABEL gpu SOURCES gpu_upload_test.cpp)
endif()
