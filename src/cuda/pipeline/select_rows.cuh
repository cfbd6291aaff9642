// select_rows.cuh: select_k on the device — host rows uploaded in row tiles, or a device view read where it is;
// each tile selected, and either copied back as keys (run_select) or finalised on the device into the caller's
// host or device storage (run_select_into, through the search's ResultWriter).
#pragma once

#include "cuda/pipeline/search.cuh"

namespace gknn::detail::cuda {

/// Ascending top-k of every row of `keys` (host; labels optional with the same row stride), 1 <= k <= cols.
Result run_select(Pipeline& p, FloatView keys, const int64_t* labels, int64_t k, const SelectParams& params,
                  size_t budget);

/// Top-k of every row of `values` (host or device view; labels in the same memory with the same row stride, or
/// null), ascending, or descending when `negate` (each tile negated on the device first, with the row stride of
/// its labels), finalised on the device (out.metric, out.k >= k padded) and written through `out`.
/// 1 <= k <= cols; values hold no NaN.
void run_select_into(Pipeline& p, FloatView values, const int64_t* labels, int64_t k, bool negate,
                     const SelectParams& params, size_t budget, const OutputSpec& out);

}  // namespace gknn::detail::cuda
