# buckets.cmake: one translation unit per k-bucket of every bucketed selection kernel, generated from
# bucket.cu.in (one small unit per bucket keeps the long kernel compilations parallel).
#
# gknn_bucket_units(<out var> <unit> <kernel header> <macro> <list file> <list name>): <kernel header> defines the
# kernel templates and <macro>(K), which instantiates bucket K. The buckets are read from the line
# "using <list name> = BucketList<...>;" of <list file> (the family's tuning.hpp), so C++ and CMake share one list.
function(gknn_bucket_units out_var unit header macro list_file list_name)
  set(source_dir ${PROJECT_SOURCE_DIR}/src)
  file(STRINGS ${source_dir}/${list_file} declaration REGEX "using ${list_name} = BucketList<")
  if(NOT declaration MATCHES "BucketList<([0-9, ]+)>")
    message(FATAL_ERROR "${list_file}: no 'using ${list_name} = BucketList<...>;' line")
  endif()
  string(REPLACE "," ";" buckets "${CMAKE_MATCH_1}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source_dir}/${list_file})
  set(units)
  foreach(bucket ${buckets})
    string(STRIP "${bucket}" GKNN_BUCKET_K)
    string(LENGTH "${GKNN_BUCKET_K}" digits)
    math(EXPR pad "4 - ${digits}")
    string(REPEAT "0" ${pad} zeros)
    set(GKNN_BUCKET_UNIT ${unit})
    set(GKNN_BUCKET_HEADER ${header})
    set(GKNN_BUCKET_MACRO ${macro})
    set(GKNN_BUCKET_LIST ${list_name})
    set(GKNN_BUCKET_LIST_FILE src/${list_file})
    set(file ${CMAKE_CURRENT_BINARY_DIR}/generated/buckets/${unit}_k${zeros}${GKNN_BUCKET_K}.cu)
    configure_file(${source_dir}/cuda/select/bucket.cu.in ${file} @ONLY)
    list(APPEND units ${file})
  endforeach()
  set(${out_var} ${${out_var}} ${units} PARENT_SCOPE)
endfunction()

# The bucketed kernels: unit name, kernel header, instantiation macro, and where the bucket list lives.
set(GKNN_BUCKET_SOURCES)
gknn_bucket_units(GKNN_BUCKET_SOURCES warp_select cuda/select/warp_queue/warp_queue_kernel.cuh
                  GKNN_WARP_SELECT_BUCKET cuda/select/warp_queue/tuning.hpp WarpQueueBuckets)
gknn_bucket_units(GKNN_BUCKET_SOURCES block_select cuda/select/warp_queue/warp_queue_kernel.cuh
                  GKNN_BLOCK_SELECT_BUCKET cuda/select/warp_queue/tuning.hpp WarpQueueBuckets)
gknn_bucket_units(GKNN_BUCKET_SOURCES partial_bitonic cuda/select/partial_bitonic/partial_bitonic_kernel.cuh
                  GKNN_PARTIAL_BITONIC_BUCKET cuda/select/partial_bitonic/tuning.hpp PartialBitonicBuckets)
gknn_bucket_units(GKNN_BUCKET_SOURCES bits cuda/select/bits/bits_kernel.cuh GKNN_BITS_BUCKET
                  cuda/select/bits/tuning.hpp BitsBuckets)
gknn_bucket_units(GKNN_BUCKET_SOURCES bits_global cuda/select/bits/bits_kernel.cuh GKNN_BITS_GLOBAL_BUCKET
                  cuda/select/bits/tuning.hpp BitsGlobalBuckets)
