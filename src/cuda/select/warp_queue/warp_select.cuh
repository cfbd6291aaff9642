// warp_select.cuh: host-side interface of warp_select and block_select (FAISS' WarpSelect / BlockSelect).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/select/select.cuh"

namespace gknn::detail::cuda {

/// Explicitly instantiated once per bucket by the units buckets.cmake generates (warp_select_kNNNN.cu, ...).
template <int K>
void warp_select_launch(const RowsLaunch& launch);
template <int K>
void block_select_launch(const RowsLaunch& launch);

/// Runs warp_select (block == false) or block_select for any k <= 2048.
void warp_queue_family_run(bool block, const SelectInput& in, int64_t k, const SelectOutput& out,
                           const SelectContext& ctx);

}  // namespace gknn::detail::cuda
