// store.cpp: the CPU backend's ResidentStore: rows copied into one contiguous host vector, with their
// squared norms kept alongside so that GEMM searches on an Index do not recompute them each time.
#include <vector>

#include "core/backend.hpp"
#include "core/guard.hpp"
#include "cpu/distance/tile_kernel.hpp"
#include "cpu/search.hpp"

namespace gknn::detail::cpu {
namespace {

class HostStore final : public ResidentStore {
 public:
  explicit HostStore(int64_t dim) : dim_(dim) {}

  void append(FloatView rows, const ValueStats& stats) override {
    if (rows.rows == 0) return;
    rows_.reserve(rows_.size() + size_t(rows.rows * dim_));
    for (int64_t i = 0; i < rows.rows; ++i) rows_.insert(rows_.end(), rows.row(i), rows.row(i) + dim_);
    const std::vector<float> norms = squared_norms(rows);
    norms_.insert(norms_.end(), norms.begin(), norms.end());
    stats_ = size() == rows.rows ? stats : stats_.merged(stats);
  }

  void clear() override {
    rows_.clear();
    norms_.clear();
    stats_ = ValueStats{};
  }

  ValueStats facts() const override { return stats_; }

  std::vector<double> exact_keys(FloatView queries, const KeyResult& candidates, Metric key_metric, double p,
                                 int threads) const override {
    return host_exact_keys(view(), queries, candidates, key_metric, p, threads);
  }

  double max_row_norm() const override { return max_norm_of_squares(norms_.data(), size(), dim_); }

  int64_t size() const override { return static_cast<int64_t>(norms_.size()); }

  void search_into(FloatView queries, const SearchParams& key_params, const ValueStats&,
                   const OutputSpec& out) const override {
    finalize_into(search_with_norms(view(), norms_.data(), queries, key_params), out, key_params.threads);
  }

 private:
  FloatView view() const { return FloatView{rows_.data(), size(), dim_, dim_}; }

  int64_t dim_;
  std::vector<float> rows_;
  std::vector<float> norms_;
  ValueStats stats_;  ///< of every stored row
};

}  // namespace

std::unique_ptr<ResidentStore> make_store(int64_t dim) { return std::make_unique<HostStore>(dim); }

}  // namespace gknn::detail::cpu
