// search.cu: the tiled search pipeline (see search.cuh).
#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>
#include <utility>

#include "cuda/common/device.cuh"
#include "cuda/common/idle_pool.hpp"
#include "cuda/common/pinned_pool.cuh"
#include "cuda/distance/cublas/handle_pool.cuh"
#include "cuda/distance/distance.cuh"
#include "cuda/hooks.hpp"
#include "cuda/pipeline/certify.cuh"
#include "cuda/pipeline/device_list_merge.cuh"
#include "cuda/pipeline/finalize.cuh"
#include "cuda/pipeline/hook_state.cuh"
#include "cuda/pipeline/measured_choice.cuh"
#include "cuda/pipeline/merge.cuh"
#include "cuda/pipeline/query_bytes.cuh"
#include "cuda/pipeline/search.cuh"
#include "cuda/pipeline/staging.cuh"
#include "cuda/pipeline/upload.cuh"
#include "cuda/pipeline/value_scan.cuh"
#include "cuda/select/select.cuh"

namespace gknn::detail::cuda {
namespace {

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

/// A base the caller keeps in device memory: used where it is; its norms are computed once per search, into the
/// pipeline's grow-only buffer (a repeated search allocates nothing), at the first tile: the tile buffers are sized
/// by then, and sizing may release every buffer of the pipeline.
class DeviceViewBase final : public BaseSource {
 public:
  DeviceViewBase(Pipeline& p, FloatView base) : base_(base), norms_(p.view_norms) {}
  int64_t rows() const override { return base_.rows; }
  bool streamed() const override { return false; }
  DeviceRows tile(int64_t begin, int64_t, cudaStream_t s) override {
    if (!norms_ready_) {
      norms_.resize(static_cast<size_t>(base_.rows));
      row_squared_norms(base_.data, base_.rows, base_.row_stride(), base_.cols, norms_.data(), s);
      norms_ready_ = true;
    }
    return {base_.data + begin * base_.row_stride(), base_.row_stride(), norms_.data() + begin};
  }
  void release(cudaStream_t) override {}

