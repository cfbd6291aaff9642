// select_rows.cuh: select_k on the device — host rows uploaded in row tiles, or a device view read where it is;
// each tile selected and finalised on the device into the caller's host or device storage (through the search's
// ResultWriter).
#pragma once

#include "cuda/pipeline/search.cuh"

namespace gknn::detail::cuda {

/// Top-k of every row of `values` (host or device view; labels in the same memory with the same row stride, or
/// null), ascending, or descending when `negate` (each tile negated on the device first, with the row stride of
/// its labels), finalised on the device (out.metric, out.k >= k padded) and written through `out`.
/// 1 <= k <= cols; values hold no NaN.
void run_select_into(Pipeline& p, FloatView values, const int64_t* labels, int64_t k, bool negate,
                     const SelectParams& params, size_t budget, const OutputSpec& out);

}  // namespace gknn::detail::cuda
