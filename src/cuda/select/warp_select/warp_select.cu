// warp_select.cu: entries of warp_select and block_select: k -> bucket, thread-queue length -> kernel.
#include "cuda/primitives/select_support.cuh"
#include "cuda/select/families.cuh"
#include "cuda/select/warp_select/thread_queue_defaults.hpp"
#include "cuda/select/warp_select/warp_select.cuh"

namespace gknn::cuda_detail {
namespace {
constexpr int kBuckets[] = {32, 64, 128, 256, 512, 1024, 2048};  // 2048: FAISS' limit
}  // namespace

void warp_queue_family_run(bool block, const SelectInput& in, int64_t k, const SelectOutput& out,
                           const SelectContext& ctx) {
  const char* name = block ? "block_select" : "warp_select";
  selsup::check_columns(in.cols, name);
  const int bucket = selsup::bucket_for(k, kBuckets, name);
  const int requested = ctx.options.thread_queue;
  GKNN_EXPECT(requested == 0 || (requested >= thread_queue::kMinLength && requested <= thread_queue::kMaxLength),
              ErrorCode::InvalidArgument, name, ": thread_queue must be 0 (default) or ", thread_queue::kMinLength,
              "..", thread_queue::kMaxLength, ", got ", requested);
  const WarpQueueLaunch l{&in, static_cast<int>(k), &out,
                          requested ? requested : thread_queue::default_length(block, bucket), ctx.stream};
  switch (bucket) {
#define GKNN_CASE(K) \
  case K: return block ? block_select_launch<K>(l) : warp_select_launch<K>(l);
    GKNN_CASE(32) GKNN_CASE(64) GKNN_CASE(128) GKNN_CASE(256) GKNN_CASE(512) GKNN_CASE(1024) GKNN_CASE(2048)
#undef GKNN_CASE
  }
  detail::fail(ErrorCode::Internal, name, ": no kernel for k = ", k);
}

void warp_select_run(const SelectInput& in, int64_t k, const SelectOutput& out, const SelectContext& ctx) {
  warp_queue_family_run(false, in, k, out, ctx);
}

size_t warp_select_workspace(int64_t, int64_t, int64_t) { return 0; }

}  // namespace gknn::cuda_detail