 private:
  FloatView base_;
  DeviceBuffer<float>& norms_;
  bool norms_ready_ = false;
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
  DataFacts facts;
  OperandCache* operand_cache;  ///< the base's kept fused operands (sized for the whole base), or null
};

struct ListRef {
  float* keys;
  int64_t* labels;
};

/// Computes the top-k of `qn` queries already on the device against every base tile; returns the list that
/// holds the result (one of the slot's two running lists).
ListRef search_query_tile(const TileJob& job, const float* queries, int64_t query_stride, int64_t qn, int slot) {
  Pipeline& p = job.p;
  const cudaStream_t s = job.p.compute.get();
  const int64_t k = job.kp.k, nb = job.base.rows();
  ListRef cur{p.list_keys[2 * slot].data(), p.list_labels[2 * slot].data()};
  ListRef next{p.list_keys[2 * slot + 1].data(), p.list_labels[2 * slot + 1].data()};
  const ListRef tile{p.list_keys[4].data(), p.list_labels[4].data()};
  // The queries' squared norms: for the finaliser where the keys omit |q|^2 (then computed after the tiles, so
  // that a one-query search starts its distance kernel a launch earlier), else for the kernels.
  auto query_norms = [&] {
    stage_begin(job.timer, Stage::Distance, s);
    row_squared_norms(queries, qn, query_stride, job.dim, p.query_norms.data(), s);
    stage_end(job.timer, Stage::Distance, s);
  };
  const bool norms_first = job.norms && !job.distance.omits_query_norm;
  if (norms_first) query_norms();
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
    const DistanceInput din{queries, query_stride, qn, rows.rows, rows.stride, bn, job.dim, job.kp.metric,
                            static_cast<float>(job.kp.p), norms_first ? p.query_norms.data() : nullptr,
                            job.norms ? base_norms : nullptr, texture_limit_override(), job.operand_cache, b0,
                            &job.facts};
    int64_t fallbacks = 0;
    const DistanceContext dctx{p.distance_workspace, s, p.device, &fallbacks};
    const int64_t kt = std::min(k, bn);
    const ListRef dst = cur_len == 0 ? cur : tile;
    const bool fused = job.distance.selects_itself(kt, job.dim, job.facts);
    SelectInput sin{p.distances.data(), nullptr, bn, qn, bn, b0};
    if (fused) {  // distances and selection in one kernel; splits of the base leave lists to select from
      const OperandCache* cache = job.operand_cache;
      const int layout_before = cache ? cache->layout : -1;
      const int64_t rows_before = cache ? cache->rows : 0;
      const FusedResult r = job.distance.fused(
          din, job.facts, kt, FusedTarget{dst.keys, dst.labels, k, b0, fused_split_merge_enabled()}, dctx);
      if (cache) count_operand_rows(cache->rows - (cache->layout == layout_before ? rows_before : 0));
      sin = SelectInput{r.keys, r.labels, r.stride, qn, r.cols, 0};
      if (r.direct) sin.cols = 0;
    } else {
      job.distance.run(din, DistanceOutput{p.distances.data(), bn}, dctx);
    }
    count_texture_fallbacks(fallbacks);
    stage_end(job.timer, Stage::Distance, s);
    job.base.release(s);  // the distance kernel was the tile's last reader

    if (sin.cols > 0) {
      const SelectAlgorithm algorithm = fused ? SelectAlgorithm::Auto : job.kp.select;
      const SelectEntry& select = resolve_select(algorithm, qn, sin.cols, kt);
      if (job.kp.stats) job.kp.stats->select_algorithm = select.algorithm;
      stage_begin(job.timer, Stage::Select, s);
      select.run(sin, kt, SelectOutput{dst.keys, dst.labels, k},
                 SelectContext{job.kp.select_options, p.select_workspace, s, p.device});
      stage_end(job.timer, Stage::Select, s);
    }
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
  if (job.norms && !norms_first) query_norms();
  return cur;
}

}  // namespace

Pipeline::Pipeline(int device_ordinal) : device((device_props(device_ordinal), device_ordinal)) {}

bool Pipeline::prepare_for(const PlanKey& key) {
  if (has_last_key && key == last_key) return false;
  last_key = key;
  has_last_key = true;
  return true;
}

size_t Pipeline::held_bytes() const {
  size_t bytes = distances.capacity_bytes() + query_norms.capacity_bytes() + base_norms.capacity_bytes() +
                 view_norms.capacity_bytes() + certified.capacity_bytes() + exact_keys.capacity_bytes() +
                 exact_rows.capacity_bytes();
  for (int i = 0; i < 5; ++i) bytes += list_keys[i].capacity_bytes() + list_labels[i].capacity_bytes();
  for (const OutputSlot& s : out_slots) bytes += s.values.capacity_bytes() + s.indices.capacity_bytes();
  return bytes;
}

size_t Pipeline::scratch_bytes() const {
  return distance_workspace.capacity_bytes() + select_workspace.capacity_bytes();
}

size_t Pipeline::staging_bytes() const {
  return query_slots.bytes() + query_byte_slots.bytes() + label_slots.bytes() + download_ring.size();
}

void Pipeline::release_staging() {
  compute.sync();
  upload.sync();
  download.sync();
  query_slots.release();
  query_byte_slots.release();
  label_slots.release();
  download_ring = PinnedBuffer<unsigned char>();
}

void Pipeline::release_buffers() {
  compute.sync();  // nothing may still use the buffers (searches end synchronised; this is a safeguard, and a
  upload.sync();   // search that failed midway left its work queued)
  download.sync();
  distance_workspace = Workspace();
  select_workspace = Workspace();
  distances = DeviceBuffer<float>();
  query_norms = DeviceBuffer<float>();
  base_norms = DeviceBuffer<float>();
  view_norms = DeviceBuffer<float>();
  for (int i = 0; i < 5; ++i) {
    list_keys[i] = DeviceBuffer<float>();
    list_labels[i] = DeviceBuffer<int64_t>();
  }
  for (OutputSlot& s : out_slots) {
    s.values = DeviceBuffer<float>();
    s.indices = DeviceBuffer<int64_t>();
  }
  certified = DeviceBuffer<unsigned char>();
  exact_keys = DeviceBuffer<double>();
  exact_rows = DeviceBuffer<int64_t>();
  has_last_key = false;
}

void upload_rows(Pipeline& p, FloatView rows, float* dst) {
  // Through the process's kept pinned slots (upload.cuh), chunk packs overlapping the copies.
  const cudaStream_t s = p.upload.get();
  upload_host_rows(HostRows{rows.data, rows.rows, static_cast<size_t>(rows.cols) * sizeof(float),
                            static_cast<size_t>(rows.row_stride()) * sizeof(float)},
                   dst, s, s, [](const UploadChunk&) {});
  p.upload.sync();
}

std::unique_ptr<BaseSource> make_base_source(Pipeline& p, FloatView base, size_t* budget) {
  const size_t bytes = resident_bytes(base);
  if (base.memory == Memory::Device) {
    *budget -= std::min(*budget / 2, static_cast<size_t>(base.rows) * sizeof(float));
    return std::make_unique<DeviceViewBase>(p, base);
  }
  if (!base_tile_forced() && bytes <= *budget / 2) {
    *budget -= bytes;
    return std::make_unique<OwnedResidentBase>(p, base);
  }
  return std::make_unique<StreamedBase>(p, base);
}

size_t pipeline_budget(const Pipeline& p, size_t requested) {
  return requested > 0 ? requested : memory_budget(0) + p.held_bytes();
}

namespace {

constexpr size_t kCachedPipelinesPerDevice = 2;

}  // namespace

PipelineLease::PipelineLease(int device) : device_(device) {
  if (std::optional<std::unique_ptr<Pipeline>> idle = idle_pool<std::unique_ptr<Pipeline>>().take(device))
    p_ = std::move(*idle);
  else
    p_ = std::make_unique<Pipeline>(device);
}

PipelineLease::~PipelineLease() {
  try {
    // Scratch is not counted in held_bytes (plans do not reuse it), but a large one is not kept either.
    if (p_->held_bytes() + p_->scratch_bytes() > kKeptPipelineBytes) p_->release_buffers();
    if (p_->staging_bytes() > kKeptStagingBytes) p_->release_staging();
    idle_pool<std::unique_ptr<Pipeline>>().give(device_, p_, kCachedPipelinesPerDevice);  // else p_ dies with us
  } catch (...) {
    // a failed release leaves the pipeline to its destructor
  }
}

void release_cached_device_resources() {
  idle_pool<std::unique_ptr<Pipeline>>().drain();  // the destructors free streams, device and pinned buffers
  release_scan_slots();
  release_upload_slots();
  release_guard_scratch();
  release_list_merge_buffers();
  release_cublas_handles();
  PinnedPool::get().trim();  // the kept page-locked blocks (Results', the join's)
}

namespace {

/// Queries of one tile on the device: uploaded through the pipeline's staging slots (as floats, or as bytes widened
/// on the device: `bytes`, query_byte_form), or a device view's rows.
class QueryFeed {
 public:
  QueryFeed(Pipeline& p, FloatView queries, int64_t tile_rows, StageTimer* timer, std::optional<bool> bytes)
      : queries_(queries), tile_rows_(tile_rows), widened_(p.query_slots) {
    if (queries.memory != Memory::Host) return;
    if (bytes)
      byte_stager_.emplace(queries.data, queries.row_stride(), queries.cols, tile_rows, p.upload.get(), timer,
                           &p.query_byte_slots, *bytes);
    else
      stager_.emplace(queries.data, queries.row_stride(), queries.cols, tile_rows, p.upload.get(), timer,
                      &p.query_slots);
  }
  const float* rows(int64_t q0, int64_t qn, cudaStream_t s) {
    if (stager_) return stager_->upload(q0, qn, s);
    if (!byte_stager_) return queries_.data + q0 * queries_.row_stride();
    const uint8_t* bytes = byte_stager_->upload(q0, qn, s);
    // Into the float slot of the same index: its last reader precedes this widening on `s`.
    DeviceBuffer<float>& rows = widened_.slots[byte_stager_->last_slot()].device;
    rows.resize(static_cast<size_t>(tile_rows_ * queries_.cols));
    widen_bytes(bytes, qn * queries_.cols, byte_stager_->signed_bytes(), rows.data(), s);
    return rows.data();
  }
  int64_t stride() const { return stager_ || byte_stager_ ? queries_.cols : queries_.row_stride(); }
  void release(cudaStream_t s) {
    if (stager_) stager_->release(s);
    if (byte_stager_) byte_stager_->release(s);
  }

