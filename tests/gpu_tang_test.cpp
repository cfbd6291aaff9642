// gpu_tang_test.cpp: Tang et al.'s queues on the device, called through the GPU selection table
// (detail::cuda::find_select) on device-resident rows, checked against the float64 oracle. The select and
// search suites cover every combination on their adversarial rows; this adds what is specific to the queues:
// m and G variations, k at the compile-time bucket edges, rows that are a multiple of no G^levels, row counts
// that leave idle lanes in the last warp, strided rows, label offsets, explicit labels, and the workspace.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/common/buffer.cuh"
#include "cuda/select/select.cuh"
#include "cuda/select/tang/layout.hpp"
#include "testing/oracle.hpp"
#include "testing/sanitize.hpp"

namespace gknn::testing {
namespace {

using detail::cuda::DeviceBuffer;

constexpr SelectAlgorithm kQueues[] = {SelectAlgorithm::InsertionQueue, SelectAlgorithm::HeapQueue,
                                       SelectAlgorithm::MergeQueue};

struct HostRows {
  int64_t rows, cols, stride;
  std::vector<float> values;     ///< rows x stride (columns past cols are poison: must never be read)
  std::vector<int64_t> labels;   ///< empty or rows x stride
  SelectExpectation expected;    ///< every row sorted (ascending): computed once, checked against every k and queue
};

HostRows make_rows(int64_t rows, int64_t cols, int64_t stride, uint64_t seed, bool ties, bool labels) {
  HostRows h{rows, cols, stride, std::vector<float>(size_t(rows * stride), -1e30f), {}, {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) h.values[size_t(r * stride + c)] = ties ? float(small(rng)) : u(rng);
  if (labels) {
    h.labels.resize(h.values.size());
    for (size_t i = 0; i < h.labels.size(); ++i) h.labels[i] = (int64_t(1) << 40) - int64_t(i) * 3;  // reversed: ties flip
  }
  h.expected = expected_select(FloatView{h.values.data(), rows, cols, stride}, h.labels.empty() ? nullptr : h.labels.data(),
                               Order::Ascending);
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

/// One selection of a batch, checked against its rows' expectation.
struct Job {
  SelectAlgorithm algorithm;
  TangOptions tang;
  const HostRows* rows;
  int64_t k;
  int64_t label_offset = 0;
};

std::string describe(const Job& j) {
  return describe(j.algorithm, j.tang) + " k=" + std::to_string(j.k) + " rows=" + std::to_string(j.rows->rows) + "x" +
         std::to_string(j.rows->cols) + (j.rows->labels.empty() ? "" : " labels") +
         (j.label_offset ? " label_offset=" + std::to_string(j.label_offset) : "");
}

/// Runs the jobs on the device side by side and checks each; returns the first failure (named by its job), "" when
/// all match. A Tang queue keeps one thread per row (or per hierarchy group) busy for up to k x cols dependent steps
/// while the rest of the device idles, so one launch after the other made gpu_tang the longest GPU test (154 s);
/// here up to kChunk launches run at once on 16 streams, each input uploaded once per chunk.
std::string run_batch(const std::vector<Job>& jobs) {
  constexpr size_t kChunk = 96;  // bounds the outputs and workspaces held at once
  std::vector<detail::cuda::Stream> streams(16);
  for (size_t first = 0; first < jobs.size(); first += kChunk) {
    const size_t last = std::min(jobs.size(), first + kChunk);
    struct Input {
      DeviceBuffer<float> keys;
      DeviceBuffer<int64_t> labels;
    };
    std::map<const HostRows*, Input> inputs;
    struct Slot {
      DeviceBuffer<float> keys;
      DeviceBuffer<int64_t> labels;
      detail::cuda::Workspace workspace;
      std::string error;  ///< the launch's own error (e.g. refused options)
    };
    for (size_t i = first; i < last; ++i) {
      const HostRows& h = *jobs[i].rows;
      auto [it, fresh] = inputs.try_emplace(&h);
      if (!fresh) continue;
      it->second.keys.resize(h.values.size());
      GKNN_CUDA_TRY(cudaMemcpy(it->second.keys.data(), h.values.data(), it->second.keys.bytes(),
                               cudaMemcpyHostToDevice));
      if (!h.labels.empty()) {
        it->second.labels.resize(h.labels.size());
        GKNN_CUDA_TRY(cudaMemcpy(it->second.labels.data(), h.labels.data(), it->second.labels.bytes(),
                                 cudaMemcpyHostToDevice));
      }
    }
    // A pageable cudaMemcpy may return before its DMA lands, and the non-blocking streams below do not wait for the
    // legacy stream: the uploads complete before the first launch.
    GKNN_CUDA_TRY(cudaDeviceSynchronize());
    std::vector<std::unique_ptr<Slot>> slots;
    for (size_t i = first; i < last; ++i) {
      const Job& j = jobs[i];
      const HostRows& h = *j.rows;
      const auto it = inputs.find(&h);
      auto slot = std::make_unique<Slot>();
      slot->keys.resize(size_t(h.rows * j.k));
      slot->labels.resize(size_t(h.rows * j.k));
      const detail::cuda::SelectEntry* entry = detail::cuda::find_select(j.algorithm);
      SelectOptions options;
      options.tang = j.tang;
      const detail::cuda::SelectContext ctx{options, slot->workspace, streams[i % streams.size()].get(), 0};
      const detail::cuda::SelectInput in{it->second.keys.data(), h.labels.empty() ? nullptr : it->second.labels.data(),
                                         h.stride, h.rows, h.cols, j.label_offset};
      const detail::cuda::SelectOutput out{slot->keys.data(), slot->labels.data(), j.k};
      try {
        if (!entry) throw Error(ErrorCode::Unsupported, "no GPU entry for " + to_string(j.algorithm));
        entry->run(in, j.k, out, ctx);
      } catch (const std::exception& e) {
        slot->error = e.what();
      }
      slots.push_back(std::move(slot));
    }
    GKNN_CUDA_TRY(cudaDeviceSynchronize());  // every launch of the chunk, before any buffer is read or freed
    for (size_t i = first; i < last; ++i) {
      const Job& j = jobs[i];
      const Slot& slot = *slots[i - first];
      if (!slot.error.empty()) return describe(j) + ": " + slot.error;
      Result got{j.rows->rows, j.k, std::vector<float>(slot.keys.size()), std::vector<int64_t>(slot.labels.size())};
      GKNN_CUDA_TRY(cudaMemcpy(got.distances.data(), slot.keys.data(), slot.keys.bytes(), cudaMemcpyDeviceToHost));
      GKNN_CUDA_TRY(cudaMemcpy(got.indices.data(), slot.labels.data(), slot.labels.bytes(), cudaMemcpyDeviceToHost));
      for (int64_t& l : got.indices) l -= j.label_offset;
      const std::string failure = check_select(got, j.rows->expected, j.k);
      if (!failure.empty()) return describe(j) + ": " + failure;
    }
  }
  return "";
}

TEST(GpuTang, MergeLevelSizeAndGroupSize) {
  // Idle lanes in the last warp; several hierarchy levels for k = 100. Sanitized: rows of 301 (still two levels
  // at k = 100 and G = 2), m = 1, 8, 64 and groups 2, 3, 8: the whole grid (560 selections of 1501 keys) did not
  // finish under racecheck in 300 s (2026-11-24).
  const int64_t rows = sized(37, 33), cols = sized(5003, 301);
  const HostRows uniform = make_rows(rows, cols, cols, 11, false, false);
  const HostRows ties = make_rows(rows, cols, cols, 12, true, true);
  std::vector<Job> jobs;
  for (SelectAlgorithm a : kQueues)
    for (int m : {1, 4, 8, 16, 64})
      for (int group : {2, 3, 4, 8})
        for (int bits : {0, 1, 3, 5, 7})
          for (int64_t k : {32, 100})
            for (const HostRows* h : {&uniform, &ties}) {
              if (a != SelectAlgorithm::MergeQueue && m != 8) continue;  // m is the merge queue's
              if (sanitize_mode() && (m == 4 || m == 16 || group == 4)) continue;
              // Sanitized: G only where it is read, with the hierarchical partition (bits 5 and 7; tang/kernel.cuh:
              // run_tang), once without it (2026-11-27: 120 of the 300 selections ran the same launch again).
              if (sanitize_mode() && !(bits & 4) && group != 2) continue;
              jobs.push_back({a, flags(bits, m, group), h, k});
            }
  EXPECT_EQ("", run_batch(jobs));
}

TEST(GpuTang, KAtBucketEdges) {
  // Sanitizer-sized: rows still longer than the largest k (1024) and a last warp with idle lanes.
  const HostRows h = make_rows(sized(65, 33), sized(3001, 1101), sized(3001, 1101), 21, false, false);
  const HostRows ties = make_rows(33, sized(2047, 1031), sized(2047, 1031), 22, true, false);
  // Sanitized: every flag off and every flag on, each bucket at its largest k and the next at its smallest (k - 1
  // runs the kernel of k); the 576 selections took memcheck past 180 s (2026-11-25). The select suite gives every
  // flag combination its buckets.
  std::vector<Job> jobs;
  for (SelectAlgorithm a : kQueues)
    for (int bits = 0; bits < 8; ++bits)
      for (int64_t k : {1, 31, 32, 33, 127, 128, 129, 511, 512, 513, 1023, 1024})
        for (const HostRows* rows : {&h, &ties}) {
          if (sanitize_mode() && ((bits != 0 && bits != 7) || k == 31 || k == 127 || k == 511 || k == 1023)) continue;
          // Sanitized: the tied rows up to the 256 bucket (memcheck still took 104 s with them at 512 and 1024), and
          // the 1024 bucket at its largest k only (513 runs its kernel too; 99 s of memcheck, 2026-11-25).
          if (sanitize_mode() && ((rows == &ties && k > 129) || k == 513)) continue;
          // Sanitized: the 512 bucket at its largest k with every flag on (every flag off meets it at k = 300 in the
          // select suite), the 1024 bucket full with both (the costliest: about n k steps a thread; memcheck 95 s for
          // this test, 2026-11-27).
          if (sanitize_mode() && k == 512 && bits == 0) continue;
          jobs.push_back({a, flags(bits), rows, k});
        }
  EXPECT_EQ("", run_batch(jobs));
}

TEST(GpuTang, RowsNotMultipleOfGroupPowers) {
  std::vector<std::unique_ptr<HostRows>> rows;
  std::vector<Job> jobs;
  // 2^16 + 1 / 2^11 + 1: a multiple of no G^levels either way. Sanitized: k > 32 only on the rows of 1025 keys
  // (2^14 + 1 keys at k = 1024 did not finish under racecheck in 300 s, 2026-11-24; with the 1023- and 2049-key rows
  // memcheck took 159 s, 2026-11-25), and G = 2, 3, 8 (G = 4's levels are G = 2's, two at a time).
  const int64_t longest = sized(65537, 2049);
  for (int64_t cols : {int64_t(1), int64_t(2), int64_t(33), int64_t(1023), int64_t(1025), int64_t(4097), longest})
    for (int group : {2, 3, 4, 8}) {
      if (sanitize_mode() && (cols == 4097 || group == 4)) continue;
      rows.push_back(std::make_unique<HostRows>(
          make_rows(40, cols, cols, uint64_t(cols + group), cols % 3 == 0, cols % 2 == 0)));
      for (SelectAlgorithm a : kQueues)
        for (int64_t k : {int64_t(1), std::min<int64_t>(cols, 32), std::min<int64_t>(cols, 1024)}) {
          if (sanitize_mode() && k > 33 && (cols != 1025 || group == 8)) continue;  // G = 8: small k (85 s)
          // Sanitized: k = 1024 (about n k steps a thread) once per G and flag set of a queue: G = 2 with every flag,
          // G = 3 with hp alone (memcheck 87 s for this test, 2026-11-27); the small k with both.
          const bool full = sanitize_mode() && k > 33;
          // aligned + buffered + hp, then hp alone
          if (!full || group == 2) jobs.push_back({a, flags(7, 8, group), rows.back().get(), k});
          if (!full || group == 3) jobs.push_back({a, flags(4, 8, group), rows.back().get(), k});
        }
    }
  EXPECT_EQ("", run_batch(jobs));
}

// Padded rows (stride > cols, poison past cols), many warps, and a label offset.
TEST(GpuTang, StridedRowsAndLabelOffset) {
  const HostRows h = make_rows(sized(1000, 100), 300, 317, 31, false, false);
  std::vector<Job> jobs;
  for (SelectAlgorithm a : kQueues)
    for (int bits = 0; bits < 8; ++bits) {
      jobs.push_back({a, flags(bits), &h, 50});
      jobs.push_back({a, flags(bits), &h, 50, int64_t(1) << 35});
    }
  EXPECT_EQ("", run_batch(jobs));
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
