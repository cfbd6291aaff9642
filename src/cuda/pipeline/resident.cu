// resident.cu: the device-resident database of a CUDA Index.
//
// Rows and their squared norms (for the cuBLAS distance) live in device buffers that grow geometrically, so a
// database added in many small batches costs amortised O(1) copies per row. Searches run the tiled pipeline on
// the resident rows (no base upload); the pipeline's streams and scratch are kept between searches.
#include <algorithm>
#include <mutex>

#include "cuda/common/device.cuh"
#include "cuda/distance/distance.cuh"
#include "cuda/pipeline/resident.cuh"
#include "cuda/pipeline/search.cuh"

namespace gknn::cuda_detail {
namespace {

constexpr int64_t kMinCapacityRows = 1024;

class CudaStore final : public detail::ResidentStore {
 public:
  CudaStore(int64_t dim, int device) : dim_(dim), device_(device) { use_device(device); }

  void append(FloatView rows) override {
    if (rows.rows == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    use_device(device_);
    Pipeline& p = pipeline();
    p.release_buffers();  // a search's tile buffers must not crowd out the growing database
    reserve(p, size_ + rows.rows);
    upload_rows(p, rows, rows_.data() + size_ * dim_);
    row_squared_norms(rows_.data() + size_ * dim_, rows.rows, dim_, dim_, norms_.data() + size_, p.compute.get());
    p.compute.sync();
    size_ += rows.rows;
  }

  void clear() override {
    std::lock_guard<std::mutex> lock(mutex_);
    use_device(device_);
    if (pipeline_) pipeline_->release_buffers();
    rows_ = DeviceBuffer<float>();
    norms_ = DeviceBuffer<float>();
    size_ = capacity_ = 0;
  }

  int64_t size() const override { return size_; }

  detail::KeyResult search(FloatView queries, const SearchParams& key_params) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    use_device(device_);
    ResidentBase base(rows_.data(), size_, dim_, norms_.data());
    Pipeline& p = pipeline();
    p.prepare_for(PlanKey{queries.rows, size_, dim_, key_params.k, key_params.metric, key_params.distance,
                          key_params.select, key_params.memory_budget});
    return run_search(p, base, queries, key_params, memory_budget(key_params.memory_budget));
  }

 private:
  Pipeline& pipeline() const {
    if (!pipeline_) pipeline_ = std::make_unique<Pipeline>(device_);
    return *pipeline_;
  }

  /// Grows the buffers to hold `rows` rows, keeping the stored ones.
  void reserve(Pipeline& p, int64_t rows) {
    if (rows <= capacity_) return;
    const int64_t capacity = std::max({rows, capacity_ + capacity_ / 2, kMinCapacityRows});
    DeviceBuffer<float> new_rows(static_cast<size_t>(capacity * dim_)), new_norms(static_cast<size_t>(capacity));
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
  DeviceBuffer<float> rows_, norms_;
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

}  // namespace gknn::cuda_detail
