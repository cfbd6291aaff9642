// gemm_keys.cuh: keys from one cuBLAS GEMM with the squared-norm term folded in, no pass over the key matrix.
//
// Rows are copied into an augmented layout in the distance workspace, so that one GEMM gives the key directly:
//   squared L2: query' = [-2q, 1],  base' = [x, |x|^2]   ->  query'.base' = |x|^2 - 2 q.x   (|q|^2 added by the
//               finaliser: a constant per query row changes no ranking);
//   inner product: query' = -q, base' = x                ->  -q.x.
// In fp16, |x|^2 (an integer below 2^24) does not fit one half: it is split into 11-bit pieces,
//   base' = [x, lo, mid, hi * 2048],  query' = [-2q, 1, 2048, 2048],  |x|^2 = lo + 2048 mid + 2^22 hi,
// every piece and factor exactly representable in fp16 and every product exact in fp32.
// Exactness of the fp16 path (integer data, M = max |value|, d = dimension): fp16 holds every integer up to
// 2048 and 2q up to 4096 exactly; tensor cores multiply exactly and accumulate in fp32, which is exact while
// every partial sum stays below 2^24 in magnitude. A partial sum is bounded by the sum of the terms' magnitudes:
// 2 d M^2 + d M^2 in general and 2 d M^2 for non-negative data (the -2 q x terms and the norm pieces have
// opposite signs), and the final distance by 4 d M^2 (d M^2 for non-negative data). fp16_exact() checks these.
// Tf32 (any float data; the exactness guard re-ranks its keys, core/guard.hpp): the values rounded to TF32 (10
// mantissa bits) by the augment kernel, the base norm split exactly into three TF32 pieces (tf32_split.hpp):
//   query' = [tf32(v), 1, 1, 1],  base' = [tf32(x), n0, n1, n2].
// On integer data with |x| <= 2048 every value is a TF32 value and the keys are exact under fp16_exact()'s bound.
// Tf32x3 (split-precision TF32, any float data): each operand value v is big(v) + small(v) in TF32 (tf32_split.hpp),
// and one TF32 GEMM over three times the dimension forms big.big + big.small + small.big:
//   query' = [big(v), big(v), small(v), 1, 1, 1],  base' = [big(x), small(x), big(x), n0, n1, n2],
// v = -2q (squared L2; -q for the inner product, without the norm columns), |x|^2 = n0 + n1 + n2 exactly. Its error
// is float32 SGEMM's with three times the terms (the bound is in tf32_split.hpp), not TF32's 2^-10.
#pragma once

#include <cuda_fp16.h>

#include "cuda/distance/distance.cuh"

namespace gknn::detail::cuda {

enum class GemmPrecision { Fp32, Fp16, Tf32, Tf32x3 };

/// Columns of an augmented row (padded for aligned tensor-core loads).
int64_t augmented_dim(int64_t dim, GemmPrecision precision);
/// Workspace of gemm_keys for an nq x nb tile.
size_t gemm_keys_workspace(int64_t nq, int64_t nb, int64_t dim, GemmPrecision precision);
/// True when the fp16 path is exact on data with these facts (bounds above).
bool fp16_exact(const DataFacts& facts);
/// Writes the keys of in.metric (SquaredL2 without |q|^2, or InnerProduct) with one GEMM.
void gemm_keys(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx,
               GemmPrecision precision);

}  // namespace gknn::detail::cuda
