// families.cuh: the run/workspace functions of every selection family (each defined in its own folder).
// A family declares its functions here and lists them in its entries.inc; registry.cu includes all entries.
#pragma once

#include "cuda/select/select.cuh"

namespace gknn::cuda_detail {

#define GKNN_DECLARE_SELECT(name)                                                                   \
  void name##_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx); \
  size_t name##_workspace(int64_t rows, int64_t cols, int64_t k);

GKNN_DECLARE_SELECT(insertion)
GKNN_DECLARE_SELECT(segmented_sort)
GKNN_DECLARE_SELECT(partial_bitonic)
GKNN_DECLARE_SELECT(warp_select)
GKNN_DECLARE_SELECT(block_select)
GKNN_DECLARE_SELECT(bits)
GKNN_DECLARE_SELECT(bits_global)
GKNN_DECLARE_SELECT(insertion_queue)
GKNN_DECLARE_SELECT(heap_queue)
GKNN_DECLARE_SELECT(merge_queue)
GKNN_DECLARE_SELECT(sample_select)
GKNN_DECLARE_SELECT(radix_select)

#undef GKNN_DECLARE_SELECT

}  // namespace gknn::cuda_detail
