// search.cu: the tiled search pipeline (see search.cuh).
#include <algorithm>
#include <utility>

#include "cuda/common/device.cuh"
#include "cuda/distance/distance.cuh"
#include "cuda/pipeline/merge.cuh"
#include "cuda/pipeline/search.cuh"
#include "cuda/pipeline/staging.cuh"
#include "cuda/select/select.cuh"

namespace gknn::cuda_detail {
namespace {

/// Rows per chunk of a bulk upload: about 32 MiB of pinned staging per slot.
int64_t bulk_chunk_rows(int64_t cols) { return std::max<int64_t>(1, (int64_t(32) << 20) / (cols * 4)); }

/// A base uploaded once for one search.
class OwnedResidentBase final : public BaseSource {
 public:
  OwnedResidentBase(Pipeline& p, FloatView base) : dim_(base.cols) {
    rows_.resize(static_cast<size_t>(base.rows * base.cols));
    norms_.resize(static_cast<size_t>(base.rows));
    upload_rows(p, base, rows_.data());
    row_squared_norms(rows_.data(), base.rows, dim_, dim_, norms_.data(), p.compute.get());
    view_ = std::make_unique<ResidentBase>(rows_.data(), base.rows, dim_, norms_.data());
  }
  int64_t rows() const override { return view_->rows(); }
  bool streamed() const override { return false; }
  DeviceRows tile(int64_t begin, int64_t count, cudaStream_t s) override { return view_->tile(begin, count, s); }
  void release(cudaStream_t) override {}

 private:
  int64_t dim_;
  DeviceBuffer<float> rows_, norms_;
  std::unique_ptr<ResidentBase> view_;
};

/// A base copied from the host tile by tile (double-buffered, staging.cuh); norms are left to the pipeline.
class StreamedBase final : public BaseSource {
 public:
  StreamedBase(Pipeline& p, FloatView base) : p_(p), base_(base) {}
  int64_t rows() const override { return base_.rows; }
  bool streamed() const override { return true; }
  DeviceRows tile(int64_t begin, int64_t count, cudaStream_t compute) override {
    // The first tile is the longest (only the last one is shorter), so it sizes the slots.
    if (!stager_)
      stager_ = std::make_unique<Stager<float>>(base_.data, base_.row_stride(), base_.cols, count, p_.upload.get(),
                                                timer);
    return {stager_->upload(begin, count, compute), base_.cols, nullptr};
  }
  void release(cudaStream_t compute) override { stager_->release(compute); }
  StageTimer* timer = nullptr;

 private:
  Pipeline& p_;
  FloatView base_;
  std::unique_ptr<Stager<float>> stager_;
};

size_t resident_bytes(FloatView base) { return static_cast<size_t>(base.rows) * (base.cols + 1) * sizeof(float); }

/// Everything one query tile needs to know about the search.
struct TileJob {
  Pipeline& p;
  BaseSource& base;
  const DistanceEntry& distance;
  const SearchParams& kp;
  int64_t dim;
  int64_t base_tile;
  bool norms;
  StageTimer* timer;
};

struct ListRef {
  float* keys;
  int64_t* labels;
};

/// Computes the top-k of `qn` queries already on the device against every base tile; returns the list that
/// holds the result (one of the slot's two running lists).
ListRef search_query_tile(const TileJob& job, const float* queries, int64_t qn, int slot) {
  Pipeline& p = job.p;
  const cudaStream_t s = job.p.compute.get();
  const int64_t k = job.kp.k, nb = job.base.rows();
  ListRef cur{p.list_keys[2 * slot].data(), p.list_labels[2 * slot].data()};
  ListRef next{p.list_keys[2 * slot + 1].data(), p.list_labels[2 * slot + 1].data()};
  const ListRef tile{p.list_keys[4].data(), p.list_labels[4].data()};
  if (job.norms) {
    stage_begin(job.timer, Stage::Distance, s);
    row_squared_norms(queries, qn, job.dim, job.dim, p.query_norms.data(), s);
    stage_end(job.timer, Stage::Distance, s);
  }
  int64_t cur_len = 0;
  for (int64_t b0 = 0; b0 < nb; b0 += job.base_tile) {
    const int64_t bn = std::min(job.base_tile, nb - b0);
    const DeviceRows rows = job.base.tile(b0, bn, s);
    stage_begin(job.timer, Stage::Distance, s);
    const float* base_norms = rows.norms;
    if (job.norms && !base_norms) {
      row_squared_norms(rows.rows, bn, rows.stride, job.dim, p.base_norms.data(), s);
      base_norms = p.base_norms.data();
    }
    const DistanceInput din{queries, job.dim, qn, rows.rows, rows.stride, bn, job.dim, job.kp.metric,
                            static_cast<float>(job.kp.p), job.norms ? p.query_norms.data() : nullptr,
                            job.norms ? base_norms : nullptr};
    job.distance.run(din, DistanceOutput{p.distances.data(), bn}, DistanceContext{p.distance_workspace, s, p.device});
    stage_end(job.timer, Stage::Distance, s);
    job.base.release(s);  // the distance kernel was the tile's last reader

    const int64_t kt = std::min(k, bn);
    const SelectEntry& select = resolve_select(job.kp.select, qn, bn, kt);
    const SelectInput sin{p.distances.data(), nullptr, bn, qn, bn, b0};
    const ListRef dst = cur_len == 0 ? cur : tile;
    stage_begin(job.timer, Stage::Select, s);
    select.run(sin, kt, SelectOutput{dst.keys, dst.labels, k},
               SelectContext{job.kp.select_options, p.select_workspace, s, p.device});
    stage_end(job.timer, Stage::Select, s);
    if (cur_len == 0) {
      cur_len = kt;
      continue;
    }
    const int64_t merged_len = std::min(k, cur_len + kt);
    stage_begin(job.timer, Stage::Merge, s);
    merge_sorted_lists(SortedLists{cur.keys, cur.labels, k, cur_len}, SortedLists{tile.keys, tile.labels, k, kt}, qn,
                       merged_len, next.keys, next.labels, k, s);
    stage_end(job.timer, Stage::Merge, s);
    std::swap(cur, next);
    cur_len = merged_len;
  }
  return cur;
}

}  // namespace

Pipeline::Pipeline(int device_ordinal) : device((device_props(device_ordinal), device_ordinal)) {}

void Pipeline::prepare_for(const PlanKey& key) {
  if (has_last_key && key == last_key) return;
  release_buffers();
  last_key = key;
  has_last_key = true;
}

void Pipeline::release_buffers() {
  compute.sync();  // nothing may still use the buffers (searches end synchronised; this is a safeguard)
  distance_workspace = Workspace();
  select_workspace = Workspace();
  distances = DeviceBuffer<float>();
  query_norms = DeviceBuffer<float>();
  base_norms = DeviceBuffer<float>();
  for (int i = 0; i < 5; ++i) {
    list_keys[i] = DeviceBuffer<float>();
    list_labels[i] = DeviceBuffer<int64_t>();
  }
  has_last_key = false;
}

void upload_rows(Pipeline& p, FloatView rows, float* dst) {
  const int64_t chunk = std::min(rows.rows, bulk_chunk_rows(rows.cols));
  if (chunk == 0) return;
  Stager<float> stager(rows.data, rows.row_stride(), rows.cols, chunk, p.upload.get(), nullptr);
  for (int64_t r0 = 0; r0 < rows.rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows.rows - r0);
    stager.upload_into(dst + r0 * rows.cols, r0, n, p.upload.get());
    stager.release(p.upload.get());
  }
  p.upload.sync();
}

