#include "join/kdtree.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include <nanoflann.hpp>

#include "gknn/error.hpp"
#include "gknn/join.hpp"
#include "join/problem.hpp"

namespace gknn::detail::join {
namespace {

/// nanoflann's view of the base: coordinates widened to double, so its own distance sums match ours closely.
struct BaseAdaptor {
  FloatView base;
  size_t kdtree_get_point_count() const { return static_cast<size_t>(base.rows); }
  double kdtree_get_pt(uint32_t i, size_t j) const { return base.row(i)[j]; }
  template <class Box>
  bool kdtree_get_bbox(Box&) const { return false; }
};

using Tree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, BaseAdaptor, double, uint32_t>,
                                                 BaseAdaptor, -1, uint32_t>;

/// A nanoflann result set that ranks by OUR exact distance and index. nanoflann prunes with its own distances
/// (same formula, possibly another rounding) against worstDist(); the k-th distance is therefore widened by a
/// relative 1e-9 (far above float64 rounding) and one denormal step, so that no point at or below the true k-th
/// distance is ever pruned, ties included (its leaf test is a strict <). Extra candidates are harmless: offer()
/// keeps only the k best in the total order.
class ExactResultSet {
 public:
  ExactResultSet(FloatView base, const float* query, int64_t exclude, BoundedNeighbours& best)
      : base_(base), query_(query), exclude_(exclude), best_(best) {}

  bool addPoint(double, uint32_t index) {
    if (static_cast<int64_t>(index) != exclude_)
      best_.offer(squared_distance(query_, base_.row(index), base_.cols), index);
    return true;
  }
  double worstDist() const {
    const double worst = best_.worst();
    if (worst == std::numeric_limits<double>::infinity()) return worst;
    return worst * (1 + 1e-9) + std::numeric_limits<double>::denorm_min();
  }
  bool full() const { return best_.full(); }

 private:
  FloatView base_;
  const float* query_;
  int64_t exclude_;
  BoundedNeighbours& best_;
};

}  // namespace

struct KdTree::Impl {
  BaseAdaptor adaptor;
  Tree tree;
  explicit Impl(FloatView base)
      : adaptor{base}, tree(static_cast<int>(base.cols), adaptor, nanoflann::KDTreeSingleIndexAdaptorParams(16)) {}
};

KdTree::KdTree(FloatView base) {
  GKNN_EXPECT(base.cols <= kJoinMaxGridDim, ErrorCode::Internal, "kd-tree of dimension ", base.cols, " > ",
              kJoinMaxGridDim);
  GKNN_EXPECT(base.rows < (int64_t(1) << 32), ErrorCode::Unsupported, "the kd-tree indexes at most 2^32 - 1 points (got ",
              base.rows, ")");
  impl_ = std::make_unique<Impl>(base);
}

KdTree::~KdTree() = default;

void KdTree::search(const float* query, int64_t exclude, BoundedNeighbours& best) const {
  const FloatView& base = impl_->adaptor.base;
  std::array<double, kJoinMaxGridDim> q{};
  std::copy(query, query + base.cols, q.begin());
  ExactResultSet results(base, query, exclude, best);
  impl_->tree.findNeighbors(results, q.data(), nanoflann::SearchParams(0, 0.0f, false));
}

}  // namespace gknn::detail::join
