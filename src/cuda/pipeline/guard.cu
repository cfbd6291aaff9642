// guard.cu: the exactness guard's primitives for rows in device memory (core/backend.hpp, core/guard.hpp): the
// float64 keys of a search's candidates computed where the base lives (one thread per (query, candidate),
// exact_key.cuh: bit-identical to the host's), the base's largest row norm, and the copies between host and device
// a guarded search of device views makes (its queries down, its result up). The certificate taken inside a search
// (no candidates to the host) is certify.cu's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/device_scope.cuh"
#include "cuda/common/error.cuh"
#include "cuda/common/idle_pool.hpp"
#include "cuda/hooks.hpp"
#include "cuda/pipeline/certify.cuh"
#include "cuda/pipeline/exact_key.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxPairsPerChunk = int64_t(1) << 24;  // 128 MiB of float64 keys, 128 MiB of ids

unsigned blocks_for(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, int64_t(1) << 16));
}

/// out[e] for e = i * kc + j: the key of (query i, base row ids[e]); 0 where ids[e] < 0.
__global__ void exact_keys_kernel(const float* __restrict__ base, int64_t base_stride, int64_t dim,
                                  const float* __restrict__ queries, const int64_t* __restrict__ ids, int64_t pairs,
                                  int64_t kc, Metric metric, double p, double* __restrict__ out) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < pairs; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t id = ids[e];
    out[e] = id < 0 ? 0.0 : exact_key(metric, p, queries + (e / kc) * dim, base + id * base_stride, dim);
  }
}

/// Row i of `part` (k entries) to row rows[i] of the destination.
__global__ void scatter_rows_kernel(const float* __restrict__ values, const int64_t* __restrict__ indices,
                                    const int64_t* __restrict__ rows, int64_t count, int64_t k,
                                    float* __restrict__ dest_values, int64_t* __restrict__ dest_indices) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count * k; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t to = rows[e / k] * k + e % k;
    dest_values[to] = values[e];
    dest_indices[to] = indices[e];
  }
}

/// The device buffers of the guard's calls, per device, kept between calls (grow-only): a repeated guarded search
/// allocates nothing once the first has run, as the pipeline's own buffers.
struct GuardScratch {
  DeviceBuffer<float> queries;  ///< also the values of scatter_rows
  DeviceBuffer<int64_t> ids;    ///< also the indices of scatter_rows
  DeviceBuffer<int64_t> rows;   ///< the destination rows of scatter_rows
  DeviceBuffer<double> keys;
  DeviceBuffer<unsigned long long> word{1};
};

class ScratchLease {
 public:
  explicit ScratchLease(int device) : device_(device) {
    if (auto idle = idle_pool<std::unique_ptr<GuardScratch>>().take(device))
      scratch_ = std::move(*idle);
    else
      scratch_ = std::make_unique<GuardScratch>();  // the current device is `device`: its memory
  }
  ~ScratchLease() { idle_pool<std::unique_ptr<GuardScratch>>().give(device_, scratch_); }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  GuardScratch* operator->() const { return scratch_.get(); }

 private:
  int device_;
  std::unique_ptr<GuardScratch> scratch_;
};

}  // namespace

void release_guard_scratch() { idle_pool<std::unique_ptr<GuardScratch>>().drain(); }

std::vector<float> download_rows(FloatView rows) {
  std::vector<float> out(static_cast<size_t>(rows.rows * rows.cols));
  if (out.empty()) return out;
  const auto [device, data] = device_address(rows.data, "queries");
  DeviceScope scope(device);
  GKNN_CUDA_TRY(cudaMemcpy2D(out.data(), static_cast<size_t>(rows.cols) * sizeof(float), data,
                             static_cast<size_t>(rows.row_stride()) * sizeof(float),
                             static_cast<size_t>(rows.cols) * sizeof(float), static_cast<size_t>(rows.rows),
                             cudaMemcpyDeviceToHost));
  return out;
}

