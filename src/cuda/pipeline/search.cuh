// search.cuh: the tiled search pipeline — queries and base in tiles under a memory budget, exact top-k merge.
//
// For each query tile (outer loop) and each base tile (inner loop):
//   distance kernel -> tile keys (query rows x base rows), on the compute stream
//   selector        -> top min(k, tile rows) per query of the tile, labels = tile offset + column
//   merge           -> with the running top-k of the query tile (merge.cuh), exact in the total order
// The query tile's running list is then copied to pinned host memory while the next query tile computes.
// Uploads (next query tile, next base tile when streamed) run on a second stream (staging.cuh).
#pragma once

#include <memory>

#include "core/backend.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/pipeline/plan.cuh"
#include "cuda/pipeline/stage_timer.cuh"

namespace gknn::cuda_detail {

/// What a search's tiling depends on: a search with the same key reuses the previous search's buffers.
struct PlanKey {
  int64_t nq = 0, nb = 0, dim = 0, k = 0;
  Metric metric = Metric::SquaredL2;
  DistanceAlgorithm distance = DistanceAlgorithm::Auto;
  SelectAlgorithm select = SelectAlgorithm::Auto;
  size_t memory_budget = 0;
  bool operator==(const PlanKey&) const = default;
};

/// Device state kept between searches (an Index keeps one): streams, scratch, tile buffers.
struct Pipeline {
  explicit Pipeline(int device_ordinal);
  /// Keeps the buffers for a search shaped like the previous one; otherwise frees them first, so that the next
  /// plan sees the device's whole free memory (buffers only grow, and a held 40 GB tile would shrink the budget).
  void prepare_for(const PlanKey& key);
  /// Frees every tile buffer and scratch (streams stay).
  void release_buffers();
  int device;
  Stream compute;
  Stream upload;
  Workspace distance_workspace;
  Workspace select_workspace;
  DeviceBuffer<float> distances;  ///< one query tile x base tile of keys
  DeviceBuffer<float> query_norms, base_norms;
  DeviceBuffer<float> list_keys[5];  ///< [2s], [2s+1]: running/merged lists of query slot s; [4]: tile list
  DeviceBuffer<int64_t> list_labels[5];
  PlanKey last_key;
  bool has_last_key = false;
};

/// Base rows of one tile on the device, ready on the compute stream.
struct DeviceRows {
  const float* rows = nullptr;
  int64_t stride = 0;
  const float* norms = nullptr;  ///< squared norms when the source keeps them, else null
};

/// Where base tiles come from: a resident device copy, or the host (streamed tile by tile).
class BaseSource {
 public:
  virtual ~BaseSource() = default;
  virtual int64_t rows() const = 0;
  virtual bool streamed() const = 0;
  virtual DeviceRows tile(int64_t begin, int64_t count, cudaStream_t compute) = 0;
  /// Work enqueued so far on compute is the last to read the latest tile.
  virtual void release(cudaStream_t compute) = 0;
};

class ResidentBase final : public BaseSource {
 public:
  ResidentBase(const float* rows, int64_t count, int64_t dim, const float* norms)
      : rows_(rows), count_(count), dim_(dim), norms_(norms) {}
  int64_t rows() const override { return count_; }
  bool streamed() const override { return false; }
  DeviceRows tile(int64_t begin, int64_t, cudaStream_t) override {
    return {rows_ + begin * dim_, dim_, norms_ ? norms_ + begin : nullptr};
  }
  void release(cudaStream_t) override {}

 private:
  const float* rows_;
  int64_t count_, dim_;
  const float* norms_;
};

/// The base source of a one-shot search: the whole base uploaded once (with its norms) when it fits in half of
/// `*budget` and no base tile is forced (hooks.hpp), else streamed from the host tile by tile. A resident copy's
/// bytes are taken off `*budget`.
std::unique_ptr<BaseSource> make_base_source(Pipeline& p, FloatView base, size_t* budget);

/// Runs a search of validated key-form input (core/backend.hpp) against `base`.
detail::KeyResult run_search(Pipeline& p, BaseSource& base, FloatView queries, const SearchParams& key_params,
                     size_t budget);

/// Copies host rows (any stride) into `dst` (device, stride = cols) through pinned staging; synchronous.
void upload_rows(Pipeline& p, FloatView rows, float* dst);

}  // namespace gknn::cuda_detail
