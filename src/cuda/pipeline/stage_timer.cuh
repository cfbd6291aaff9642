// stage_timer.cuh: optional CUDA-event timing of the pipeline's stages (hooks.hpp: set_stage_timing).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "cuda/common/buffer.cuh"
#include "cuda/hooks.hpp"

namespace gknn::detail::cuda {

enum class Stage { Upload, Distance, Select, Merge, Download, Finalize };
/// Host work inside the device span (StageTimes::pack_ms, copy_out_ms): wall time on the host, not events.
enum class HostWork { Pack, CopyOut };

class StageTimer {
 public:
  /// A timer when stage timing is switched on (hooks.hpp) or the caller asks for one (SearchParams::stats); else
  /// null, and the stage_begin/stage_end helpers record nothing.
  static std::unique_ptr<StageTimer> if_enabled(bool requested = false);

  void begin(Stage stage, cudaStream_t stream);
  void end(Stage stage, cudaStream_t stream);  ///< closes the latest open span of `stage`
  /// The whole search on the device: from begin_device to end_device (device_ms).
  void begin_device(cudaStream_t stream) { device_start_.record(stream); }
  void end_device(cudaStream_t stream) {
    device_stop_.record(stream);
    device_span_ = true;
  }
  /// Host time from entering the pipeline to its first queued device work (StageTimes::setup_ms).
  void set_setup_ms(double ms) { setup_ms_ = ms; }
  /// Adds host time of `work` (the search's thread: no other thread adds).
  void add_host(HostWork work, double ms) { (work == HostWork::Pack ? pack_ms_ : copy_out_ms_) += ms; }
  /// Sums the spans (every stream must be synchronised), publishes them as last_stage_times() and returns them.
  StageTimes publish(int64_t query_tiles, int64_t base_tiles);

 private:
  Event device_start_, device_stop_;
  bool device_span_ = false;
  double setup_ms_ = 0, pack_ms_ = 0, copy_out_ms_ = 0;
  struct Span {
    Stage stage = Stage::Upload;
    Event start, stop;
    bool closed = false;
  };
  std::vector<std::unique_ptr<Span>> spans_;
};

/// begin/end on a possibly null timer.
inline void stage_begin(StageTimer* t, Stage s, cudaStream_t stream) {
  if (t) t->begin(s, stream);
}
inline void stage_end(StageTimer* t, Stage s, cudaStream_t stream) {
  if (t) t->end(s, stream);
}

/// Times a scope of host work into a possibly null timer.
class HostWorkScope {
 public:
  HostWorkScope(StageTimer* t, HostWork work) : t_(t), work_(work) {
    if (t_) start_ = std::chrono::steady_clock::now();
  }
  ~HostWorkScope() {
    if (!t_) return;
    t_->add_host(work_, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count());
  }
  HostWorkScope(const HostWorkScope&) = delete;
  HostWorkScope& operator=(const HostWorkScope&) = delete;

 private:
  StageTimer* t_;
  HostWork work_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gknn::detail::cuda