std::unique_ptr<BaseSource> make_base_source(Pipeline& p, FloatView base, size_t* budget) {
  const size_t bytes = resident_bytes(base);
  if (!base_tile_forced() && bytes <= *budget / 2) {
    *budget -= bytes;
    return std::make_unique<OwnedResidentBase>(p, base);
  }
  return std::make_unique<StreamedBase>(p, base);
}

detail::KeyResult run_search(Pipeline& p, BaseSource& base, FloatView queries, const SearchParams& kp, size_t budget) {
  const int64_t nq = queries.rows, nb = base.rows(), dim = queries.cols, k = kp.k;
  detail::KeyResult result{nq, k, std::vector<float>(static_cast<size_t>(nq * k)),
                   std::vector<int64_t>(static_cast<size_t>(nq * k))};
  if (nq == 0) return result;
  GKNN_EXPECT(k >= 1 && k <= nb, ErrorCode::Internal, "run_search: k = ", k, " outside [1, ", nb, "]");
  // Resolve on the whole shape first, so an unsupported request fails before any work or allocation.
  const SelectEntry& select = resolve_select(kp.select, std::min(nq, kMaxQueryTile), nb, k);
  const TilePlan plan = plan_search(PlanInput{nq, nb, dim, k, budget, base.streamed(), select.workspace_bytes});
  const DistanceEntry& distance = resolve_distance(kp.distance, kp.metric, plan.query_rows, plan.base_rows, dim);
  const bool norms = distance.needs_norms && kp.metric == Metric::SquaredL2;
  const int64_t tq = plan.query_rows, tb = plan.base_rows;

  std::unique_ptr<StageTimer> timer = StageTimer::if_enabled();
  if (auto* streamed = dynamic_cast<StreamedBase*>(&base)) streamed->timer = timer.get();
  p.distances.resize(static_cast<size_t>(tq * tb));
  p.query_norms.resize(static_cast<size_t>(tq));
  p.base_norms.resize(static_cast<size_t>(tb));
  for (int i = 0; i < 5; ++i) {
    p.list_keys[i].resize(static_cast<size_t>(tq * k));
    p.list_labels[i].resize(static_cast<size_t>(tq * k));
  }
  Stager<float> query_stager(queries.data, queries.row_stride(), dim, tq, p.upload.get(), timer.get());
  ResultSlots results(tq, k, timer.get());
  const TileJob job{p, base, distance, kp, dim, tb, norms, timer.get()};
  const cudaStream_t s = p.compute.get();
  int64_t done = 0, tile_index = 0;
  auto finish = [&](int slot) {
    const int64_t rows = results.finish(slot, result);
    done += rows;
    if (rows > 0 && kp.progress) kp.progress(static_cast<double>(done) / static_cast<double>(nq));
  };
  for (int64_t q0 = 0; q0 < nq; q0 += tq, ++tile_index) {
    const int slot = static_cast<int>(tile_index % 2);
    finish(slot);  // the slot's previous tile (two tiles ago) is copied out before its lists are reused
    const int64_t qn = std::min(tq, nq - q0);
    const float* q = query_stager.upload(q0, qn, s);
    const ListRef top = search_query_tile(job, q, qn, slot);
    query_stager.release(s);
    results.download(slot, top.keys, top.labels, q0, qn, s);
  }
  finish(static_cast<int>(tile_index % 2));
  finish(static_cast<int>((tile_index + 1) % 2));
  p.upload.sync();
  if (timer) timer->publish(tile_index, (nb + tb - 1) / tb);
  return result;
}

}  // namespace gknn::cuda_detail
