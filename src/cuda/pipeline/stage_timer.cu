// stage_timer.cu: per-stage CUDA event spans, summed after the search.
#include <atomic>
#include <mutex>

#include "cuda/pipeline/stage_timer.cuh"

namespace gknn::detail::cuda {
namespace {

std::atomic<bool> g_enabled{false};
std::mutex g_mutex;
StageTimes g_last;

}  // namespace

void set_stage_timing(bool on) { g_enabled.store(on); }

StageTimes last_stage_times() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_last;
}

std::unique_ptr<StageTimer> StageTimer::if_enabled(bool requested) {
  return requested || g_enabled.load() ? std::make_unique<StageTimer>() : nullptr;
}

void StageTimer::begin(Stage stage, cudaStream_t stream) {
  auto span = std::make_unique<Span>();
  span->stage = stage;
  span->start.record(stream);
  spans_.push_back(std::move(span));
}

void StageTimer::end(Stage stage, cudaStream_t stream) {
  for (auto it = spans_.rbegin(); it != spans_.rend(); ++it)
    if ((*it)->stage == stage && !(*it)->closed) {
      (*it)->stop.record(stream);
      (*it)->closed = true;
      return;
    }
}

StageTimes StageTimer::publish(int64_t query_tiles, int64_t base_tiles) {
  StageTimes t;
  t.query_tiles = query_tiles;
  t.base_tiles = base_tiles;
  for (const auto& span : spans_) {
    if (!span->closed) continue;
    const double ms = span->stop.since(span->start);
    switch (span->stage) {
      case Stage::Upload: t.upload_ms += ms; break;
      case Stage::Distance: t.distance_ms += ms; break;
      case Stage::Select: t.select_ms += ms; break;
      case Stage::Merge: t.merge_ms += ms; break;
      case Stage::Download: t.download_ms += ms; break;
      case Stage::Finalize: t.finalize_ms += ms; break;
    }
  }
  if (device_span_) t.device_ms = device_stop_.since(device_start_);
  t.setup_ms = setup_ms_;
  t.pack_ms = pack_ms_;
  t.copy_out_ms = copy_out_ms_;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_last = t;
  return t;
}

}  // namespace gknn::detail::cuda
