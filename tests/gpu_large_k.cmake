# Large-k selection (sample select, radix select): called through the selection table on long, skewed and
# labelled rows; both variants, sorted and unsorted output, one block per row and cooperating blocks.
# large_k_emulation (cpu: runs everywhere) runs the sorted-output key encoding and an emulated CUB radix sort
# on the host through the same host-and-device code (primitives/ordered.cuh).
gknn_test(large_k_emulation LABEL cpu SOURCES large_k_emulation_test.cpp)
if(GKNN_HAS_CUDA)
  # In two CTest entries that the GPU lanes run side by side (the whole took 171 s of make test, 2026-11-24): the
  # many-row cases (one block per row) apart from the rest.
  set(many_rows "*SkewedRows*:*ManyRows*")
  gknn_test(gpu_large_k LABEL gpu SOURCES gpu_large_k_test.cpp ARGS --gtest_filter=-${many_rows})
  gknn_test_part(gpu_large_k many_rows ${many_rows})
endif()
