#include "join/kdtree.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <numeric>
#include <limits>
#include <vector>

#if GKNN_HAS_NANOFLANN
#include <nanoflann.hpp>
#endif

#include "gknn/error.hpp"
#include "gknn/join.hpp"
#include "core/host_parallel.hpp"
#include "join/problem.hpp"

namespace gknn::detail::join {
namespace {
std::atomic<bool> hidden_for_testing{false};
}  // namespace

bool KdTree::available() { return GKNN_HAS_NANOFLANN && !hidden_for_testing.load(); }
void KdTree::set_unavailable_for_testing(bool unavailable) { hidden_for_testing.store(unavailable); }

#if GKNN_HAS_NANOFLANN
namespace {

// The tree is a forest: the base is cut at medians into 2^levels spatial parts (each split on the widest side of
// its part's box), and every part gets a nanoflann tree of its own, the parts' trees built side by side. One tree
// over 10^7 points was one thread's work for ~4 s (H200 host, 2-D, 2026-11-28), longer than the whole GPU side of
// a hybrid join that left the CPU nothing to answer; the parts build on every core. A query visits its own part
// first, then the others by their boxes' distance, stopping at the first box beyond its k-th distance.
constexpr int kMaxParts = 64;
constexpr int64_t kMinPartRows = int64_t(1) << 15;  // below it a part's tree costs less than a thread's start

/// nanoflann's view of one part: its points copied contiguously (the part's queries stay in its memory), as
/// double so that its own distance sums match ours closely.
struct PartAdaptor {
  const float* points = nullptr;
  size_t count = 0;
  size_t dim = 0;
  size_t kdtree_get_point_count() const { return count; }
  double kdtree_get_pt(uint32_t i, size_t j) const { return points[size_t(i) * dim + j]; }
  template <class Box>
  bool kdtree_get_bbox(Box&) const { return false; }
};

/// A tree with the dimension fixed at compile time (DIM > 0) lets nanoflann unroll its loops.
template <int DIM>
using Tree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, PartAdaptor, double, uint32_t>,
                                                 PartAdaptor, DIM, uint32_t>;

/// The k-th distance widened by a relative 1e-9 (far above float64 rounding) and one denormal step. nanoflann
/// prunes with its own distances (same formula, possibly another rounding) and the forest with box distances: a
/// point at or below the true k-th distance is never pruned, ties included (nanoflann's leaf test is a strict <).
double widened(const BoundedNeighbours& best) {
  const double worst = best.worst();
  if (worst == std::numeric_limits<double>::infinity()) return worst;
  return worst * (1 + 1e-9) + std::numeric_limits<double>::denorm_min();
}

/// A nanoflann result set over one part that ranks by OUR exact distance and the base index: extra candidates
/// are harmless, offer() keeps only the k best in the total order.
class ExactResultSet {
 public:
  ExactResultSet(const float* points, const uint32_t* ids, int64_t dim, const float* query, int64_t exclude,
                 BoundedNeighbours& best)
      : points_(points), ids_(ids), dim_(dim), query_(query), exclude_(exclude), best_(best) {}

  bool addPoint(double, uint32_t local) {
    const int64_t index = ids_[local];
    if (index != exclude_) best_.offer(squared_distance(query_, points_ + int64_t(local) * dim_, dim_), index);
    return true;
  }
  double worstDist() const { return widened(best_); }
  bool full() const { return best_.full(); }

 private:
  const float* points_;
  const uint32_t* ids_;
  int64_t dim_;
  const float* query_;
  int64_t exclude_;
  BoundedNeighbours& best_;
};

/// One part: its rows (base ids) and their coordinates in that order, the tight box around them.
struct Part {
  std::vector<uint32_t> ids;
  std::vector<float> points;
  std::array<double, kJoinMaxGridDim> lo{}, hi{};
  PartAdaptor adaptor;

