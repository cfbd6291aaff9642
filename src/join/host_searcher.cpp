// host_searcher.cpp: the GPU side emulated on the host grid (tests, and machines without CUDA).
#include <numeric>
#include <optional>

#include "join/grid.hpp"
#include "join/grid_searcher.hpp"

#include "gknn/error.hpp"

namespace gknn::detail::join {

std::vector<double> GridSearcher::sample_histogram(const std::vector<int64_t>&, const Binning&) {
  detail::fail(ErrorCode::Internal, "join: this grid searcher counts no histograms (counts_histograms() is false)");
}

namespace {

class HostSearcher final : public GridSearcher {
 public:
  HostSearcher(const Problem& problem, const Output& output, int rings)
      : problem_(problem), output_(output), rings_(rings) {}

  void build(const GridGeometry& geometry) override { grid_.emplace(problem_.base, geometry); }

  std::vector<int64_t> search(const std::vector<int64_t>& ids) override {
    std::vector<char> failed(ids.size(), 0);
#pragma omp parallel if (ids.size() >= 4096)
    {
      BoundedNeighbours best(problem_.k);
#pragma omp for schedule(dynamic, 64)
      for (size_t i = 0; i < ids.size(); ++i) {
        const int64_t q = ids[i];
        best.clear();
        if (grid_->range_query(problem_.queries.row(q), problem_.excluded(q), rings_, best))
          output_.write_row(problem_, q, best.sorted());
        else
          failed[i] = 1;
      }
    }
    std::vector<int64_t> out;
    for (size_t i = 0; i < ids.size(); ++i)
      if (failed[i]) out.push_back(ids[i]);
    return out;
  }

  std::vector<int64_t> search_all() override {
    std::vector<int64_t> ids(static_cast<size_t>(problem_.queries.rows));
    std::iota(ids.begin(), ids.end(), 0);
    return search(ids);
  }

 private:
  Problem problem_;
  Output output_;
  int rings_;
  std::optional<HostGrid> grid_;
};

}  // namespace

std::unique_ptr<GridSearcher> make_host_searcher(const Problem& problem, const Output& output, int rings) {
  return std::make_unique<HostSearcher>(problem, output, rings);
}

}  // namespace gknn::detail::join
