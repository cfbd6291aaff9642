// resident.cu: the device-resident database of a CUDA Index.
//
// Rows and their squared norms (for the cuBLAS distance) live in device buffers that grow geometrically, so a
// database added in many small batches costs amortised O(1) copies per row; they come from gknn's device pool
// (buffer.cuh PooledDeviceBuffer), which keeps a freed Index's blocks for the next add. Host rows come up chunk by
// chunk through the process's kept pinned slots (upload.cuh; their pack starts before the buffers grow), each chunk's
// norms and value scan (Index::add scans host rows here, on the device, not in a host pass) and, for 8-bit rows,
// its conversion to floats running on the device while the next chunk is copied. Searches run the tiled pipeline
// on the resident rows (no base upload); the pipeline's streams and scratch are kept between searches, and so is
// the fused kernel's operand copy of the rows (OperandCache: n x 32..256 bytes, e.g. n x d for 8-bit data, made by
// the first fused search where it fits half of the search's memory budget), freed whenever the rows change.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string_view>

#include "cuda/common/device.cuh"
#include "cuda/distance/distance.cuh"
#include "cuda/pipeline/resident.cuh"
#include "cuda/pipeline/search.cuh"
#include "cuda/pipeline/upload.cuh"
#include "cuda/pipeline/value_scan.cuh"

namespace gknn::detail::cuda {
namespace {

constexpr int64_t kMinCapacityRows = 1024;

class CudaStore final : public detail::ResidentStore {
 public:
  CudaStore(int64_t dim, int device) : dim_(dim), device_(device) { use_device(device); }

  void append(FloatView rows, const detail::ValueStats& stats) override { store_rows(rows, &stats, {}); }

  detail::ValueStats append_unscanned(FloatView rows, std::string_view what) override {
    if (rows.memory == Memory::Device) return ResidentStore::append_unscanned(rows, what);  // scanned, then stored
    return store_rows(rows, nullptr, what);
  }

  detail::ValueStats append_bytes(ByteView rows, std::string_view what) override {
    if (rows.rows == 0) return detail::ValueStats{};
    std::lock_guard<std::mutex> lock(mutex_);
    use_device(device_);
    // Packing starts here (upload.cuh).
    HostUpload upload(
        HostRows{rows.data, rows.rows, static_cast<size_t>(dim_), static_cast<size_t>(rows.row_stride())});
    Pipeline& p = pipeline();
    const cudaStream_t compute = p.compute.get();
    // The bytes go up (a quarter of the floats' bytes) into the upload's device slots; each chunk is converted into
    // its place, its norms and value facts taken, while the next one is copied. The facts are those of the floats,
    // as for an add of the same rows as floats.
    ChunkedValueScan scan(rows.rows, dim_, compute);
    float *dst = nullptr, *norms = nullptr;
    upload.run(
        nullptr, p.upload.get(), compute,
        [&](const UploadChunk& c) {
          float* d = dst + c.first_row * dim_;
          convert_bytes_to_floats(static_cast<const unsigned char*>(c.device), c.rows * dim_, d, compute);
          row_squared_norms(d, c.rows, dim_, dim_, norms + c.first_row, compute);
          scan.add(d, c.first_row, c.rows, dim_, compute);
        },
        [&]() -> void* {
          grow_for_append(rows.rows, &dst, &norms);
          load_byte_conversion();  // not at its first launch, between two copies
          return nullptr;          // each chunk converted from its device slot
        });
    return timed_commit(p, rows.rows, nullptr, &scan, what);
  }

  void clear() override {
    std::lock_guard<std::mutex> lock(mutex_);
    use_device(device_);
    if (pipeline_) pipeline_->release_buffers();
    operands_ = OperandCache();
    rows_ = PooledDeviceBuffer<float>();
    norms_ = PooledDeviceBuffer<float>();
    size_ = capacity_ = 0;
    stats_ = detail::ValueStats{};
    max_norm_ = -1;
  }

  int64_t size() const override { return size_; }

  detail::ValueStats facts() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  std::vector<double> exact_keys(FloatView queries, const detail::KeyResult& candidates, Metric key_metric, double p,
                                 int /*threads*/) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return cuda::exact_keys(view(), queries, candidates, key_metric, p);
  }

  double max_row_norm() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (max_norm_ < 0) max_norm_ = cuda::max_row_norm(view());
    return max_norm_;
  }

