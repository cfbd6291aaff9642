// stage_timer.cuh: optional CUDA-event timing of the pipeline's stages (hooks.hpp: set_stage_timing).
#pragma once

#include <memory>
#include <vector>

#include "cuda/common/buffer.cuh"
#include "cuda/hooks.hpp"

namespace gknn::cuda_detail {

enum class Stage { Upload, Distance, Select, Merge, Download };

class StageTimer {
 public:
  /// A timer that records nothing unless stage timing is switched on.
  static std::unique_ptr<StageTimer> if_enabled();

  void begin(Stage stage, cudaStream_t stream);
  void end(Stage stage, cudaStream_t stream);  ///< closes the latest open span of `stage`
  /// Sums the spans (every stream must be synchronised) and publishes them as last_stage_times().
  void publish(int64_t query_tiles, int64_t base_tiles);

 private:
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

}  // namespace gknn::cuda_detail
