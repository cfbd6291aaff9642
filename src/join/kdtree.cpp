#include "join/kdtree.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <vector>

#if GKNN_HAS_NANOFLANN
#include <nanoflann.hpp>
#endif

#include "gknn/error.hpp"
#include "gknn/join.hpp"
#include "join/problem.hpp"

namespace gknn::detail::join {
namespace {
std::atomic<bool> hidden_for_testing{false};
}  // namespace

bool KdTree::available() { return GKNN_HAS_NANOFLANN && !hidden_for_testing.load(); }
void KdTree::set_unavailable_for_testing(bool unavailable) { hidden_for_testing.store(unavailable); }

#if GKNN_HAS_NANOFLANN
namespace {

/// nanoflann's view of the base: coordinates widened to double, so its own distance sums match ours closely.
struct BaseAdaptor {
  FloatView base;
  size_t kdtree_get_point_count() const { return static_cast<size_t>(base.rows); }
  double kdtree_get_pt(uint32_t i, size_t j) const { return base.row(i)[j]; }
  template <class Box>
  bool kdtree_get_bbox(Box&) const { return false; }
};

/// A tree with the dimension fixed at compile time (DIM > 0) lets nanoflann unroll its loops.
template <int DIM>
using Tree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, BaseAdaptor, double, uint32_t>,
                                                 BaseAdaptor, DIM, uint32_t>;

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
  explicit Impl(FloatView base) : adaptor{base} {}
  virtual ~Impl() = default;
  virtual void search(const double* query, ExactResultSet& results) const = 0;
  BaseAdaptor adaptor;
};

namespace {

template <int DIM>
struct FixedTree final : KdTree::Impl {
  Tree<DIM> tree;
  explicit FixedTree(FloatView base)
      : Impl(base), tree(static_cast<int>(base.cols), adaptor, nanoflann::KDTreeSingleIndexAdaptorParams(16)) {}
  void search(const double* query, ExactResultSet& results) const override {
    tree.findNeighbors(results, query, nanoflann::SearchParams(0, 0.0f, false));
  }
};

template <int DIM>
std::unique_ptr<KdTree::Impl> make_tree(FloatView base) {
  if constexpr (DIM > kJoinMaxGridDim) {
    detail::fail(ErrorCode::Internal, "kd-tree of dimension ", base.cols);
  } else {
    if (base.cols == DIM) return std::make_unique<FixedTree<DIM>>(base);
    return make_tree<DIM + 1>(base);
  }
}

}  // namespace

KdTree::KdTree(FloatView base) {
  GKNN_EXPECT(base.cols <= kJoinMaxGridDim, ErrorCode::Internal, "kd-tree of dimension ", base.cols, " > ",
              kJoinMaxGridDim);
  GKNN_EXPECT(base.rows < (int64_t(1) << 32), ErrorCode::Unsupported, "the kd-tree indexes at most 2^32 - 1 points (got ",
              base.rows, ")");
  impl_ = make_tree<1>(base);
}

KdTree::~KdTree() = default;

void KdTree::search(const float* query, int64_t exclude, BoundedNeighbours& best) const {
  const FloatView& base = impl_->adaptor.base;
  std::array<double, kJoinMaxGridDim> q{};
  std::copy(query, query + base.cols, q.begin());
  ExactResultSet results(base, query, exclude, best);
  impl_->search(q.data(), results);
}

#else
// Without nanoflann (libnanoflann-dev) there is no tree: a scan of the whole base per query, the same exact result
// in the same total order at O(n) per query. knn_join reaches it only when the base has fewer rows than k (every
// base row is then in every answer, so the scan is the right algorithm); the modes that would need the tree for
// anything larger are refused with Unsupported (join.cpp, KdTree::available()).
struct KdTree::Impl {
  FloatView base;
};

KdTree::KdTree(FloatView base) : impl_(std::make_unique<Impl>(Impl{base})) {}
KdTree::~KdTree() = default;

void KdTree::search(const float* query, int64_t exclude, BoundedNeighbours& best) const {
  const FloatView& base = impl_->base;
  for (int64_t i = 0; i < base.rows; ++i)
    if (i != exclude) best.offer(squared_distance(query, base.row(i), base.cols), i);
}
#endif

}  // namespace gknn::detail::join
