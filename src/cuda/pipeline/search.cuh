// search.cuh: the tiled search pipeline — queries and base in tiles under a memory budget, exact top-k merge.
//
// For each query tile (outer loop) and each base tile (inner loop):
//   distance kernel -> tile keys (query rows x base rows), on the compute stream
//   selector        -> top min(k, tile rows) per query of the tile, labels = tile offset + column
//   merge           -> with the running top-k of the query tile (merge.cuh), exact in the total order
// The query tile's running list is then finalised on the device (finalize.cuh: values in the user's metric, tie
// order, padding, ids) and written once into the caller's storage (result_writer.cuh), the host copy-out of a
// tile overlapping the next tile's work. Uploads (next query tile, next base tile when streamed) run on a
// second stream (staging.cuh). Buffers are kept by the Pipeline between searches and only grow, so repeated
// searches of any shape that fits allocate nothing.
#pragma once

#include <memory>

#include "cuda/distance/distance.cuh"

#include "core/backend.hpp"
#include "cuda/common/buffer.cuh"
#include "cuda/pipeline/plan.cuh"
#include "cuda/pipeline/result_writer.cuh"
#include "cuda/pipeline/stage_timer.cuh"
#include "cuda/pipeline/staging.cuh"

namespace gknn::detail::cuda {

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
  /// A search shaped like the previous one reuses its plan and budget (no cudaMemGetInfo, no planning).
  /// Returns true when the key is new.
  bool prepare_for(const PlanKey& key);
  /// Frees every tile buffer and scratch (streams stay).
  void release_buffers();
  /// Device bytes held by the tile buffers (counted as available by the next plan: they are reused).
  size_t held_bytes() const;
  /// Device bytes of the kernels' scratch (distance and selection workspaces): not counted by held_bytes, since a
  /// plan does not reuse them, but held until released.
  size_t scratch_bytes() const;
  /// Pinned and device bytes of the staging slots (query, select_k's labels and results).
  size_t staging_bytes() const;
  /// Frees the staging slots (streams synchronised first).
  void release_staging();
  int device;
  Stream compute;
  Stream upload;
  Stream download;  ///< a query tile's results to the host, beside the next tile's kernels (ResultWriter::commit)
  Workspace distance_workspace;
  Workspace select_workspace;
  DeviceBuffer<float> distances;  ///< one query tile x base tile of keys
  DeviceBuffer<float> query_norms, base_norms;
  /// Squared norms of a device-view base (one-shot search of a caller's device rows), computed at its first tile,
  /// after the tiles are planned and sized (release_buffers frees them with the tile buffers).
  DeviceBuffer<float> view_norms;
  DeviceBuffer<float> list_keys[5];  ///< [2s], [2s+1]: running/merged lists of query slot s; [4]: tile list
  DeviceBuffer<int64_t> list_labels[5];
  StagingSlots<float> query_slots;  ///< pinned + device slots of the query uploads (and of select_k's keys)
  /// ... of queries uploaded as bytes (query_bytes.cuh; widened into query_slots' device buffers)
  StagingSlots<uint8_t> query_byte_slots;
  StagingSlots<int64_t> label_slots;  ///< pinned + device slots of select_k's labels
  OutputSlot out_slots[kOutputSlots];  ///< finalised tiles on their way to a host destination
  // The exactness guard's certificate taken in the search (OutputSpec::certificate, certify.cuh):
  DeviceBuffer<unsigned char> certified;  ///< one flag per query of the search
  DeviceBuffer<unsigned long long> max_norm_bits;  ///< the base's largest squared norm (launch_max_square_norm)
  DeviceBuffer<double> exact_keys;  ///< DeviceCertificate::exact_into: queries x k float64 keys of the search
  DeviceBuffer<int64_t> exact_rows;  ///< ... and their rows
  PinnedBuffer<unsigned char> download_ring;  ///< two pinned slots their download goes through (download_staged)
  DeviceBuffer<int64_t> ids;        ///< user ids of an Index (add_with_ids), uploaded when they change
  const int64_t* ids_source = nullptr;
  int64_t ids_count = 0;
  PlanKey last_key;
  bool has_last_key = false;
  size_t last_budget = 0;
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
  /// The operand copy a fused kernel may keep of this base between searches; null for a base that lives for
  /// one search (its copy would be converted once and read once: no gain).
  virtual OperandCache* operand_cache() { return nullptr; }
};

