// warp_select.cu: the dispatch of the warp-queue family (warp_select and block_select): k -> bucket, the policy's
// thread-queue length (or the user's) -> kernel; and the warp_select entry.
#include "cuda/select/families.cuh"
#include "cuda/select/support.cuh"
#include "cuda/select/warp_queue/tuning.hpp"
#include "cuda/select/warp_queue/warp_select.cuh"

namespace gknn::detail::cuda {

void warp_queue_family_run(bool block, const SelectInput& in, int64_t k, const SelectOutput& out,
                           const SelectContext& ctx) {
  using namespace warp_queue;
  const char* name = block ? "block_select" : "warp_select";
  selsup::check_columns(in.cols, name);
  const int requested = ctx.options.overrides.thread_queue;
  GKNN_EXPECT(requested == 0 || (requested >= kMinLength && requested <= kMaxLength), ErrorCode::InvalidArgument,
              name, ": thread_queue must be 0 (default) or ", kMinLength, "..", kMaxLength, ", got ", requested);
  with_bucket(WarpQueueBuckets{}, k, name, [&](auto bucket) {
    constexpr int K = decltype(bucket)::value;
    const RowsLaunch l{&in, static_cast<int>(k), &out, ctx.stream,
                       requested ? requested : policy(kPolicyArch, block, K).thread_queue};
    if (block) block_select_launch<K>(l);
    else warp_select_launch<K>(l);
  });
}

void warp_select_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  warp_queue_family_run(false, in, k, out, ctx);
}

size_t warp_select_workspace(int64_t, int64_t, int64_t) { return 0; }

}  // namespace gknn::detail::cuda
