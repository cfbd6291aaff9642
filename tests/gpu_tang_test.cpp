// gpu_tang_test.cpp: Tang et al.'s queues on the device, called through the GPU selection table
// (detail::cuda::find_select) on device-resident rows, checked against the float64 oracle. The select and
// search suites cover every combination on their adversarial rows; this adds what is specific to the queues:
// m and G variations, k at the compile-time bucket edges, rows that are a multiple of no G^levels, row counts
// that leave idle lanes in the last warp, strided rows, label offsets, explicit labels, and the workspace.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/common/buffer.cuh"
#include "cuda/select/select.cuh"
#include "cuda/select/tang/layout.hpp"
#include "testing/oracle.hpp"

namespace gknn::testing {
namespace {

using detail::cuda::DeviceBuffer;

constexpr SelectAlgorithm kQueues[] = {SelectAlgorithm::InsertionQueue, SelectAlgorithm::HeapQueue,
                                       SelectAlgorithm::MergeQueue};

struct HostRows {
  int64_t rows, cols, stride;
  std::vector<float> values;     ///< rows x stride (columns past cols are poison: must never be read)
  std::vector<int64_t> labels;   ///< empty or rows x stride
};

HostRows make_rows(int64_t rows, int64_t cols, int64_t stride, uint64_t seed, bool ties, bool labels) {
  HostRows h{rows, cols, stride, std::vector<float>(size_t(rows * stride), -1e30f), {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) h.values[size_t(r * stride + c)] = ties ? float(small(rng)) : u(rng);
  if (labels) {
    h.labels.resize(h.values.size());
    for (size_t i = 0; i < h.labels.size(); ++i) h.labels[i] = (int64_t(1) << 40) - int64_t(i) * 3;  // reversed: ties flip
  }
  return h;
}

/// Runs `algorithm` with `tang` on the device; returns the result, labels minus label_offset.
Result run_device(SelectAlgorithm algorithm, const TangOptions& tang, const HostRows& h, int64_t k,
                  int64_t label_offset = 0) {
  const detail::cuda::SelectEntry* entry = detail::cuda::find_select(algorithm);
  if (!entry) throw Error(ErrorCode::Unsupported, "no GPU entry for " + to_string(algorithm));
  DeviceBuffer<float> keys(h.values.size());
  DeviceBuffer<int64_t> labels(h.labels.size());
  DeviceBuffer<float> out_keys(size_t(h.rows * k));
  DeviceBuffer<int64_t> out_labels(size_t(h.rows * k));
  GKNN_CUDA_TRY(cudaMemcpy(keys.data(), h.values.data(), keys.bytes(), cudaMemcpyHostToDevice));
  if (!h.labels.empty())
    GKNN_CUDA_TRY(cudaMemcpy(labels.data(), h.labels.data(), labels.bytes(), cudaMemcpyHostToDevice));

  detail::cuda::SelectInput in{keys.data(), h.labels.empty() ? nullptr : labels.data(), h.stride, h.rows, h.cols,
                              label_offset};
  detail::cuda::SelectOutput out{out_keys.data(), out_labels.data(), k};
  SelectOptions options;
  options.tang = tang;
  detail::cuda::Workspace workspace;
  const detail::cuda::SelectContext ctx{options, workspace, nullptr, 0};
  entry->run(in, k, out, ctx);
  GKNN_CUDA_TRY(cudaDeviceSynchronize());

  Result got{h.rows, k, std::vector<float>(size_t(h.rows * k)), std::vector<int64_t>(size_t(h.rows * k))};
  GKNN_CUDA_TRY(cudaMemcpy(got.distances.data(), out_keys.data(), out_keys.bytes(), cudaMemcpyDeviceToHost));
  GKNN_CUDA_TRY(cudaMemcpy(got.indices.data(), out_labels.data(), out_labels.bytes(), cudaMemcpyDeviceToHost));
  for (int64_t& l : got.indices) l -= label_offset;
  return got;
}

std::string check(SelectAlgorithm algorithm, const TangOptions& tang, const HostRows& h, int64_t k) {
  const Result got = run_device(algorithm, tang, h, k);
  const FloatView view{h.values.data(), h.rows, h.cols, h.stride};
  return check_select(got, view, h.labels.empty() ? nullptr : h.labels.data(), k, Order::Ascending);
}

std::string describe(SelectAlgorithm a, const TangOptions& t) {
  return select_name(a, t) + " m=" + std::to_string(t.m) + " G=" + std::to_string(t.group);
}

TangOptions flags(int bits, int m = 8, int group = 4) {
  TangOptions t;
  t.aligned = bits & 1;
  t.buffered = bits & 2;
  t.hierarchical = bits & 4;
  t.m = m;
  t.group = group;
  return t;
}

TEST(GpuTang, MergeLevelSizeAndGroupSize) {
  const HostRows uniform = make_rows(37, 5003, 5003, 11, false, false);
  const HostRows ties = make_rows(37, 5003, 5003, 12, true, true);
  for (SelectAlgorithm a : kQueues)
    for (int m : {1, 4, 8, 16, 64})
      for (int group : {2, 3, 4, 8})
        for (int bits : {0, 1, 3, 5, 7})
          for (int64_t k : {32, 100})
            for (const HostRows* h : {&uniform, &ties}) {
              if (a != SelectAlgorithm::MergeQueue && m != 8) continue;  // m is the merge queue's
              const TangOptions t = flags(bits, m, group);
              SCOPED_TRACE(describe(a, t) + " k=" + std::to_string(k) + (h == &ties ? " ties+labels" : " uniform"));
              ASSERT_EQ("", check(a, t, *h, k));
            }
}

TEST(GpuTang, KAtBucketEdges) {
  const HostRows h = make_rows(65, 3001, 3001, 21, false, false);
  const HostRows ties = make_rows(33, 2047, 2047, 22, true, false);
  for (SelectAlgorithm a : kQueues)
    for (int bits = 0; bits < 8; ++bits)
      for (int64_t k : {1, 31, 32, 33, 127, 128, 129, 511, 512, 513, 1023, 1024})
        for (const HostRows* rows : {&h, &ties}) {
          const TangOptions t = flags(bits);
          SCOPED_TRACE(describe(a, t) + " k=" + std::to_string(k) + " cols=" + std::to_string(rows->cols));
          ASSERT_EQ("", check(a, t, *rows, k));
        }
}

TEST(GpuTang, RowsNotMultipleOfGroupPowers) {
  for (int64_t cols : {1, 2, 33, 1023, 1025, 4097, 65537})
    for (int group : {2, 3, 4, 8})
      for (SelectAlgorithm a : kQueues) {
        const HostRows h = make_rows(40, cols, cols, uint64_t(cols + group), cols % 3 == 0, cols % 2 == 0);
        for (int64_t k : {int64_t(1), std::min<int64_t>(cols, 32), std::min<int64_t>(cols, 1024)}) {
          const TangOptions t = flags(7, 8, group);  // aligned + buffered + hp
          SCOPED_TRACE(describe(a, t) + " k=" + std::to_string(k) + " cols=" + std::to_string(cols));
          ASSERT_EQ("", check(a, t, h, k));
          ASSERT_EQ("", check(a, flags(4, 8, group), h, k));
        }
      }
}

// Padded rows (stride > cols, poison past cols), many warps, and a label offset.
TEST(GpuTang, StridedRowsAndLabelOffset) {
  const HostRows h = make_rows(1000, 300, 317, 31, false, false);
  for (SelectAlgorithm a : kQueues)
    for (int bits = 0; bits < 8; ++bits) {
      const TangOptions t = flags(bits);
      SCOPED_TRACE(describe(a, t));
      ASSERT_EQ("", check(a, t, h, 50));
      const Result shifted = run_device(a, t, h, 50, int64_t(1) << 35);
      const FloatView view{h.values.data(), h.rows, h.cols, h.stride};
      ASSERT_EQ("", check_select(shifted, view, nullptr, 50, Order::Ascending));
    }
}

TEST(GpuTang, RejectsBadOptionsAndReportsWorkspace) {
  const HostRows h = make_rows(4, 100, 100, 41, false, false);
  EXPECT_THROW(run_device(SelectAlgorithm::MergeQueue, flags(0, 6, 4), h, 10), Error);
  EXPECT_THROW(run_device(SelectAlgorithm::HeapQueue, flags(4, 8, 1), h, 10), Error);
  for (SelectAlgorithm a : kQueues) {
    const detail::cuda::SelectEntry* e = detail::cuda::find_select(a);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->max_k, detail::cuda::tang::kMaxK);
    EXPECT_EQ(e->workspace_bytes(8192, 32768, 256), detail::cuda::tang::workspace_bound(8192, 32768, 256));
    EXPECT_GE(e->workspace_bytes(8192, 32768, 256), detail::cuda::tang::hierarchy_layout(8192, 32768, 256, 4, true).bytes);
  }
}

}  // namespace
}  // namespace gknn::testing
