// split_plan.hpp: into how many segments bits splits each row (plain C++, host-tested).
//
// One thread block per (row, segment). With few rows (the single-query path, thesis 4.1 / 5.4.2) one block
// per row leaves most SMs idle, so each row is split; the per-segment top-k lists are merged by a further
// launch. Many rows are not split: measured on the H100 (1024 x 2^20, bits+prefetch), splitting each row in 3
// to fill the last wave of blocks made k = 32 and k = 128 10-15% slower, not faster.
#pragma once

#include <algorithm>
#include <cstdint>

namespace gknn::cuda_detail {

inline int bits_split_parts(int64_t rows, int64_t cols, int bucket, int sm_count) {
  if (rows >= sm_count) return 1;
  // Enough blocks for a few resident per SM (loads in flight), but segments long enough that the extra merge
  // pass over parts * k partial results stays small next to the row itself.
  const int64_t min_seg = std::max<int64_t>(8192, 8 * int64_t(bucket));
  const int64_t by_length = cols / min_seg;
  const int64_t by_occupancy = (4 * int64_t(sm_count) + rows - 1) / rows;
  return static_cast<int>(std::clamp<int64_t>(std::min(by_length, by_occupancy), 1, 1 << 16));
}

}  // namespace gknn::cuda_detail