std::vector<double> exact_keys(FloatView base, FloatView queries, const KeyResult& candidates, Metric key_metric,
                               double p) {
  const int64_t pairs = candidates.rows * candidates.k, dim = base.cols;
  std::vector<double> out(static_cast<size_t>(pairs));
  if (pairs == 0) return out;
  const auto [device, rows] = device_address(base.data, "base");
  DeviceScope scope(device);
  // Chunks of query rows bound the device memory (a retry may take every row as a candidate).
  const int64_t kc = candidates.k, chunk = std::max<int64_t>(1, kMaxPairsPerChunk / kc);
  const int64_t chunk_rows = std::min(chunk, queries.rows), chunk_pairs = chunk_rows * kc;
  ScratchLease scratch(device);
  DeviceBuffer<float>& q = scratch->queries;
  DeviceBuffer<int64_t>& ids = scratch->ids;
  DeviceBuffer<double>& keys = scratch->keys;
  q.resize(static_cast<size_t>(chunk_rows * dim));
  ids.resize(static_cast<size_t>(chunk_pairs));
  keys.resize(static_cast<size_t>(chunk_pairs));
  for (int64_t r0 = 0; r0 < queries.rows; r0 += chunk_rows) {
    const int64_t nr = std::min(chunk_rows, queries.rows - r0), np = nr * kc;
    GKNN_CUDA_TRY(cudaMemcpy2D(q.data(), static_cast<size_t>(dim) * sizeof(float), queries.row(r0),
                               static_cast<size_t>(queries.row_stride()) * sizeof(float),
                               static_cast<size_t>(dim) * sizeof(float), static_cast<size_t>(nr),
                               cudaMemcpyHostToDevice));
    GKNN_CUDA_TRY(cudaMemcpy(ids.data(), candidates.indices.data() + r0 * kc, static_cast<size_t>(np) * sizeof(int64_t),
                             cudaMemcpyHostToDevice));
    exact_keys_kernel<<<blocks_for(np), kThreads>>>(rows, base.row_stride(), dim, q.data(), ids.data(), np, kc,
                                                    key_metric, p, keys.data());
    GKNN_CUDA_CHECK_LAUNCH();
    GKNN_CUDA_TRY(cudaMemcpy(out.data() + r0 * kc, keys.data(), static_cast<size_t>(np) * sizeof(double),
                             cudaMemcpyDeviceToHost));
  }
  return out;
}

double max_row_norm(FloatView m) {
  if (m.rows == 0) return 0;
  const auto [device, rows] = device_address(m.data, "base");
  DeviceScope scope(device);
  ScratchLease scratch(device);
  DeviceBuffer<unsigned long long>& best = scratch->word;
  GKNN_CUDA_TRY(cudaMemset(best.data(), 0, sizeof(unsigned long long)));
  launch_max_square_norm(rows, m.rows, m.row_stride(), m.cols, best.data(), nullptr);
  unsigned long long bits = 0;
  GKNN_CUDA_TRY(cudaMemcpy(&bits, best.data(), sizeof bits, cudaMemcpyDeviceToHost));
  double squares = 0;
  static_assert(sizeof squares == sizeof bits);
  std::memcpy(&squares, &bits, sizeof bits);
  return std::sqrt(squares) * (1 + 1e-12);  // float64 sums: a relative error far below the guard's factor 2
}

void upload_result(const Result& result, const ResultView& dest) {
  const size_t entries = static_cast<size_t>(result.rows * result.k);
  if (entries == 0) return;
  DeviceScope scope(device_address(dest.distances, "result distances").first);
  GKNN_CUDA_TRY(cudaMemcpy(dest.distances, result.distances.data(), entries * sizeof(float), cudaMemcpyHostToDevice));
  GKNN_CUDA_TRY(cudaMemcpy(dest.indices, result.indices.data(), entries * sizeof(int64_t), cudaMemcpyHostToDevice));
}

void scatter_rows(const Result& part, const std::vector<int64_t>& rows, const ResultView& dest) {
  const int64_t count = part.rows, k = dest.k, entries = count * k;
  if (entries == 0) return;
  const auto device = device_address(dest.distances, "result distances").first;
  DeviceScope scope(device);
  ScratchLease scratch(device);
  scratch->queries.resize(static_cast<size_t>(entries));
  scratch->ids.resize(static_cast<size_t>(entries));
  scratch->rows.resize(static_cast<size_t>(count));
  GKNN_CUDA_TRY(cudaMemcpy(scratch->queries.data(), part.distances.data(), static_cast<size_t>(entries) * sizeof(float),
                           cudaMemcpyHostToDevice));
  GKNN_CUDA_TRY(cudaMemcpy(scratch->ids.data(), part.indices.data(), static_cast<size_t>(entries) * sizeof(int64_t),
                           cudaMemcpyHostToDevice));
  GKNN_CUDA_TRY(cudaMemcpy(scratch->rows.data(), rows.data(), static_cast<size_t>(count) * sizeof(int64_t),
                           cudaMemcpyHostToDevice));
  scatter_rows_kernel<<<blocks_for(entries), kThreads>>>(scratch->queries.data(), scratch->ids.data(),
                                                         scratch->rows.data(), count, k, dest.distances, dest.indices);
  GKNN_CUDA_CHECK_LAUNCH();
  GKNN_CUDA_TRY(cudaStreamSynchronize(nullptr));  // the destination is complete when the search returns
}

}  // namespace gknn::detail::cuda