 private:
  FloatView queries_;
  int64_t tile_rows_;
  StagingSlots<float>& widened_;
  std::optional<Stager<float>> stager_;
  std::optional<Stager<uint8_t, float>> byte_stager_;
};

/// The user ids of an Index on the device (uploaded when they changed since the last search).
const int64_t* device_ids(Pipeline& p, const detail::OutputSpec& out, cudaStream_t s) {
  if (!out.ids) return nullptr;
  if (p.ids_source != out.ids || p.ids_count != out.id_count) {
    p.ids.resize(static_cast<size_t>(out.id_count));
    GKNN_CUDA_TRY(cudaMemcpyAsync(p.ids.data(), out.ids, static_cast<size_t>(out.id_count) * sizeof(int64_t),
                                  cudaMemcpyHostToDevice, s));
    GKNN_CUDA_TRY(cudaStreamSynchronize(s));  // the host array may change after this search
    p.ids_source = out.ids;
    p.ids_count = out.id_count;
  }
  return p.ids.data();
}

/// Grows the tile buffers for a plan. Growing one buffer while the others still hold their old capacity could
/// fail for memory the plan counted as available, so any growth first releases them all.
/// `keys`: the search writes a key matrix (two-stage path), else the fused kernel serves every tile and none is
/// sized.
void size_buffers(Pipeline& p, int64_t tq, int64_t tb, int64_t k, int64_t out_k, bool host_out, int out_slots,
                  bool keys) {
  const size_t lists = static_cast<size_t>(tq * k), outs = host_out ? static_cast<size_t>(tq * out_k) : 0;
  const size_t key_count = keys ? static_cast<size_t>(tq * tb) : 0;
  bool grows = p.distances.capacity_bytes() < key_count * sizeof(float) ||
               p.list_keys[0].capacity_bytes() < lists * sizeof(float) ||
               p.query_norms.capacity_bytes() < static_cast<size_t>(tq) * sizeof(float) ||
               p.base_norms.capacity_bytes() < static_cast<size_t>(tb) * sizeof(float);
  for (int i = 0; i < out_slots; ++i) grows = grows || p.out_slots[i].values.capacity_bytes() < outs * sizeof(float);
  if (grows) p.release_buffers();
  p.distances.resize(key_count);
  p.query_norms.resize(static_cast<size_t>(tq));
  p.base_norms.resize(static_cast<size_t>(tb));
  for (int i = 0; i < 5; ++i) {
    p.list_keys[i].resize(lists);
    p.list_labels[i].resize(lists);
  }
  for (int i = 0; i < out_slots; ++i) {
    p.out_slots[i].values.resize(outs);
    p.out_slots[i].indices.resize(outs);
  }
}

/// Publishes the stage times into the hook (benchmarks) and the caller's SearchStats.
void publish_stats(StageTimer* timer, int64_t query_tiles, int64_t base_tiles, SearchStats* stats) {
  if (!timer) return;
  const StageTimes t = timer->publish(query_tiles, base_tiles);
  if (!stats) return;
  stats->upload_ms = t.upload_ms;
  stats->distance_ms = t.distance_ms;
  stats->select_ms = t.select_ms;
  stats->merge_ms = t.merge_ms;
  stats->download_ms = t.download_ms;
  stats->finalize_ms = t.finalize_ms;
  stats->device_ms = t.device_ms;
  stats->setup_ms = t.setup_ms;
  stats->pack_ms = t.pack_ms;
  stats->copy_out_ms = t.copy_out_ms;
  stats->query_tiles = query_tiles;
  stats->base_tiles = base_tiles;
}

}  // namespace

namespace {

/// Sizes a kept base's operand cache for the fused search of `distance` (the kernel fills it) and returns it, or
/// null where it does not fit `facts.keep_bytes` (the search then converts the base as a one-shot search does).
/// A new allocation is taken off `*budget` and makes the next search of the pipeline measure its budget again.
OperandCache* size_operand_cache(Pipeline& p, OperandCache* cache, const DistanceEntry& distance, int64_t nb,
                                 const DataFacts& facts, size_t* budget) {
  if (!cache || !distance.fused_operand_bytes) return nullptr;
  const size_t need = distance.fused_operand_bytes(nb, facts.dim, facts);
  if (need == 0 || need > facts.keep_bytes) return nullptr;
  if (need > cache->bytes.capacity_bytes()) {
    cache->invalidate();
    cache->bytes = PooledDeviceBuffer<unsigned char>();  // the old copy goes first
    try {
      cache->bytes.resize(need);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::OutOfMemory) throw;
      return nullptr;  // the free memory is held by the pipeline's buffers: convert per search
    }
    p.has_last_key = false;
  } else {
    cache->bytes.resize(need);  // keeps the content; the kernel checks its layout
  }
  *budget -= std::min(*budget, need);
  return cache;
}

}  // namespace

