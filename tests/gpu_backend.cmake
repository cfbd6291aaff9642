# CUDA backend tests beyond the parameterised suites.
# Host-side logic of the CUDA kernels (merge path, bounded insertion): plain C++, runs everywhere (label cpu).
gknn_test(gpu_host_logic LABEL cpu SOURCES gpu_host_logic_test.cpp)
# Tiling, Index, texture fallback, cuBLAS exactness, errors. They use the backend's test hooks
# (src/cuda/hooks.hpp), so they exist only in CUDA builds; without a device they exit 77 (CTest: skipped).
if(GKNN_HAS_CUDA)
  gknn_test(gpu_backend LABEL gpu SOURCES gpu_backend_test.cpp)
  # Query uploads part by part as the host team packs them (GKNN_QUERY_UPLOAD_PER_PART, off by default).
  gknn_test_part(gpu_backend query_upload_per_part "GpuStaging.*")
  set_tests_properties(gpu_backend_query_upload_per_part PROPERTIES ENVIRONMENT GKNN_QUERY_UPLOAD_PER_PART=1)
endif()
# Results into caller storage, device-side finalisation, device inputs, fp16_mma exactness (issues 21, 12).
if(GKNN_HAS_CUDA)
  gknn_test(gpu_output LABEL gpu SOURCES gpu_output_test.cpp)
endif()
# A base larger than the device budget, streamed from the host in tiles, against the resident path; the
# out-of-memory error of an allocation that cannot succeed. Uses internal CUDA headers: CUDA builds only.
# One CTest entry per metric (the streaming case took 419 s in one piece): the binary's own entry runs squared_l2
# and the allocation error, the parts the other two metrics.
if(GKNN_HAS_CUDA)
  gknn_test(gpu_streaming LABEL gpu SOURCES gpu_streaming_test.cpp ARGS --gtest_filter=-*/inner_product:*/l1)
  gknn_test_part(gpu_streaming inner_product "*/inner_product")
  gknn_test_part(gpu_streaming l1 "*/l1")
endif()
# Device views get the host's value facts, plan, results and NaN error; repeated one-shot searches of device views
# allocate nothing (issue 15). Uses internal headers (core/validate.hpp): CUDA builds only.
if(GKNN_HAS_CUDA)
  gknn_test(gpu_device_views LABEL gpu SOURCES gpu_device_views_test.cpp)
endif()
# The fused distance + selection kernel against the float64 oracle (issue 13); again with the splits of a query
# not sharing their k-th keys (GKNN_FUSED_SHARED_THRESHOLD=0; sharing is the default), and with the wide block
# (GKNN_FUSED_MEDIUM=0: 64 queries a block) where the medium one (32 queries, two blocks an SM) serves by default,
# and with the walk's second barrier a tile (GKNN_FUSED_ONE_BARRIER=0: an overflowed tile settled at once). At most
# 4 queries on 8-bit data take the few-query walk without tensor cores (fused/scan.cuh) by default: `no_scan` runs
# the tensor-core walk there (GKNN_FUSED_SCAN=0), as `own_threshold` does (the splits' shared thresholds matter most
# with few queries).
if(GKNN_HAS_CUDA)
  gknn_test(gpu_fused LABEL gpu SOURCES gpu_fused_test.cpp)
  gknn_test_part(gpu_fused no_scan "*")
  set_tests_properties(gpu_fused_no_scan PROPERTIES ENVIRONMENT GKNN_FUSED_SCAN=0)
  gknn_test_part(gpu_fused own_threshold "*")
  set_tests_properties(gpu_fused_own_threshold PROPERTIES ENVIRONMENT "GKNN_FUSED_SHARED_THRESHOLD=0;GKNN_FUSED_SCAN=0")
  gknn_test_part(gpu_fused wide "*")
  set_tests_properties(gpu_fused_wide PROPERTIES ENVIRONMENT GKNN_FUSED_MEDIUM=0)
  gknn_test_part(gpu_fused two_barriers "*")
  set_tests_properties(gpu_fused_two_barriers PROPERTIES ENVIRONMENT GKNN_FUSED_ONE_BARRIER=0)
endif()
