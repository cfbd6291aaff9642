// bits.cu: host side of the bits family (shared with bits_global): k-bucket choice, the single-query
// split of few long rows over many blocks (thesis 4.1, 5.4.2), workspace carving, and the bits entry.
#include <algorithm>
#include <vector>

#include "cuda/common/device.cuh"
#include "cuda/primitives/select_support.cuh"
#include "cuda/select/bits/bits.cuh"
#include "cuda/select/families.cuh"

namespace gknn::cuda_detail {
namespace {

int g_forced_parts = 0;

/// One launch: rows of `cols` keys, each split into `parts` segments of `seg` keys.
struct Level {
  int64_t cols;
  int parts;
  int64_t seg;
};

std::vector<Level> plan_levels(int64_t rows, int64_t cols, int64_t k, int bucket, int sm_count) {
  std::vector<Level> levels;
  for (bool first = true;; first = false) {
    selsup::check_columns(cols, "bits");
    int64_t parts = first && g_forced_parts > 0 ? std::min<int64_t>(g_forced_parts, cols)
                                                : bits_split_parts(rows, cols, bucket, sm_count);
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
  for (int i = 0; i < f.bucket_count; ++i)
    if (k <= f.buckets[i]) return f.buckets[i];
  detail::fail(ErrorCode::Unsupported, f.name, ": k = ", k, " exceeds the largest bucket ",
               f.buckets[f.bucket_count - 1]);
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

int bits_split_parts(int64_t rows, int64_t cols, int bucket, int sm_count) {
  if (rows >= sm_count) return 1;
  // Enough blocks for a few resident per SM (loads in flight), but segments long enough that the extra
  // merge pass over parts*k partial results stays small next to the row itself.
  const int64_t min_seg = std::max<int64_t>(8192, 8 * int64_t(bucket));
  const int64_t by_length = cols / min_seg;
  const int64_t by_occupancy = (4 * int64_t(sm_count) + rows - 1) / rows;
  return static_cast<int>(std::clamp<int64_t>(std::min(by_length, by_occupancy), 1, 1 << 16));
}

void bits_force_parts(int parts) { g_forced_parts = std::max(parts, 0); }

void bits_family_run(const BitsFamily& f, const SelectInput& in, int64_t k, const SelectOutput& out,
                     const SelectContext& ctx) {
  const int bucket = family_bucket(f, k);
  const std::vector<Level> levels = plan_levels(in.rows, in.cols, k, bucket, device_props(ctx.device).sm_count);
  const bool idx64 = in.labels != nullptr;
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
    f.launch(bucket, l);
    if (!last) {  // the next level reads the per-segment results as rows of parts*k keys with explicit indices
      l.keys = l.out_keys, l.idx = l.out_idx, l.stride = levels[i].parts * k;
    }
  }
}

size_t bits_family_workspace(const BitsFamily& f, int64_t rows, int64_t cols, int64_t k) {
  const int bucket = family_bucket(f, k);
  const std::vector<Level> levels = plan_levels(rows, cols, k, bucket, current_sm_count());
  return carve(f, levels, rows, k, bucket, sizeof(int64_t)).total;  // labels unknown here: assume int64
}

// ---- the bits entry -----------------------------------------------------------------------------------------

namespace {
constexpr int kBitsBuckets[] = {32, 64, 128, 256, 512, 1024, 2048};

void launch_bits_bucket(int bucket, const BitsLaunch& l) {
  switch (bucket) {
    case 32: return bits_launch<32, false>(l);
    case 64: return bits_launch<64, false>(l);
    case 128: return bits_launch<128, false>(l);
    case 256: return bits_launch<256, false>(l);
    case 512: return bits_launch<512, false>(l);
    case 1024: return bits_launch<1024, false>(l);
    case 2048: return bits_launch<2048, false>(l);
  }
  detail::fail(ErrorCode::Internal, "bits: no kernel for bucket ", bucket);
}

const BitsFamily kBits{"bits", false, kBitsBuckets, int(std::size(kBitsBuckets)), launch_bits_bucket};
}  // namespace

void bits_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  bits_family_run(kBits, in, k, out, ctx);
}

size_t bits_workspace(int64_t rows, int64_t cols, int64_t k) { return bits_family_workspace(kBits, rows, cols, k); }

}  // namespace gknn::cuda_detail
