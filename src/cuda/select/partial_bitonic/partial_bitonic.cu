// partial_bitonic.cu: the partial_bitonic entry: k -> bucket -> kernel.
#include <iterator>

#include "cuda/primitives/select_support.cuh"
#include "cuda/select/families.cuh"
#include "cuda/select/partial_bitonic/partial_bitonic.cuh"

namespace gknn::cuda_detail {
namespace {
constexpr int kBuckets[] = {32, 64, 128, 256, 512, 1024, 2048};
}  // namespace

void partial_bitonic_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  selsup::check_columns(in.cols, "partial_bitonic");
  const PartialBitonicLaunch l{&in, static_cast<int>(k), &out, ctx.stream};
  switch (selsup::bucket_for(k, kBuckets, "partial_bitonic")) {
    case 32: return partial_bitonic_launch<32>(l);
    case 64: return partial_bitonic_launch<64>(l);
    case 128: return partial_bitonic_launch<128>(l);
    case 256: return partial_bitonic_launch<256>(l);
    case 512: return partial_bitonic_launch<512>(l);
    case 1024: return partial_bitonic_launch<1024>(l);
    case 2048: return partial_bitonic_launch<2048>(l);
  }
  detail::fail(ErrorCode::Internal, "partial_bitonic: no kernel for k = ", k);
}

size_t partial_bitonic_workspace(int64_t, int64_t, int64_t) { return 0; }

}  // namespace gknn::cuda_detail