  /// Squared distance from `q` to the box: at most any member's distance (each term's rounding is monotone).
  double box_distance(const double* q, int64_t dim) const {
    double sum = 0;
    for (int64_t j = 0; j < dim; ++j) {
      const double gap = q[j] < lo[size_t(j)] ? lo[size_t(j)] - q[j] : q[j] > hi[size_t(j)] ? q[j] - hi[size_t(j)] : 0;
      sum += gap * gap;
    }
    return sum;
  }
};

int part_levels(int64_t rows, int parts) {
  const int wanted = parts > 0 ? std::min(parts, kMaxParts) : std::min(kMaxParts, std::max(1, usable_cpus()));
  const int64_t min_rows = parts > 0 ? 1 : kMinPartRows;
  int levels = 0;
  while ((2 << levels) <= wanted && (rows >> (levels + 1)) >= min_rows) ++levels;
  return levels;
}

/// Base ids cut into 2^levels ranges of `ids` (returned as their bounds): each range is split at its median on
/// the widest side of its box (the parent's box with the split side's bound moved to the median). Pairs of
/// (coordinate, id) are sorted in place of indirect compares: the ranges are random rows of the base.
std::vector<int64_t> cut_at_medians(FloatView base, int levels, std::vector<uint32_t>& ids) {
  const int64_t n = base.rows, dim = base.cols;
  std::array<double, kJoinMaxGridDim> lo, hi;
  lo.fill(std::numeric_limits<double>::infinity());
  hi.fill(-std::numeric_limits<double>::infinity());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < dim; ++j) {
      lo[size_t(j)] = std::min(lo[size_t(j)], double(base.row(i)[j]));
      hi[size_t(j)] = std::max(hi[size_t(j)], double(base.row(i)[j]));
    }
  struct Range {
    int64_t begin, end;
    std::array<double, kJoinMaxGridDim> lo, hi;
  };
  std::vector<Range> ranges{{0, n, lo, hi}};
  std::vector<std::pair<float, uint32_t>> keyed(static_cast<size_t>(levels > 0 ? n : 0));
  for (int level = 0; level < levels; ++level) {
    std::vector<Range> next(ranges.size() * 2);
    const int64_t count = int64_t(ranges.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t r = 0; r < count; ++r) {
      const Range& range = ranges[size_t(r)];
      int64_t side = 0;
      for (int64_t j = 1; j < dim; ++j)
        if (range.hi[size_t(j)] - range.lo[size_t(j)] > range.hi[size_t(side)] - range.lo[size_t(side)]) side = j;
      for (int64_t i = range.begin; i < range.end; ++i)
        keyed[size_t(i)] = {base.row(ids[size_t(i)])[side], ids[size_t(i)]};
      const int64_t mid = range.begin + (range.end - range.begin) / 2;
      std::nth_element(keyed.begin() + range.begin, keyed.begin() + mid, keyed.begin() + range.end);
      for (int64_t i = range.begin; i < range.end; ++i) ids[size_t(i)] = keyed[size_t(i)].second;
      Range left = range, right = range;
      left.end = right.begin = mid;
      left.hi[size_t(side)] = right.lo[size_t(side)] = keyed[size_t(mid)].first;
      next[size_t(2 * r)] = left;
      next[size_t(2 * r + 1)] = right;
    }
    ranges = std::move(next);
  }
  std::vector<int64_t> bounds;
  for (const Range& r : ranges) bounds.push_back(r.begin);
  bounds.push_back(n);
  return bounds;
}

}  // namespace

struct KdTree::Impl {
  explicit Impl(FloatView b) : base(b) {}
  virtual ~Impl() = default;
  virtual void search(const float* query, int64_t exclude, BoundedNeighbours& best) const = 0;
  FloatView base;
};

namespace {

template <int DIM>
struct Forest final : KdTree::Impl {
  std::vector<Part> parts;
  std::vector<std::unique_ptr<Tree<DIM>>> trees;