  void search_into(FloatView queries, const SearchParams& key_params, const detail::ValueStats& query_stats,
                   const detail::OutputSpec& out) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    use_device(device_);
    ResidentBase base(rows_.data(), size_, dim_, norms_.data(), &operands_);
    Pipeline& p = pipeline();
    // The budget of a search shaped like the previous one is reused: no cudaMemGetInfo on repeated calls. A new
    // shape plans afresh, after the last shape's large buffers are gone: its kernels' scratch, which the budget
    // does not count as reusable, would otherwise sit beside the new tiles.
    const PlanKey key{queries.rows, size_, dim_, key_params.k, key_params.metric, key_params.distance,
                      key_params.select, key_params.memory_budget};
    if (p.prepare_for(key)) {
      if (p.held_bytes() + p.scratch_bytes() > kKeptPipelineBytes) {
        p.release_buffers();
        p.prepare_for(key);  // (release_buffers forgets the key)
      }
      p.last_budget = pipeline_budget(p, key_params.memory_budget);
    }
    p.last_budget = run_search_within_memory(p, base, queries, key_params, p.last_budget,
                                             DataFacts{stats_.merged(query_stats), dim_}, out);
  }

 private:
  FloatView view() const { return FloatView{rows_.data(), size_, dim_, dim_, Memory::Device}; }

  /// Stores float rows after the stored ones, with their norms. `known`: their facts (validated), else they are
  /// scanned on the device after their upload (host rows only) and `what` names them in the NaN/Inf error.
  detail::ValueStats store_rows(FloatView rows, const detail::ValueStats* known, std::string_view what) {
    if (rows.rows == 0) return known ? *known : detail::ValueStats{};
    std::lock_guard<std::mutex> lock(mutex_);
    use_device(device_);
    return rows.memory == Memory::Device ? store_device_rows(rows, known, what) : store_host_rows(rows, known, what);
  }

  detail::ValueStats store_device_rows(FloatView rows, const detail::ValueStats* known, std::string_view what) {
    Pipeline& p = prepare_append(rows.rows);
    float* dst = rows_.data() + size_ * dim_;
    float* norms = norms_.data() + size_;
    const cudaStream_t compute = p.compute.get();
    std::optional<ChunkedValueScan> scan;
    if (!known) scan.emplace(rows.rows, dim_, compute);
    GKNN_CUDA_TRY(cudaMemcpy2DAsync(dst, static_cast<size_t>(dim_) * sizeof(float), rows.data,
                                    static_cast<size_t>(rows.row_stride()) * sizeof(float),
                                    static_cast<size_t>(dim_) * sizeof(float), static_cast<size_t>(rows.rows),
                                    cudaMemcpyDeviceToDevice, compute));
    row_squared_norms(dst, rows.rows, dim_, dim_, norms, compute);
    if (scan) scan->add(dst, 0, rows.rows, dim_, compute);
    return commit(p, rows.rows, known, scan ? &*scan : nullptr, what);
  }

  /// Chunk by chunk through kept pinned slots (upload.cuh), packing from here on, the rows' buffers grown beside the
  /// first copies; each chunk's norms (and scan) run on the compute stream while the next chunk is packed and
  /// copied. A row's norm does not depend on the chunking (norms.cu).
  detail::ValueStats store_host_rows(FloatView rows, const detail::ValueStats* known, std::string_view what) {
    HostUpload upload(HostRows{rows.data, rows.rows, static_cast<size_t>(dim_) * sizeof(float),
                               static_cast<size_t>(rows.row_stride()) * sizeof(float)});
    Pipeline& p = pipeline();
    const cudaStream_t compute = p.compute.get();
    std::optional<ChunkedValueScan> scan;
    if (!known) scan.emplace(rows.rows, dim_, compute);
    float *dst = nullptr, *norms = nullptr;
    upload.run(
        nullptr, p.upload.get(), compute,
        [&](const UploadChunk& c) {
          const float* d = static_cast<const float*>(c.device);
          row_squared_norms(d, c.rows, dim_, dim_, norms + c.first_row, compute);
          if (scan) scan->add(d, c.first_row, c.rows, dim_, compute);
        },
        [&]() -> void* {
          grow_for_append(rows.rows, &dst, &norms);
          return dst;  // the rows land in place
        });
    return timed_commit(p, rows.rows, known, scan ? &*scan : nullptr, what);
  }

  /// prepare_append for an upload's `prepare` (it may run on the overlap helper, while the first chunks are copied:
  /// the device is made current there); *dst and *norms: where the added rows and their norms go.
  void grow_for_append(int64_t added, float** dst, float** norms) {
    prepare_append(added);
    *dst = rows_.data() + size_ * dim_;
    *norms = norms_.data() + size_;
  }

  /// Before rows are appended: the search's buffers and the operand copy go, the rows' buffers grow to hold `added`
  /// more rows.
  Pipeline& prepare_append(int64_t added) {
    use_device(device_);
    Pipeline& p = pipeline();
    p.release_buffers();  // a search's tile buffers must not crowd out the growing database
    operands_ = OperandCache();  // converted from the old rows (and facts): the next fused search makes it again
    reserve(p, size_ + added);
    return p;
  }

  /// Waits for the appended rows (and their scan): they count from here, unless the scan found NaN or Inf (which
  /// throws, leaving the store as it was).
  detail::ValueStats commit(Pipeline& p, int64_t added, const detail::ValueStats* known, ChunkedValueScan* scan,
                            std::string_view what) {
    if (scan) scan->fetch(p.compute.get());
    p.compute.sync();  // the compute stream waited for every chunk's copy
    const detail::ValueStats stats = known ? *known : scan->finish(rows_.data() + size_ * dim_, dim_, what);
    stats_ = size_ == 0 ? stats : stats_.merged(stats);
    max_norm_ = -1;
    size_ += added;
    return stats;
  }

  /// commit() after an upload, its time noted in the upload's times (gknn_upload_bench's breakdown).
  detail::ValueStats timed_commit(Pipeline& p, int64_t added, const detail::ValueStats* known,
                                  ChunkedValueScan* scan, std::string_view what) {
    const auto t0 = std::chrono::steady_clock::now();
    const detail::ValueStats stats = commit(p, added, known, scan, what);
    note_upload_commit(t0);
    return stats;
  }

  Pipeline& pipeline() const {
    if (!pipeline_) pipeline_ = std::make_unique<Pipeline>(device_);
    return *pipeline_;
  }

  /// Grows the buffers to hold `rows` rows, keeping the stored ones. They come from gknn's device pool
  /// (buffer.cuh PooledDeviceBuffer): an add after a freed Index gets its blocks back in microseconds, where the
  /// cudaMalloc of 512 MB took 0.8-2 ms beside the first copies (GKNN_INDEX_POOL=0: cudaMalloc).
  void reserve(Pipeline& p, int64_t rows) {
    if (rows <= capacity_) return;
    const int64_t capacity = std::max({rows, capacity_ + capacity_ / 2, kMinCapacityRows});
    PooledDeviceBuffer<float> new_rows(static_cast<size_t>(capacity * dim_)), new_norms(static_cast<size_t>(capacity));
    const cudaStream_t s = p.compute.get();
    if (size_ > 0) {
      GKNN_CUDA_TRY(cudaMemcpyAsync(new_rows.data(), rows_.data(), static_cast<size_t>(size_ * dim_) * sizeof(float),
                                    cudaMemcpyDeviceToDevice, s));
      GKNN_CUDA_TRY(cudaMemcpyAsync(new_norms.data(), norms_.data(), static_cast<size_t>(size_) * sizeof(float),
                                    cudaMemcpyDeviceToDevice, s));
      p.compute.sync();  // the old buffers are freed below
    }
    rows_ = std::move(new_rows);
    norms_ = std::move(new_norms);
    capacity_ = capacity;
  }

  int64_t dim_;
  int device_;
  int64_t size_ = 0, capacity_ = 0;
  PooledDeviceBuffer<float> rows_, norms_;  ///< from gknn's device pool (reserve)
  detail::ValueStats stats_;  ///< of every stored row (decides the exact lower-precision paths)
  mutable double max_norm_ = -1;  ///< largest row norm, for the exactness guard (< 0: not computed since a change)
  mutable OperandCache operands_;  ///< the fused kernel's copy of the rows; searches fill it (under mutex_)
  mutable std::mutex mutex_;
  mutable std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace

void use_device(int device) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  GKNN_EXPECT(device >= 0 && device < count, ErrorCode::InvalidArgument, "CUDA device ", device,
              " does not exist (", count, " visible)");
  device_props(device);  // makes it current
}

std::unique_ptr<detail::ResidentStore> make_resident_store(int64_t dim, int device) {
  return std::make_unique<CudaStore>(dim, device);
}

}  // namespace gknn::detail::cuda
