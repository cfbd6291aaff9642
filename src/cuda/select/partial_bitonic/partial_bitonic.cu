// partial_bitonic.cu: the partial_bitonic entry: k -> bucket (tuning.hpp) -> kernel.
#include "cuda/select/families.cuh"
#include "cuda/select/partial_bitonic/partial_bitonic.cuh"
#include "cuda/select/partial_bitonic/tuning.hpp"
#include "cuda/select/support.cuh"

namespace gknn::detail::cuda {

void partial_bitonic_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  selsup::check_columns(in.cols, "partial_bitonic");
  const RowsLaunch l{&in, static_cast<int>(k), &out, ctx.stream};
  with_bucket(partial_bitonic_tuning::PartialBitonicBuckets{}, k, "partial_bitonic",
              [&](auto bucket) { partial_bitonic_launch<decltype(bucket)::value>(l); });
}

size_t partial_bitonic_workspace(int64_t, int64_t, int64_t) { return 0; }

}  // namespace gknn::detail::cuda