namespace {

/// Device -> pageable host copy of `bytes` through the pipeline's two kept pinned slots (up to 4 MiB each): a
/// chunk's copy runs while the host copies the chunk before it out (parallel_memcpy). A plain cudaMemcpy into
/// pageable memory goes through the driver's own small staging at a fraction of the link (the certificate's float64
/// keys and rows: 16 MB at 10k queries and k = 100). Small copies go straight.
void download_staged(Pipeline& p, void* dst, const void* src, size_t bytes, cudaStream_t s) {
  constexpr size_t kSlotBytes = size_t(4) << 20, kDirectBytes = size_t(256) << 10;
  if (bytes <= kDirectBytes) {
    GKNN_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return;
  }
  const size_t slot = std::min(bytes, kSlotBytes), chunks = (bytes + slot - 1) / slot;
  if (p.download_ring.size() < 2 * slot) p.download_ring = PinnedBuffer<unsigned char>(2 * slot);
  unsigned char* ring = p.download_ring.data();
  Event landed[2] = {Event(cudaEventDisableTiming), Event(cudaEventDisableTiming)};
  auto issue = [&](size_t c) {  // slot c % 2 last held chunk c - 2, whose host copy has finished
    const size_t at = c * slot;
    GKNN_CUDA_TRY(cudaMemcpyAsync(ring + (c % 2) * slot, static_cast<const unsigned char*>(src) + at,
                                  std::min(slot, bytes - at), cudaMemcpyDeviceToHost, s));
    landed[c % 2].record(s);
  };
  issue(0);
  for (size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) issue(c + 1);
    GKNN_CUDA_TRY(cudaEventSynchronize(landed[c % 2].get()));
    const size_t at = c * slot;
    parallel_memcpy(static_cast<unsigned char*>(dst) + at, ring + (c % 2) * slot, std::min(slot, bytes - at));
  }
}