  Forest(FloatView base, int requested_parts) : Impl(base) {
    const int64_t dim = base.cols;
    std::vector<uint32_t> ids(static_cast<size_t>(base.rows));
    std::iota(ids.begin(), ids.end(), uint32_t{0});
    const std::vector<int64_t> bounds = cut_at_medians(base, part_levels(base.rows, requested_parts), ids);
    const int64_t count = int64_t(bounds.size()) - 1;
    parts.resize(size_t(count));  // never resized again: the trees keep references to the parts' adaptors
    trees.resize(size_t(count));
    std::vector<std::exception_ptr> errors(static_cast<size_t>(count));
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t p = 0; p < count; ++p) {
      try {
        Part& part = parts[size_t(p)];
        part.ids.assign(ids.begin() + bounds[size_t(p)], ids.begin() + bounds[size_t(p + 1)]);
        part.points.resize(part.ids.size() * size_t(dim));
        part.lo.fill(std::numeric_limits<double>::infinity());
        part.hi.fill(-std::numeric_limits<double>::infinity());
        for (size_t i = 0; i < part.ids.size(); ++i)
          for (int64_t j = 0; j < dim; ++j) {
            const float v = base.row(part.ids[i])[j];
            part.points[i * size_t(dim) + size_t(j)] = v;
            part.lo[size_t(j)] = std::min(part.lo[size_t(j)], double(v));
            part.hi[size_t(j)] = std::max(part.hi[size_t(j)], double(v));
          }
        part.adaptor = PartAdaptor{part.points.data(), part.ids.size(), size_t(dim)};
        trees[size_t(p)] = std::make_unique<Tree<DIM>>(static_cast<int>(dim), part.adaptor,
                                                       nanoflann::KDTreeSingleIndexAdaptorParams(16));
      } catch (...) {
        errors[size_t(p)] = std::current_exception();
      }
    }
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

  void search(const float* query, int64_t exclude, BoundedNeighbours& best) const override {
    const int64_t dim = base.cols;
    std::array<double, kJoinMaxGridDim> q{};
    std::copy(query, query + dim, q.begin());
    std::array<std::pair<double, int>, kMaxParts> order;
    const int count = int(parts.size());
    for (int p = 0; p < count; ++p) order[size_t(p)] = {parts[size_t(p)].box_distance(q.data(), dim), p};
    std::sort(order.begin(), order.begin() + count);
    for (int i = 0; i < count; ++i) {
      if (order[size_t(i)].first > widened(best)) break;  // this box and every later one lie beyond the k-th
      const Part& part = parts[size_t(order[size_t(i)].second)];
      ExactResultSet results(part.points.data(), part.ids.data(), dim, query, exclude, best);
      trees[size_t(order[size_t(i)].second)]->findNeighbors(results, q.data(), nanoflann::SearchParams(0, 0.0f, false));
    }
  }
};

template <int DIM>
std::unique_ptr<KdTree::Impl> make_tree(FloatView base, int parts) {
  if constexpr (DIM > kJoinMaxGridDim) {
    detail::fail(ErrorCode::Internal, "kd-tree of dimension ", base.cols);
  } else {
    if (base.cols == DIM) return std::make_unique<Forest<DIM>>(base, parts);
    return make_tree<DIM + 1>(base, parts);
  }
}

}  // namespace

KdTree::KdTree(FloatView base, int parts) {
  GKNN_EXPECT(base.cols <= kJoinMaxGridDim, ErrorCode::Internal, "kd-tree of dimension ", base.cols, " > ",
              kJoinMaxGridDim);
  GKNN_EXPECT(base.rows < (int64_t(1) << 32), ErrorCode::Unsupported, "the kd-tree indexes at most 2^32 - 1 points (got ",
              base.rows, ")");
  impl_ = make_tree<1>(base, parts);
}

KdTree::~KdTree() = default;

void KdTree::search(const float* query, int64_t exclude, BoundedNeighbours& best) const {
  impl_->search(query, exclude, best);
}

#else
// Without nanoflann (libnanoflann-dev) there is no tree: a scan of the whole base per query, the same exact result
// in the same total order at O(n) per query. knn_join reaches it only when the base has fewer rows than k (every
// base row is then in every answer, so the scan is the right algorithm); the modes that would need the tree for
// anything larger are refused with Unsupported (join.cpp, KdTree::available()).
struct KdTree::Impl {
  FloatView base;
};

KdTree::KdTree(FloatView base, int) : impl_(std::make_unique<Impl>(Impl{base})) {}
KdTree::~KdTree() = default;

void KdTree::search(const float* query, int64_t exclude, BoundedNeighbours& best) const {
  const FloatView& base = impl_->base;
  for (int64_t i = 0; i < base.rows; ++i)
    if (i != exclude) best.offer(squared_distance(query, base.row(i), base.cols), i);
}
#endif

}  // namespace gknn::detail::join
