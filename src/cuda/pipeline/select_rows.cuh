// select_rows.cuh: select_k on host rows — row tiles uploaded, selected on the device, copied back.
#pragma once

#include "cuda/pipeline/search.cuh"

namespace gknn::detail::cuda {

/// Ascending top-k of every row of `keys` (host; labels optional with the same row stride), 1 <= k <= cols.
Result run_select(Pipeline& p, FloatView keys, const int64_t* labels, int64_t k, const SelectParams& params,
                  size_t budget);

}  // namespace gknn::detail::cuda