/// The exactness guard's certificate taken in the search (OutputSpec::certificate, certify.cuh): the base's largest
/// norm once, then per query tile the K' candidates re-ranked into the k entries the finaliser writes; the flags
/// come back once, at the end.
class TileCertifier {
 public:
  /// Whether this search can take it: the whole base on the device, K' within the kernel's limit, a guarded metric.
  static bool possible(const DeviceCertificate& c, const BaseSource& base, const SearchParams& kp) {
    return !base.streamed() && kp.k <= DeviceCertificate::kMaxCandidates && c.k >= 1 && c.k <= kp.k &&
           (kp.metric == Metric::SquaredL2 || kp.metric == Metric::InnerProduct);
  }

  /// Device bytes of the float64 keys and rows the certificate keeps for the whole search (exact_into).
  static size_t exact_bytes(const DeviceCertificate& c, int64_t nq) {
    return c.exact_into ? static_cast<size_t>(nq * c.k) * (sizeof(double) + sizeof(int64_t)) : 0;
  }

  /// After the tile buffers are sized (a device view's norms and rows are ready from then on).
  TileCertifier(Pipeline& p, BaseSource& base, DeviceCertificate& c, const SearchParams& kp, int64_t nq, int64_t dim)
      : p_(p), c_(c), kp_(kp) {
    const cudaStream_t s = p.compute.get();
    whole_ = base.tile(0, base.rows(), s);
    rows_ = base.rows();
    p.certified.resize(static_cast<size_t>(nq));
    if (c.exact_into) {
      p.exact_keys.resize(static_cast<size_t>(nq * c.k));
      p.exact_rows.resize(static_cast<size_t>(nq * c.k));
    }
    if (c.max_base_norm < 0) {
      p.max_norm_bits.resize(1);
      GKNN_CUDA_TRY(cudaMemsetAsync(p.max_norm_bits.data(), 0, sizeof(unsigned long long), s));
      launch_max_square_norm(whole_.rows, rows_, whole_.stride, dim, p.max_norm_bits.data(), s);
    }
  }

