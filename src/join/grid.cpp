#include "join/grid.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include <parallel/algorithm>

#include "join/problem.hpp"

namespace gknn::detail::join {

/// One pass over the rows (a pass per dimension read every row d times), min/max per thread, merged at the end.
BoundingBox bounding_box(FloatView points) {
  const int dim = static_cast<int>(points.cols);
  BoundingBox box;
  for (int j = 0; j < dim; ++j) {
    box.lo[j] = std::numeric_limits<double>::infinity();
    box.hi[j] = -std::numeric_limits<double>::infinity();
  }
#pragma omp parallel if (points.rows >= 65536)
  {
    float lo[kGridMaxDim], hi[kGridMaxDim];
    for (int j = 0; j < dim; ++j) {
      lo[j] = std::numeric_limits<float>::infinity();
      hi[j] = -std::numeric_limits<float>::infinity();
    }
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < points.rows; ++i) {
      const float* row = points.row(i);
      for (int j = 0; j < dim; ++j) {
        lo[j] = std::min(lo[j], row[j]);
        hi[j] = std::max(hi[j], row[j]);
      }
    }
#pragma omp critical
    for (int j = 0; j < dim; ++j) {
      box.lo[j] = std::min(box.lo[j], double(lo[j]));
      box.hi[j] = std::max(box.hi[j], double(hi[j]));
    }
  }
  return box;
}

uint64_t cell_key(const GridGeometry& g, const float* point) {
  uint64_t key = 0;
  for (int j = 0; j < g.dim; ++j) {
    const int64_t c = g.coord(j, point[j]);
    if (!g.inside(j, c)) return std::numeric_limits<uint64_t>::max();
    key += static_cast<uint64_t>(c) * g.stride[j];
  }
  return key;
}

HostGrid::HostGrid(FloatView base, const GridGeometry& geometry) : base_(base), geometry_(geometry) {
  std::vector<std::pair<uint64_t, int64_t>> keyed(static_cast<size_t>(base.rows));
#pragma omp parallel for if (base.rows >= 65536)
  for (int64_t i = 0; i < base.rows; ++i) keyed[size_t(i)] = {cell_key(geometry, base.row(i)), i};
  __gnu_parallel::sort(keyed.begin(), keyed.end());
  ids_.resize(keyed.size());
  for (size_t i = 0; i < keyed.size(); ++i) {
    ids_[i] = keyed[i].second;
    if (i == 0 || keyed[i].first != keyed[i - 1].first) {
      keys_.push_back(keyed[i].first);
      starts_.push_back(static_cast<int64_t>(i));
    }
  }
  starts_.push_back(static_cast<int64_t>(keyed.size()));
}

int64_t HostGrid::find_cell(uint64_t key) const {
  const auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  return it != keys_.end() && *it == key ? it - keys_.begin() : -1;
}

int64_t HostGrid::population(const float* point) const {
  const uint64_t key = cell_key(geometry_, point);
  const int64_t cell = key == std::numeric_limits<uint64_t>::max() ? -1 : find_cell(key);
  return cell < 0 ? 0 : starts_[size_t(cell + 1)] - starts_[size_t(cell)];
}

std::vector<int64_t> HostGrid::ids_by_population() const {
  const int64_t cells = static_cast<int64_t>(keys_.size());
  // (-population, cell): the cells are numbered in key order, so this sorts by population, then key.
  std::vector<std::pair<int64_t, int64_t>> by_population(static_cast<size_t>(cells));
#pragma omp parallel for if (cells >= 65536)
  for (int64_t c = 0; c < cells; ++c) by_population[size_t(c)] = {starts_[size_t(c)] - starts_[size_t(c + 1)], c};
  __gnu_parallel::sort(by_population.begin(), by_population.end());
  std::vector<int64_t> out_start(static_cast<size_t>(cells) + 1, 0);
  for (int64_t i = 0; i < cells; ++i) out_start[size_t(i + 1)] = out_start[size_t(i)] - by_population[size_t(i)].first;
  std::vector<int64_t> order(ids_.size());
  // A cell's ids are ascending (the grid sorted (key, id) pairs): copied as they are.
#pragma omp parallel for schedule(dynamic, 256) if (cells >= 65536)
  for (int64_t i = 0; i < cells; ++i) {
    const int64_t c = by_population[size_t(i)].second;
    std::copy(ids_.begin() + starts_[size_t(c)], ids_.begin() + starts_[size_t(c + 1)],
              order.begin() + out_start[size_t(i)]);
  }
  return order;
}

bool HostGrid::range_query(const float* query, int64_t exclude, int rings, BoundedNeighbours& best) const {
  const GridGeometry& g = geometry_;
  int64_t centre[kGridMaxDim];
  for (int j = 0; j < g.dim; ++j) centre[j] = g.coord(j, query[j]);
  const double keep = g.trusted_sq(rings);  // farther candidates can never be part of a certain answer
  for (int ring = 1; ring <= rings; ++ring) {
    for (int64_t offset = 0; offset < g.ring_offsets(ring); ++offset) {
      uint64_t key = 0;
      const int64_t cell = g.ring_cell(centre, ring, offset, key) ? find_cell(key) : -1;
      if (cell < 0) continue;
      for (int64_t p = starts_[size_t(cell)]; p < starts_[size_t(cell + 1)]; ++p) {
        const int64_t id = ids_[size_t(p)];
        if (id == exclude) continue;
        const double d = squared_distance(query, base_.row(id), g.dim);
        if (d <= keep) best.offer(d, id);
      }
    }
    if (best.full() && best.worst() <= g.trusted_sq(ring)) return true;  // k certain within this ring
  }
  return false;
}

}  // namespace gknn::detail::join
