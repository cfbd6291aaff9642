// bits.cu: host side of the bits family (shared with bits_global): k-bucket choice, the single-query
// split of few long rows over many blocks (thesis 4.1, 5.4.2), workspace carving, and the bits entry.
#include <algorithm>
#include <vector>

#include "cuda/common/device.cuh"
#include "cuda/select/bits/bits.cuh"
#include "cuda/select/bits/tuning.hpp"
#include "cuda/select/families.cuh"
#include "cuda/select/support.cuh"

namespace gknn::detail::cuda {
namespace {

/// One launch: rows of `cols` keys, each split into `parts` segments of `seg` keys.
struct Level {
  int64_t cols;
  int parts;
  int64_t seg;
};

/// forced_parts > 0: the first level splits every row into that many segments (clamped so that each segment
/// holds at least one key); 0: bits_tuning::split_parts decides.
std::vector<Level> plan_levels(int64_t rows, int64_t cols, int64_t k, int bucket, int sm_count, int forced_parts) {
  std::vector<Level> levels;
  for (bool first = true;; first = false) {
    selsup::check_columns(cols, "bits");
    int64_t parts = first && forced_parts > 0 ? std::min<int64_t>(forced_parts, cols)
                                              : bits_tuning::split_parts(rows, cols, bucket, sm_count);
    if (parts <= 1) {
      levels.push_back({cols, 1, cols});
      return levels;
    }
    const int64_t seg = (cols + parts - 1) / parts;
    parts = (cols + seg - 1) / seg;  // every segment non-empty
    levels.push_back({cols, static_cast<int>(parts), seg});
    cols = parts * k;  // the next launch merges the per-segment top-k
  }
}

int family_bucket(const BitsFamily& f, int64_t k) {
  const int bucket = f.bucket_for(k);
  GKNN_EXPECT(bucket != 0, ErrorCode::Unsupported, f.name, ": k = ", k, " exceeds the largest bucket ",
              f.largest_bucket);
  return bucket;
}

/// Byte offsets of every level's partial output and of bits_global's top-k home inside one workspace.
struct Carving {
  std::vector<size_t> keys_at, idx_at;
  size_t global_keys_at = 0, global_idx_at = 0, total = 0;
};

Carving carve(const BitsFamily& f, const std::vector<Level>& levels, int64_t rows, int64_t k, int bucket,
              size_t idx_bytes) {
  Carving c;
  int64_t most_blocks = 0;
  for (const Level& lv : levels) {
    most_blocks = std::max(most_blocks, rows * lv.parts);
    if (lv.parts == 1) break;  // the last level writes the caller's output
    const size_t n = static_cast<size_t>(rows * lv.parts * k);
    c.keys_at.push_back(c.total);
    c.total += selsup::align256(n * sizeof(float));
    c.idx_at.push_back(c.total);
    c.total += selsup::align256(n * idx_bytes);
  }
  if (f.global) {
    const size_t n = static_cast<size_t>(most_blocks) * static_cast<size_t>(bucket);
    c.global_keys_at = c.total;
    c.total += selsup::align256(n * sizeof(float));
    c.global_idx_at = c.total;
    c.total += selsup::align256(n * idx_bytes);
  }
  return c;
}

int current_sm_count() {
  int device = 0;
  GKNN_CUDA_TRY(cudaGetDevice(&device));
  return device_props(device).sm_count;
}

}  // namespace

void bits_family_run(const BitsFamily& f, const SelectInput& in, int64_t k, const SelectOutput& out,
                     const SelectContext& ctx) {
  const int bucket = family_bucket(f, k);
  const bool idx64 = in.labels != nullptr;
  const std::vector<Level> levels = plan_levels(in.rows, in.cols, k, bucket, device_props(ctx.device).sm_count,
                                                std::max(ctx.options.overrides.split_parts, 0));
  const Carving c = carve(f, levels, in.rows, k, bucket, idx64 ? sizeof(int64_t) : sizeof(int32_t));
  unsigned char* ws = c.total ? static_cast<unsigned char*>(ctx.workspace.get(c.total)) : nullptr;

  BitsLaunch l;
  l.idx64 = idx64;
  l.keys = in.keys;
  l.idx = in.labels;
  l.stride = in.stride;
  l.rows = in.rows;
  l.k = static_cast<int>(k);
  l.prefetch = ctx.options.prefetch;
  l.stream = ctx.stream;
  if (f.global) l.global_keys = reinterpret_cast<float*>(ws + c.global_keys_at), l.global_idx = ws + c.global_idx_at;
  for (size_t i = 0; i < levels.size(); ++i) {
    l.cols = levels[i].cols;
    l.parts = levels[i].parts;
    l.seg = levels[i].seg;
    const bool last = i + 1 == levels.size();
    if (last) {
      l.out_keys = out.keys, l.out_labels = out.labels, l.out_idx = nullptr;
      l.out_stride = out.stride, l.label_offset = in.label_offset;
    } else {
      l.out_keys = reinterpret_cast<float*>(ws + c.keys_at[i]), l.out_labels = nullptr;
      l.out_idx = ws + c.idx_at[i], l.out_stride = k;
    }
    f.launch(k, l);
    if (!last) {  // the next level reads the per-segment results as rows of parts*k keys with explicit indices
      l.keys = l.out_keys, l.idx = l.out_idx, l.stride = levels[i].parts * k;
    }
  }
}

size_t bits_family_workspace(const BitsFamily& f, int64_t rows, int64_t cols, int64_t k) {
  const int bucket = family_bucket(f, k);
  const std::vector<Level> levels = plan_levels(rows, cols, k, bucket, current_sm_count(), 0);
  return carve(f, levels, rows, k, bucket, sizeof(int64_t)).total;  // labels unknown here: assume int64
}

// ---- the bits entry -----------------------------------------------------------------------------------------

namespace {
constexpr BitsFamily kBits = make_bits_family<bits_tuning::BitsBuckets, false>("bits");
}  // namespace

void bits_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  bits_family_run(kBits, in, k, out, ctx);
}

size_t bits_workspace(int64_t rows, int64_t cols, int64_t k) { return bits_family_workspace(kBits, rows, cols, k); }

}  // namespace gknn::detail::cuda