class ResidentBase final : public BaseSource {
 public:
  /// `cache`: the owner's kept operand copy of these rows (it invalidates it when they change), or null.
  ResidentBase(const float* rows, int64_t count, int64_t dim, const float* norms, OperandCache* cache = nullptr)
      : rows_(rows), count_(count), dim_(dim), norms_(norms), cache_(cache) {}
  int64_t rows() const override { return count_; }
  bool streamed() const override { return false; }
  DeviceRows tile(int64_t begin, int64_t, cudaStream_t) override {
    return {rows_ + begin * dim_, dim_, norms_ ? norms_ + begin : nullptr};
  }
  void release(cudaStream_t) override {}
  OperandCache* operand_cache() override { return cache_; }

 private:
  const float* rows_;
  int64_t count_, dim_;
  const float* norms_;
  OperandCache* cache_;
};

/// The base source of a one-shot search: a device view used where it is (norms computed once), else the whole
/// base uploaded once (with its norms) when it fits in half of `*budget` and no base tile is forced (hooks.hpp),
/// else streamed from the host tile by tile. A device copy's bytes are taken off `*budget`.
std::unique_ptr<BaseSource> make_base_source(Pipeline& p, FloatView base, size_t* budget);

/// Runs a search of validated key-form input (core/backend.hpp) against `base` and writes the finalised result
/// through `out`. `queries` may be a host or a device view; `facts` describe base and queries together.
/// A base with an operand cache gets it sized for a fused search where it fits half of `budget` (its bytes are
/// then taken off the budget of the tiles) and the search converts only the queries when the cache is filled.
void run_search(Pipeline& p, BaseSource& base, FloatView queries, const SearchParams& key_params, size_t budget,
                const DataFacts& facts, const detail::OutputSpec& out);

/// The device memory a search on `p` may plan with: the caller's budget, else a share of the free memory plus
/// what the pipeline already holds (its buffers are reused or released first).
size_t pipeline_budget(const Pipeline& p, size_t requested);

/// run_search, planned again within half the budget each time one of its device allocations fails for want of
/// memory (the pipeline's buffers and gknn's kept blocks freed first), down to kSmallestRetryBudget, below which the
/// OutOfMemory error stands. Returns the budget the search ran within, for the caller to keep for the searches of
/// the same shape. (Memory the plan does not see, another process's or a kernel's own, must not fail a search that
/// smaller tiles can do; H200, a sweep of 4M x 10000 x 960: a 49 GB key matrix failed with 39 GB free.)
size_t run_search_within_memory(Pipeline& p, BaseSource& base, FloatView queries, const SearchParams& key_params,
                                size_t budget, const DataFacts& facts, const detail::OutputSpec& out);
constexpr size_t kSmallestRetryBudget = size_t(16) << 20;

/// A Pipeline borrowed for one one-shot call from a per-device cache, so that repeated calls create no streams
/// or events and allocate no pinned or device memory when their tiles fit the buffers left by the previous call.
/// Buffers over kKeptPipelineBytes, and staging slots over kKeptStagingBytes, are released on return (a large
/// call keeps neither device nor pinned memory); one-shot searches with an automatic budget plan within it
/// (kOneShotPlanBytes), so only an explicit SearchParams::memory_budget above it gets released.
class PipelineLease {
 public:
  explicit PipelineLease(int device);
  ~PipelineLease();
  PipelineLease(const PipelineLease&) = delete;
  PipelineLease& operator=(const PipelineLease&) = delete;
  Pipeline& operator*() const { return *p_; }
  Pipeline* operator->() const { return p_.get(); }

 private:
  int device_;
  std::unique_ptr<Pipeline> p_;
};
constexpr size_t kKeptPipelineBytes = size_t(1) << 30;
constexpr size_t kKeptStagingBytes = size_t(256) << 20;
/// The automatic budget of a one-shot search's tiles (cuda::search_into): within kKeptPipelineBytes, so that its
/// buffers are kept for the next call. (The plan's estimate of scratch is an upper bound of what kernels take.)
constexpr size_t kOneShotPlanBytes = kKeptPipelineBytes;

/// Copies host rows (any stride) into `dst` (device, stride = cols) through pinned staging; synchronous.
void upload_rows(Pipeline& p, FloatView rows, float* dst);

}  // namespace gknn::detail::cuda
