// segments.hpp: how gknn cuts rows into parts, and local row -> global index of a part of a base that was
// appended in several batches (a shard of a ShardedIndex, the rows of one MPI rank): each batch is one contiguous
// global range.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/host_parallel.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {

/// Part `part` of `parts` of n rows under the near-equal cut that every split of gknn uses (shards of a
/// ShardedIndex, replicated query ranges, MPI ranks): the first n % parts parts get one row more.
struct PartRange {
  int64_t begin, end;
};
inline PartRange near_equal_part(int64_t n, int64_t part, int64_t parts) {
  const int64_t base = n / parts, extra = n % parts;
  const int64_t begin = part * base + std::min(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}

class GlobalRows {
 public:
  /// The next `count` local rows are global rows [global_begin, global_begin + count).
  void append(int64_t global_begin, int64_t count) {
    if (count > 0) segments_.push_back({local_rows_, global_begin}), local_rows_ += count;
  }
  void clear() { segments_.clear(), local_rows_ = 0; }
  int64_t local_rows() const { return local_rows_; }

  int64_t global(int64_t local) const {
    auto after = std::upper_bound(segments_.begin(), segments_.end(), local,
                                  [](int64_t i, const Segment& s) { return i < s.local_begin; });
    return (after - 1)->global_begin + (local - (after - 1)->local_begin);
  }
  /// The segments as two ascending columns: local rows from local_begin[i] are global rows from global_begin[i]
  /// (for a device that maps them itself, cuda DeviceListPart).
  void segments(std::vector<int64_t>& local_begin, std::vector<int64_t>& global_begin) const {
    local_begin.clear(), global_begin.clear();
    for (const Segment& s : segments_) local_begin.push_back(s.local_begin), global_begin.push_back(s.global_begin);
  }
  /// These rows mapped on through `outer`, whose local rows are this one's global rows (a shard's rows in an MPI
  /// rank's index, then the rank's rows in the DistributedIndex): local -> outer.global(global(local)), as segments.
  GlobalRows then(const GlobalRows& outer) const {
    GlobalRows out;
    for (size_t i = 0; i < segments_.size(); ++i) {
      const int64_t end = i + 1 < segments_.size() ? segments_[i + 1].local_begin : local_rows_;
      int64_t pos = segments_[i].global_begin, left = end - segments_[i].local_begin;
      while (left > 0) {  // one outer segment at a time
        const auto after = std::upper_bound(outer.segments_.begin(), outer.segments_.end(), pos,
                                            [](int64_t p, const Segment& s) { return p < s.local_begin; });
        const int64_t outer_end = after == outer.segments_.end() ? outer.local_rows_ : after->local_begin;
        const int64_t run = std::min(left, outer_end - pos);
        GKNN_EXPECT(after != outer.segments_.begin() && run > 0, ErrorCode::Internal, "GlobalRows::then: row ", pos,
                    " is outside the outer rows (", outer.local_rows_, ")");
        out.append((after - 1)->global_begin + (pos - (after - 1)->local_begin), run);
        pos += run, left -= run;
      }
    }
    return out;
  }
  /// Rewrites local indices to global ones (every entry must be a valid local row), in ranges on the host pool: an
  /// MPI rank's 10k x 100 lists are 8 MB of indices, a millisecond on one thread before the root may merge them.
  void to_global(std::span<int64_t> indices) const {
    const int64_t count = static_cast<int64_t>(indices.size()), min_part = int64_t(1) << 16;
    if (segments_.size() != 1) {
      host_for(count, 1, min_part, 0, [&](int64_t e) { indices[size_t(e)] = global(indices[size_t(e)]); });
      return;
    }
    const int64_t shift = segments_[0].global_begin;  // the common one-batch case (none for the first shard)
    if (shift != 0) host_for(count, 1, min_part, 0, [&](int64_t e) { indices[size_t(e)] += shift; });
  }

 private:
  struct Segment {
    int64_t local_begin, global_begin;
  };
  std::vector<Segment> segments_;
  int64_t local_rows_ = 0;
};

}  // namespace gknn::detail
