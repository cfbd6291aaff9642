// cuda_disabled.cpp: the CUDA backend's entry points in a build without CUDA (GKNN_CUDA=OFF or no nvcc).
#include "core/backend.hpp"
#include "gknn/error.hpp"

namespace gknn::detail::cuda {
namespace {
[[noreturn]] void no_cuda() {
  fail(ErrorCode::Unsupported, "this gknn build has no CUDA backend (configure with -DGKNN_CUDA=ON and nvcc present)");
}
}  // namespace

bool available() { return false; }
ValueStats device_value_stats(FloatView, std::string_view) { return ValueStats{false, false, 0.f, false}; }
void search_into(FloatView, FloatView, const SearchParams&, const ValueStats&, const ValueStats&, const OutputSpec&) {
  no_cuda();
}
void select_into(FloatView, const int64_t*, int64_t, bool, const SelectParams&, const OutputSpec&) { no_cuda(); }
void device_reject_nan(FloatView, std::string_view) {}
std::unique_ptr<ResidentStore> make_store(int64_t, int) { no_cuda(); }
std::unique_ptr<DeviceListMerge> device_list_merge(const std::vector<DeviceListPart>&, int64_t, int64_t) {
  return nullptr;
}
std::unique_ptr<ProcessListMerge> process_list_merge() { return nullptr; }
std::vector<DistanceAlgorithm> distance_algorithms(Metric) { return {}; }
std::vector<SelectCapability> select_algorithms() { return {}; }
std::vector<DeviceInfo> devices() { return {}; }
void explain(const SearchParams&, int64_t, int64_t, int64_t, const ValueStats&, SearchPlan&) { no_cuda(); }
std::vector<float> download_rows(FloatView) { no_cuda(); }
std::vector<double> exact_keys(FloatView, FloatView, const KeyResult&, Metric, double) { no_cuda(); }
double max_row_norm(FloatView) { no_cuda(); }
void upload_result(const Result&, const ResultView&) { no_cuda(); }
void scatter_rows(const Result&, const std::vector<int64_t>&, const ResultView&) { no_cuda(); }

}  // namespace gknn::detail::cuda