  /// The certified lists of query rows [q0, q0 + qn): keys and labels `k` apart, in the pipeline's tile list.
  ListRef certify(const float* queries, int64_t stride, int64_t dim, int64_t q0, int64_t qn, ListRef candidates,
                  const float* row_offsets, cudaStream_t s) {
    const ListRef out{p_.list_keys[4].data(), p_.list_labels[4].data()};
    CertifyArgs a;
    a.queries = queries;
    a.query_stride = stride;
    a.rows = qn;
    a.dim = dim;
    a.base = whole_.rows;
    a.base_stride = whole_.stride;
    a.base_rows = rows_;
    a.keys = candidates.keys;
    a.labels = candidates.labels;
    a.list_stride = kp_.k;
    a.candidates = kp_.k;
    a.row_offsets = row_offsets;
    a.metric = kp_.metric;
    a.k = c_.k;
    a.input_error = c_.input_error;
    a.terms = c_.terms;
    a.exact_below = row_offsets ? 0 : c_.exact_below;  // the bound holds for the kernel's keys as computed
    a.max_base_norm = c_.max_base_norm;
    a.max_norm_bits = p_.max_norm_bits.data();
    a.out_keys = out.keys;
    a.out_labels = out.labels;
    a.out_exact = c_.exact_into ? p_.exact_keys.data() + q0 * c_.k : nullptr;
    a.out_exact_rows = c_.exact_into ? p_.exact_rows.data() + q0 * c_.k : nullptr;
    a.certified = p_.certified.data() + q0;
    certify_rows(a, s);
    return out;
  }

  /// The flags of every query, after the compute stream is synchronised.
  void finish(int64_t nq) {
    c_.certified.resize(static_cast<size_t>(nq));
    GKNN_CUDA_TRY(cudaMemcpy(c_.certified.data(), p_.certified.data(), static_cast<size_t>(nq), cudaMemcpyDeviceToHost));
    if (c_.exact_into) {
      const size_t entries = static_cast<size_t>(nq * c_.k);
      const DeviceCertificate::ExactInto into = c_.exact_into();
      const cudaStream_t s = p_.compute.get();
      download_staged(p_, into.keys, p_.exact_keys.data(), entries * sizeof(double), s);
      download_staged(p_, into.rows, p_.exact_rows.data(), entries * sizeof(int64_t), s);
    }
    c_.ran = true;
  }

