// kernels.cuh: the run functions of the distance kernels (each defined in its own folder), for registry.cu.
#pragma once

#include "cuda/distance/distance.cuh"

namespace gknn::cuda_detail {

void naive_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx);
void shared_reduce_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx);
void atomic_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx);
void garcia_global_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx);
/// Falls back to garcia_global_distance when the base tile exceeds the device's linear-texture limits.
void garcia_texture_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx);
void cublas_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx);
size_t cublas_workspace(int64_t nq, int64_t nb, int64_t dim);
void fp16_mma_distance(const DistanceInput& in, const DistanceOutput& out, const DistanceContext& ctx);
size_t fp16_mma_workspace(int64_t nq, int64_t nb, int64_t dim);
bool fp16_mma_exact_on(const DataFacts& facts);

}  // namespace gknn::cuda_detail