 private:
  Pipeline& p_;
  DeviceCertificate& c_;
  const SearchParams& kp_;
  DeviceRows whole_;
  int64_t rows_ = 0;
};

}  // namespace

void run_search(Pipeline& p, BaseSource& base, FloatView queries, const SearchParams& requested, size_t budget,
                const DataFacts& data, const detail::OutputSpec& out) {
  const auto setup_start = std::chrono::steady_clock::now();
  const int64_t nq = queries.rows, nb = base.rows(), dim = queries.cols, k = requested.k;
  if (nq == 0) return;
  DeviceCertificate* const certificate = out.certificate;
  if (certificate && !TileCertifier::possible(*certificate, base, requested)) return;  // ran stays false
  if (certificate) {  // its float64 keys stay on the device to the end: out of the plan's budget, or not taken
    const size_t exact = TileCertifier::exact_bytes(*certificate, nq);
    if (exact > budget / 4) return;  // ran stays false: the guard re-ranks on the host
    budget -= exact;
  }
  const int64_t out_key_k = certificate ? certificate->k : k;  // entries per row the finaliser gets
  // A base kept on the device may keep its fused operands too, in half of the budget (or what it holds already).
  DataFacts facts = data;
  facts.guarded = requested.guard != Guard::Off;  // as explain() sets it: the guard's choice and the search's agree
  OperandCache* const cache = operand_cache_enabled() ? base.operand_cache() : nullptr;
  if (cache) facts.keep_bytes = std::max(cache->bytes.capacity_bytes(), budget / 2);
  // Auto's choices from the measured plan table where it has a row for this search (else they stay Auto: rules).
  const SearchParams kp = measured_choice(requested, nq, nb, facts, p.device, false).params;
  GKNN_EXPECT(k >= 1 && k <= nb, ErrorCode::Internal, "run_search: k = ", k, " outside [1, ", nb, "]");
  GKNN_EXPECT(out.k >= out_key_k, ErrorCode::Internal, "run_search: output k ", out.k, " below the key k ", out_key_k);
  // Resolve on the whole shape first, so an unsupported request fails before any work or allocation.
  const SelectEntry& select = resolve_select(kp.select, std::min(nq, kMaxQueryTile), nb, k);
  const DistanceEntry& distance = resolve_distance(kp.distance, kp.metric, nq, nb, k, facts);
  const bool host_out = out.memory == Memory::Host;
  // A fused kernel that serves k serves every tile (a tile's k is min(k, tile rows) <= k): no key matrix at all.
  const bool fused_only = distance.selects_itself(k, dim, facts);
  if (kp.stats) kp.stats->distance_algorithm = distance.algorithm, kp.stats->select_algorithm = SelectAlgorithm::Auto;
  OperandCache* const operands = fused_only ? size_operand_cache(p, cache, distance, nb, facts, &budget) : nullptr;
  const PlanInput plan_input{nq, nb, dim, k, budget, base.streamed(), select.workspace_bytes,
                             distance.workspace_bytes, host_out ? out.k : 0, !fused_only};
  const TilePlan plan = plan_search(plan_input);
  const bool l2 = kp.metric == Metric::SquaredL2;
  const bool norms = distance.needs_norms && l2;
  const int64_t tq = plan.query_rows, tb = plan.base_rows;
  const cudaStream_t s = p.compute.get();

  std::unique_ptr<StageTimer> timer = StageTimer::if_enabled(kp.stats != nullptr);
  if (auto* streamed = dynamic_cast<StreamedBase*>(&base)) streamed->timer = timer.get();
  // More finalised tiles in flight to a host destination when they are cheap (output_slots.hpp): the device runs
  // ahead while the host allocates the destination and copies earlier tiles out.
  const size_t planned = search_bytes(plan_input, tq, tb);
  const int out_slots =
      host_out ? output_slots_in_flight((nq + tq - 1) / tq, static_cast<size_t>(tq * out.k) * 12,
                                        budget > planned ? budget - planned : 0)
               : 2;
  size_buffers(p, tq, tb, k, out.k, host_out, out_slots, !fused_only);
  QueryFeed feed(p, queries, tq, timer.get(), query_byte_form(distance, facts));
  ResultWriter writer(p.out_slots, out_slots, !host_out, out.destination, out.k, tq, nq, timer.get());
  const int64_t* ids = device_ids(p, out, s);
  std::optional<TileCertifier> certifier;
  if (certificate) certifier.emplace(p, base, *certificate, kp, nq, dim);
  const TileJob job{p, base, distance, kp, dim, tb, norms, timer.get(), facts, operands};
  if (timer) {  // the device span starts here: everything above is host set-up
    timer->set_setup_ms(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - setup_start).count());
    timer->begin_device(s);
  }
  int64_t done = 0, tile_index = 0;
  auto report = [&](int64_t rows) {
    done += rows;
    if (rows > 0 && kp.progress) kp.progress(static_cast<double>(done) / static_cast<double>(nq));
  };
  for (int64_t q0 = 0; q0 < nq; q0 += tq, ++tile_index) {
    const int slot = static_cast<int>(tile_index % 2);  // running lists (reuse ordered on the compute stream)
    const int out_slot = static_cast<int>(tile_index % out_slots);
    report(writer.finish(out_slot));  // the slot's previous tile lands before its buffers are reused
    const int64_t qn = std::min(tq, nq - q0);
    const float* q = feed.rows(q0, qn, s);
    ListRef top = search_query_tile(job, q, feed.stride(), qn, slot);
    const float* row_offsets = norms && distance.omits_query_norm ? p.query_norms.data() : nullptr;
    stage_begin(timer.get(), Stage::Finalize, s);
    if (certifier) {  // the certified keys are whole float64 keys: no offset left to add
      top = certifier->certify(q, feed.stride(), dim, q0, qn, top, row_offsets, s);
      row_offsets = nullptr;
    }
    feed.release(s);
    const ResultWriter::Target target = writer.target(out_slot, q0);
    FinalizeArgs fa =
        finalize_args(top.keys, top.labels, out_key_k, qn, out.metric, out.p, out.k, target.values, target.indices);
    fa.row_offsets = row_offsets;
    fa.ids = ids;
    finalize_rows(fa, s);
    stage_end(timer.get(), Stage::Finalize, s);
    writer.commit(out_slot, q0, qn, s, p.download.get());
    if (!host_out) report(qn);
    writer.land_ready(report);  // earlier tiles already complete are copied out while the device computes this one
  }
  writer.finish_all(report);
  if (timer) timer->end_device(s);
  p.compute.sync();  // device destinations are complete when the call returns
  p.upload.sync();
  p.download.sync();  // (finish_all waited for every copy already)
  if (certifier) certifier->finish(nq);
  publish_stats(timer.get(), tile_index, (nb + tb - 1) / tb, kp.stats);
}

size_t run_search_within_memory(Pipeline& p, BaseSource& base, FloatView queries, const SearchParams& key_params,
                                size_t budget, const DataFacts& facts, const detail::OutputSpec& out) {
  for (;;) {
    try {
      run_search(p, base, queries, key_params, budget, facts, out);
      return budget;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::OutOfMemory || budget / 2 < kSmallestRetryBudget) throw;
    }
    const bool planned = p.has_last_key;  // the shape stays planned: with the budget this returns
    p.release_buffers();                  // (it waits for what the failed attempt queued)
    p.has_last_key = planned;
    trim_device_pools();
    budget /= 2;
  }
}

}  // namespace gknn::detail::cuda
