// host_parallel_test: the host team's loops (core/host_parallel.hpp): every part runs once, copies are exact, and
// repeated searches' host work of different sizes keeps one set of threads (libgomp ends and restarts threads
// when a team shrinks and grows again: 14 new threads per call once cost 1.9 ms of a 2.9 ms search).
#include <gtest/gtest.h>

#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <condition_variable>
#include <deque>
#include <random>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/async_team.hpp"
#include "core/chunk_pack.hpp"
#include "core/finalize.hpp"
#include "core/host_parallel.hpp"
#include "core/spin_wait.hpp"
#include "core/validate.hpp"
#include "gknn/error.hpp"

namespace gknn::detail {
namespace {

/// Sets the calling thread's default team size for one scope (the churn needs a team larger than two).
class TeamSize {
 public:
  explicit TeamSize(int n) : old_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~TeamSize() { omp_set_num_threads(old_); }

 private:
  int old_;
};

TEST(HostParallel, PartsAreBoundedByTheTeam) {
  TeamSize team(8);
  // A CPU quota below 8 bounds the team too, unless OMP_NUM_THREADS names it.
  const int quota = std::getenv("OMP_NUM_THREADS") ? 0 : gknn::detail::cpu_quota_cpus();
  const int want = quota > 0 ? std::min(8, quota) : 8;
  EXPECT_EQ(host_team(), want);
  EXPECT_EQ(host_parts(0, 100), 1);
  EXPECT_EQ(host_parts(99, 100), 1);
  EXPECT_EQ(host_parts(350, 100), std::min(3, want));
  EXPECT_EQ(host_parts(int64_t(1) << 40, 100), want);
  EXPECT_EQ(host_parts(5, 0), 5);
}

// cgroup v2's cpu.max: "max PERIOD" is no quota; "QUOTA PERIOD" allows QUOTA / PERIOD CPUs, rounded up; v1's
// "-1 PERIOD" (cfs_quota_us, cfs_period_us) is none too. host_team() stays within the quota it reads (or none).
TEST(HostParallel, CpuQuotaOfCgroupText) {
  using gknn::detail::quota_cpus_of_cpu_max;
  EXPECT_EQ(0, quota_cpus_of_cpu_max("max 100000"));
  EXPECT_EQ(16, quota_cpus_of_cpu_max("1600000 100000"));
  EXPECT_EQ(2, quota_cpus_of_cpu_max("150000 100000"));
  EXPECT_EQ(1, quota_cpus_of_cpu_max("50000 100000"));
  EXPECT_EQ(0, quota_cpus_of_cpu_max("-1 100000"));
  EXPECT_EQ(0, quota_cpus_of_cpu_max(""));
  EXPECT_EQ(0, quota_cpus_of_cpu_max("garbage"));
  const int quota = gknn::detail::cpu_quota_cpus();
  EXPECT_GE(quota, 0);
  if (quota > 0 && std::getenv("OMP_NUM_THREADS") == nullptr) EXPECT_LE(gknn::detail::host_team(), quota);
}

TEST(HostParallel, EveryPartRunsOnce) {
  TeamSize team(6);
  for (int parts : {1, 2, 5, 6, 9}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(parts));
    host_parallel(parts, [&](int part) { runs[static_cast<size_t>(part)].fetch_add(1); });
    const int expected_parts = std::min(parts, 6);  // parts above the team are clamped
    for (int p = 0; p < parts; ++p) EXPECT_EQ(runs[static_cast<size_t>(p)].load(), p < expected_parts ? 1 : 0) << p;
  }
}

/// host_for visits every item once, whatever the count, the cost and the thread cap (ranges are contiguous and
/// cover [0, count)), and uses more than one thread only where the work pays for it.
TEST(HostParallel, HostForVisitsEveryItemOnce) {
  TeamSize team(6);
  for (int64_t count : {int64_t(0), int64_t(1), int64_t(7), int64_t(1000), int64_t(100003)})
    for (int cap : {0, 1, 3}) {
      std::vector<std::atomic<int>> visits(static_cast<size_t>(count));
      std::mutex m;
      std::set<std::thread::id> threads;
      host_for(count, 64, 4096, cap, [&](int64_t i) {
        visits[static_cast<size_t>(i)].fetch_add(1);
        std::lock_guard<std::mutex> lock(m);
        threads.insert(std::this_thread::get_id());
      });
      for (int64_t i = 0; i < count; ++i) ASSERT_EQ(visits[static_cast<size_t>(i)].load(), 1) << count << " " << i;
      EXPECT_LE(threads.size(), size_t(cap == 0 ? 6 : cap)) << count;
      if (count * 64 < 2 * 4096) EXPECT_LE(threads.size(), size_t(1)) << count;  // one part's work: the caller
    }
}

/// An exception in one item comes back to the caller (the lowest failing range's), after every range ended.
TEST(HostParallel, HostForRethrowsTheLowestRangesException) {
  TeamSize team(4);
  std::atomic<int64_t> visited{0};
  try {
    host_for(4000, 1 << 10, 1 << 10, 0, [&](int64_t i) {
      visited.fetch_add(1);
      if (i == 3999 || i == 1500) throw Error(ErrorCode::Internal, "item " + std::to_string(i));
    });
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("item 1500"), std::string::npos) << e.what();
  }
  EXPECT_GE(visited.load(), 1501);
}

TEST(HostParallel, InsideAnotherRegionEveryPartStillRuns) {
  TeamSize team(4);
  std::vector<std::atomic<int>> runs(4);
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    host_parallel(4, [&](int part) { runs[static_cast<size_t>(part)].fetch_add(1); });
  }
  for (int p = 0; p < 4; ++p) EXPECT_EQ(runs[static_cast<size_t>(p)].load(), 1) << p;
}

TEST(HostParallel, MemcpyIsExactForAnySize) {
  TeamSize team(4);
  for (size_t bytes : {size_t(0), size_t(1), size_t(4095), size_t(1) << 19, (size_t(3) << 20) + 7, size_t(9) << 20}) {
    std::vector<unsigned char> src(bytes + 1), dst(bytes + 1, 0xAB);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
    for (size_t min_part : {size_t(1) << 19, size_t(128) << 10, size_t(1)}) {  // the default, the copy-out's, any
      std::fill(dst.begin(), dst.end(), 0xAB);
      parallel_memcpy(dst.data(), src.data(), bytes, {}, min_part);
      EXPECT_EQ(std::memcmp(dst.data(), src.data(), bytes), 0) << bytes << " " << min_part;
      EXPECT_EQ(dst[bytes], 0xAB) << "wrote past the end, bytes = " << bytes << " " << min_part;
    }
  }
}

// Several ranges as one job (a result's values and indices copied out together): every byte of every range, parts
// that span two ranges, empty ranges, nothing past any range's end.
TEST(HostParallel, MemcpyRangesIsExactAcrossRangeBoundaries) {
  TeamSize team(4);
  const std::vector<std::vector<size_t>> layouts{{0, 0}, {1, 4095}, {size_t(1) << 19, 0, (size_t(3) << 20) + 7},
                                                 {(size_t(256) << 10) + 3, (size_t(512) << 10) + 5}, {9, 1, size_t(9) << 20}};
  for (const std::vector<size_t>& sizes : layouts)
    for (size_t min_part : {size_t(1) << 19, size_t(128) << 10, size_t(1)}) {
      std::vector<std::vector<unsigned char>> src, dst;
      std::vector<CopyRange> ranges;
      for (size_t r = 0; r < sizes.size(); ++r) {
        src.emplace_back(sizes[r] + 1);
        dst.emplace_back(sizes[r] + 1, 0xAB);
        for (size_t i = 0; i < src.back().size(); ++i) src.back()[i] = static_cast<unsigned char>(i * 131 + 7 * r + 1);
      }
      for (size_t r = 0; r < sizes.size(); ++r) ranges.push_back({dst[r].data(), src[r].data(), sizes[r]});
      parallel_memcpy_ranges(ranges.data(), static_cast<int>(ranges.size()), min_part);
      for (size_t r = 0; r < sizes.size(); ++r) {
        EXPECT_EQ(std::memcmp(dst[r].data(), src[r].data(), sizes[r]), 0) << "range " << r << " " << min_part;
        EXPECT_EQ(dst[r][sizes[r]], 0xAB) << "wrote past range " << r << " " << min_part;
      }
    }
}

// Queries uploaded as bytes (cuda/pipeline/query_bytes.cuh): integers of the byte's range exactly, from strided rows
// on any number of threads; what the caller's facts rule out (fractions, out of range, NaN, Inf) is defined, not UB.
TEST(HostParallel, RowsPackAsBytesExactlyAndDefinedOutsideTheRange) {
  const int64_t rows = 9000, cols = 45, stride = 50;  // 405,000 values: several parts on the pool
  for (bool is_signed : {false, true}) {
    SCOPED_TRACE(is_signed ? "int8" : "uint8");
    std::vector<float> src(size_t(rows * stride), -1.f);
    for (int64_t i = 0; i < rows * cols; ++i) {
      const int v = int(i % 256);
      src[size_t(i / cols * stride + i % cols)] = float(is_signed ? v - 128 : v);
    }
    std::vector<unsigned char> out(size_t(rows * cols), 0xAB);
    pack_rows_as_bytes(src.data(), stride, rows, cols, is_signed, out.data());
    for (int64_t i = 0; i < rows * cols; ++i) {
      const int v = int(i % 256);
      ASSERT_EQ((is_signed ? v - 128 : v) & 0xff, out[size_t(i)]) << i;
    }
    const float hi = is_signed ? 127.f : 255.f, lo = is_signed ? -128.f : 0.f;
    const std::vector<float> odd{std::nanf(""), INFINITY, -INFINITY, hi + 1, lo - 1, 1e30f, 7.75f, -0.f};
    std::vector<unsigned char> few(odd.size(), 0xAB);
    pack_rows_as_bytes(odd.data(), int64_t(odd.size()), 1, int64_t(odd.size()), is_signed, few.data());
    const std::vector<unsigned char> want{0, 0, 0, 0, 0, 0, 7, 0};
    EXPECT_EQ(want, few);
  }
}

TEST(HostParallel, ScansAndCopiesOfDifferentSizesKeepTheSameThreads) {
  TeamSize team(8);
  std::mutex mutex;
  std::set<long> threads;
  std::vector<float> queries(size_t(4096) * 128), pinned(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) queries[i] = static_cast<float>(i % 251);
  for (int call = 0; call < 20; ++call) {
    // A search call's host work: the value scan of 4096 x 128 queries, then copies of 1 and 2 MiB (which were
    // 1- and 2-thread OpenMP teams once), with jobs of every part count in between.
    const ValueStats s = validate_matrix(FloatView{queries.data(), 4096, 128, 0}, "queries", true);
    EXPECT_TRUE(s.integral);
    parallel_memcpy(pinned.data(), queries.data(), size_t(2) << 20);
    parallel_memcpy(pinned.data(), queries.data(), size_t(1) << 20);
    host_parallel(1 + call % 8, [&](int) {
      const long tid = static_cast<long>(syscall(SYS_gettid));
      std::lock_guard<std::mutex> lock(mutex);
      threads.insert(tid);
    });
  }
  EXPECT_LE(threads.size(), 8u) << "host threads were started again";
}

TEST(HostParallel, JobsFromManyThreadsAllComplete) {
  TeamSize team(4);
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 6; ++t)
    callers.emplace_back([&] {
      omp_set_num_threads(4);  // a thread's own default team size
      for (int i = 0; i < 200; ++i) host_parallel(4, [&](int part) { sum.fetch_add(part + 1); });
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(sum.load(), int64_t(6) * 200 * (1 + 2 + 3 + 4));
}

TEST(OverlapJob, RunsBesideTheCallerAndRethrowsOnJoin) {
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  OverlapJob first([&] {
    while (!release.load()) std::this_thread::yield();
    ran.fetch_add(1);
  });
  ASSERT_TRUE(first.started());
  {
    OverlapJob busy([&] { ran.fetch_add(100); });  // the helper is taken: not started, the caller does the work
    EXPECT_FALSE(busy.started());
    busy.join();  // nothing to wait for
  }
  release.store(true);
  first.join();
  EXPECT_EQ(1, ran.load());
  OverlapJob failing([] { throw Error(ErrorCode::InvalidArgument, "queries row 3 column 1 is nan"); });
  ASSERT_TRUE(failing.started());  // free again after the join
  EXPECT_THROW(failing.join(), Error);
  OverlapJob after([&] { ran.fetch_add(1); });  // a task that threw leaves the helper usable
  ASSERT_TRUE(after.started());
  after.join();
  EXPECT_EQ(2, ran.load());
}

TEST(OverlapJob, DestructorWaitsForAnUnjoinedTask) {
  std::atomic<int> ran{0};
  {
    OverlapJob job([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ran.store(1);
    });
    EXPECT_TRUE(job.started());
  }
  EXPECT_EQ(1, ran.load());
}

/// The async team (an upload's packers): a job runs on threads of the team while its caller goes on, one job at a
/// time, on the same threads from job to job, and its join (or destructor) returns only after every thread left it.
TEST(AsyncJob, RunsBesideTheCallerOnKeptThreadsOneJobAtATime) {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  std::atomic<int> entered{0}, release{0};
  auto body = [&] {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ids.insert(std::this_thread::get_id());
    }
    entered.fetch_add(1);
    entered.notify_all();
    wait_until(release, [](int r) { return r != 0; });  // holds the team until the caller says
  };
  AsyncJob job(3, &body);
  ASSERT_TRUE(job.started());
  wait_until(entered, [](int n) { return n == 3; });  // the caller goes on while the job's threads run
  int other_ran = 0;
  auto other = [&] { ++other_ran; };
  {
    AsyncJob busy(2, &other);  // the team is held: not started, nothing runs
    EXPECT_FALSE(busy.started());
  }
  release.store(1);
  release.notify_all();
  job.join();
  EXPECT_EQ(0, other_ran);
  ASSERT_EQ(3u, ids.size());
  EXPECT_EQ(0u, ids.count(std::this_thread::get_id()));
  const std::set<std::thread::id> first = ids;
  ids.clear();
  entered.store(0);
  {
    AsyncJob again(3, &body);  // released already: returns at once
    ASSERT_TRUE(again.started());
  }  // the destructor joins
  EXPECT_EQ(3, entered.load());
  EXPECT_EQ(first, ids);  // the same threads
  AsyncJob none(0, &other);
  EXPECT_FALSE(none.started());
}

TEST(AsyncJob, PartsTakenInOrderByAnyThreadAllRunOnce) {
  // The shape of an upload's pack: threads take parts from one counter until none is left.
  constexpr int kParts = 5000;
  std::vector<std::atomic<int>> runs(kParts);
  std::atomic<int> next{0};
  auto body = [&] {
    for (int p; (p = next.fetch_add(1)) < kParts;) runs[static_cast<size_t>(p)].fetch_add(1);
  };
  for (int round = 0; round < 20; ++round) {
    next.store(0);
    AsyncJob job(4, &body);
    ASSERT_TRUE(job.started());
    job.join();
  }
  for (const std::atomic<int>& r : runs) EXPECT_EQ(20, r.load());
}

/// A copy engine for ChunkPack's tests: copies issued chunks out of their slots in issue order, each after a random
/// delay (so that a packer that wrote a slot before its copy had finished would change what lands), into `out`.
class FakeCopies {
 public:
  FakeCopies(const std::vector<int64_t>& starts, size_t row_bytes, int slots, size_t slot_bytes)
      : out(static_cast<size_t>(starts.back()) * row_bytes), starts_(starts), row_bytes_(row_bytes),
        slots_(static_cast<size_t>(slots), std::vector<unsigned char>(slot_bytes)), recorded_(slots_.size(), -1),
        done_(slots_.size(), -1), engine_([this] { loop(); }) {}
  ~FakeCopies() {
    issue(-1);
    engine_.join();
  }
  std::vector<unsigned char*> slots() {
    std::vector<unsigned char*> p;
    for (auto& s : slots_) p.push_back(s.data());
    return p;
  }
  /// As cudaEventRecord after the copy: the slot's last copy is now chunk c's.
  void issue(int64_t c) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (c >= 0) recorded_[static_cast<size_t>(c) % slots_.size()] = c;
    queue_.push_back(c);
    cv_.notify_all();
  }
  /// As cudaEventSynchronize of the slot's event.
  int wait_copied(size_t s) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return done_[s] >= recorded_[s]; });
    return 0;
  }
  std::vector<unsigned char> out;

 private:
  void loop() {
    std::mt19937 rng(5);
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return !queue_.empty(); });
      const int64_t c = queue_.front();
      queue_.pop_front();
      if (c < 0) return;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      const size_t s = static_cast<size_t>(c) % slots_.size();
      const size_t first = static_cast<size_t>(starts_[static_cast<size_t>(c)]);
      const size_t rows = static_cast<size_t>(starts_[static_cast<size_t>(c) + 1]) - first;
      std::memcpy(out.data() + first * row_bytes_, slots_[s].data(), rows * row_bytes_);
      lock.lock();
      done_[s] = c;
      cv_.notify_all();
    }
  }

  const std::vector<int64_t>& starts_;
  size_t row_bytes_;
  std::vector<std::vector<unsigned char>> slots_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<int64_t> queue_;
  std::vector<int64_t> recorded_, done_;
  std::thread engine_;
};

/// Rows of `row_bytes` bytes (values from the row and column), `stride` bytes apart, the padding 0xEE.
std::vector<unsigned char> byte_rows(int64_t rows, size_t row_bytes, size_t stride) {
  std::vector<unsigned char> v(static_cast<size_t>(rows) * stride, 0xEE);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < row_bytes; ++j)
      v[static_cast<size_t>(r) * stride + j] = static_cast<unsigned char>(r * 7 + j);
  return v;
}

TEST(ChunkPack, ChunkStartsRampUpAndDownAndCoverTheRows) {
  // 100-byte rows, chunks of 50 rows, ramp from 256 bytes: 2, 4, 8, 16, 32 rows at each end.
  const std::vector<int64_t> s = chunk_starts(1000, 50, 100, 256);
  ASSERT_EQ(0, s.front());
  ASSERT_EQ(1000, s.back());
  const std::vector<int64_t> head{0, 2, 6, 14, 30, 62}, tail{938, 970, 986, 994, 998, 1000};
  EXPECT_EQ(head, std::vector<int64_t>(s.begin(), s.begin() + 6));
  EXPECT_EQ(tail, std::vector<int64_t>(s.end() - 6, s.end()));
  for (size_t i = 1; i < s.size(); ++i) EXPECT_TRUE(s[i] > s[i - 1] && s[i] - s[i - 1] <= 50);
  // Without the ramp up: full chunks first, the same end.
  const std::vector<int64_t> down = chunk_starts(1000, 50, 100, 256, false);
  EXPECT_EQ((std::vector<int64_t>{0, 50, 100}), std::vector<int64_t>(down.begin(), down.begin() + 3));
  EXPECT_EQ(tail, std::vector<int64_t>(down.end() - 6, down.end()));
  // Few chunks: equal ones, no ramp.
  EXPECT_EQ((std::vector<int64_t>{0, 50, 100, 150, 170}), chunk_starts(170, 50, 100, 256));
  EXPECT_EQ((std::vector<int64_t>{0, 3}), chunk_starts(3, 50, 100, 1 << 20));
}

TEST(ChunkPack, EveryChunkLandsWhateverTheSlotsThreadsAndStride) {
  const int64_t rows = 3000;
  // 1000-byte rows: chunks of 64 KB, packed with streaming stores (threads != 3) in parts above their threshold.
  for (size_t row_bytes : {size_t(12), size_t(100), size_t(1000)})
    for (size_t stride : {row_bytes, row_bytes + 9})
      for (int slots : {1, 2, 4})
        for (int threads : {1, 3, 8}) {
          SCOPED_TRACE(std::to_string(row_bytes) + " bytes, stride " + std::to_string(stride) + ", " +
                       std::to_string(slots) + " slots, " + std::to_string(threads) + " threads");
          const std::vector<unsigned char> src = byte_rows(rows, row_bytes, stride);
          const HostRows host{src.data(), rows, row_bytes, stride};
          const int64_t chunk_rows = 64;
          const std::vector<int64_t> starts = chunk_starts(rows, chunk_rows, row_bytes, 64);
          FakeCopies copies(starts, row_bytes, slots, static_cast<size_t>(chunk_rows) * row_bytes);
          {
            ChunkPack pack(host, starts, copies.slots(), threads, [&](size_t s) { return copies.wait_copied(s); },
                           threads != 3);
            ASSERT_TRUE(pack.started());
            for (int64_t c = 0; c + 1 < static_cast<int64_t>(starts.size()); ++c) {
              ASSERT_EQ(0, pack.wait_packed(c));
              copies.issue(c);
              pack.issued(c);
            }
          }
          for (int64_t c = 0; c + 1 < static_cast<int64_t>(starts.size()); ++c) copies.wait_copied(size_t(c % slots));
          std::vector<unsigned char> want(static_cast<size_t>(rows) * row_bytes);
          copy_rows(want.data(), host, 0, rows);
          EXPECT_EQ(want, copies.out);
        }
}

TEST(ChunkPack, StreamingCopyEqualsMemcpyForAnySizeAlignmentAndStride) {
  // stream_copy writes the whole 64-byte lines of its destination with streaming stores, the partial ones with
  // memcpy: every size around the 16 KiB threshold and the line, every offset of either pointer in a line, and no
  // byte outside [dst, dst + bytes) touched.
  std::mt19937 rng(11);
  std::vector<unsigned char> src((size_t(1) << 20) + 256);
  for (unsigned char& b : src) b = static_cast<unsigned char>(rng());
  std::vector<unsigned char> got(src.size() + 256), want(got.size());
  std::vector<size_t> sizes{0, 1, 15, 63, 64, 65, 127, 4095, (16 << 10) - 1, 16 << 10, (16 << 10) + 1,
                            (16 << 10) + 63, 100000, size_t(1) << 20};
  for (int i = 0; i < 16; ++i) sizes.push_back((16 << 10) + rng() % ((size_t(1) << 20) - (16 << 10)));
  for (size_t bytes : sizes)
    for (size_t dst_off : {0, 1, 8, 16, 33, 63})
      for (size_t src_off : {0, 3, 16, 61}) {
        SCOPED_TRACE(std::to_string(bytes) + " bytes, dst +" + std::to_string(dst_off) + ", src +" +
                     std::to_string(src_off));
        std::fill(got.begin(), got.end(), 0xA5);
        std::fill(want.begin(), want.end(), 0xA5);
        stream_copy(got.data() + dst_off, src.data() + src_off, bytes);
        if (bytes > 0) std::memcpy(want.data() + dst_off, src.data() + src_off, bytes);
        ASSERT_TRUE(got == want);
      }
}

TEST(ChunkPack, StreamingCopyRowsEqualMemcpyForOddRowsAndStrides) {
  // copy_rows both ways (streaming: contiguous rows streamed whole, strided small rows gathered then streamed,
  // strided rows of >= 4 KiB streamed one by one) against a row-by-row memcpy, at odd offsets of both pointers.
  std::mt19937 rng(12);
  for (size_t row_bytes : {size_t(1), size_t(3), size_t(37), size_t(128), size_t(512), size_t(4095), size_t(4096),
                           size_t(9000)})
    for (size_t extra : {size_t(0), size_t(1), size_t(64), size_t(301)}) {
      const size_t stride = row_bytes + extra;
      const int64_t rows = static_cast<int64_t>(std::max<size_t>(3, (size_t(600) << 10) / stride));
      std::vector<unsigned char> src(static_cast<size_t>(rows) * stride + 64);
      for (unsigned char& b : src) b = static_cast<unsigned char>(rng());
      for (size_t src_off : {size_t(0), size_t(5)})
        for (size_t dst_off : {size_t(0), size_t(1), size_t(40)}) {
          const HostRows host{src.data() + src_off, rows, row_bytes, stride};
          for (int64_t first : {int64_t(0), int64_t(1), rows / 3}) {
            const int64_t count = rows - first - (first > 0 ? 1 : 0);
            SCOPED_TRACE(std::to_string(row_bytes) + " bytes, stride " + std::to_string(stride) + ", rows " +
                         std::to_string(first) + "+" + std::to_string(count) + ", src +" + std::to_string(src_off) +
                         ", dst +" + std::to_string(dst_off));
            const size_t bytes = static_cast<size_t>(count) * row_bytes;
            std::vector<unsigned char> want(bytes + dst_off + 64, 0x5A), streamed(want), plain(want);
            for (int64_t r = 0; r < count; ++r)
              std::memcpy(want.data() + dst_off + static_cast<size_t>(r) * row_bytes,
                          src.data() + src_off + static_cast<size_t>(first + r) * stride, row_bytes);
            copy_rows(streamed.data() + dst_off, host, first, count, true);
            copy_rows(plain.data() + dst_off, host, first, count, false);
            ASSERT_TRUE(want == streamed);
            ASSERT_TRUE(want == plain);
          }
        }
    }
  // The process-wide switch (the uploads read it): on by default.
  EXPECT_TRUE(pack_streaming());
  set_pack_streaming(false);
  EXPECT_FALSE(pack_streaming());
  set_pack_streaming(true);
}

// The cache size that decides whether uploads pack into a cache-resident ring (cuda/pipeline/upload.cu).
TEST(ChunkPack, CacheSizesParseAsSysfsWritesThem) {
  EXPECT_EQ(parse_cache_size("307200K\n"), size_t(307200) << 10);
  EXPECT_EQ(parse_cache_size("32M"), size_t(32) << 20);
  EXPECT_EQ(parse_cache_size("1G"), size_t(1) << 30);
  EXPECT_EQ(parse_cache_size("512"), size_t(512));
  EXPECT_EQ(parse_cache_size(""), 0u);
  EXPECT_EQ(parse_cache_size("big"), 0u);
  EXPECT_EQ(parse_cache_size("12Kb"), 0u);
  EXPECT_EQ(parse_cache_size(nullptr), 0u);
  (void)last_level_cache_bytes();  // reads sysfs where it exists, 0 elsewhere: never throws
}

TEST(ChunkPack, StopsWhenTheCallerLeavesEarlyAndReportsACopyError) {
  const std::vector<unsigned char> src = byte_rows(5000, 16, 16);
  const HostRows host{src.data(), 5000, 16, 16};
  const std::vector<int64_t> starts = chunk_starts(5000, 10, 16, 16);
  {
    FakeCopies copies(starts, 16, 2, 160);
    ChunkPack pack(host, starts, copies.slots(), 4, [&](size_t s) { return copies.wait_copied(s); });
    for (int64_t c = 0; c < 5; ++c) {
      ASSERT_EQ(0, pack.wait_packed(c));
      copies.issue(c);
      pack.issued(c);
    }
  }  // the packers of chunks 6.. wait for copies never issued: the destructor stops them
  FakeCopies copies(starts, 16, 3, 160);
  ChunkPack pack(host, starts, copies.slots(), 4, [&](size_t s) { return s == 1 ? 7 : copies.wait_copied(s); });
  int err = 0;
  for (int64_t c = 0; c + 1 < static_cast<int64_t>(starts.size()) && err == 0; ++c) {
    err = pack.wait_packed(c);
    if (err) break;
    copies.issue(c);
    pack.issued(c);
  }
  EXPECT_EQ(7, err);  // chunk 4 (slot 1's second) at the latest
}

TEST(FactsGuess, CoversWhatItsPlanHoldsForAndWidensWithinAKind) {
  const ValueStats u8{true, true, 255.f}, small{true, true, 100.f}, wide{true, false, 300.f},
      unit{false, true, 0.99f}, unit2{false, true, 0.995f}, big{false, false, 1e6f};
  // Integer guesses: a plan made for them holds within their sign and magnitude only.
  EXPECT_TRUE(check_facts_guess(u8, small).covered);
  EXPECT_FALSE(check_facts_guess(u8, wide).covered);
  EXPECT_FALSE(check_facts_guess(small, u8).covered);
  EXPECT_FALSE(check_facts_guess(u8, unit).covered);
  // Non-integral guesses: float plans rely on no fact.
  EXPECT_TRUE(check_facts_guess(unit, big).covered);
  EXPECT_TRUE(check_facts_guess(unit, u8).covered);
  // The next guess widens within a kind (no miss for the batch after a larger one) ...
  const ValueStats after = check_facts_guess(small, u8).next_guess;
  EXPECT_TRUE(after.integral);
  EXPECT_EQ(after.max_abs, 255.f);
  EXPECT_TRUE(check_facts_guess(after, small).covered);
  EXPECT_EQ(check_facts_guess(unit, unit2).next_guess.max_abs, 0.995f);
  // ... and follows the queries when their kind changes (integer queries after float ones get integer plans).
  const ValueStats back = check_facts_guess(unit, u8).next_guess;
  EXPECT_TRUE(back.integral);
  EXPECT_EQ(back.max_abs, 255.f);
  EXPECT_FALSE(check_facts_guess(u8, unit).next_guess.integral);
}

TEST(HostParallel, PopulatedResultIsAWritableResultOfTheShape) {
  // The values are left uninitialised (the search writes every entry): only the shape and the storage count.
  for (const auto& [rows, k] : {std::pair<int64_t, int64_t>{0, 5}, {3, 7}, {2000, 1000}, {1001, 2048}}) {
    Result r = allocate_result_populated(rows, k);
    EXPECT_EQ(r.rows, rows);
    EXPECT_EQ(r.k, k);
    ASSERT_EQ(r.distances.size(), static_cast<size_t>(rows * k));
    ASSERT_EQ(r.indices.size(), static_cast<size_t>(rows * k));
    for (size_t i = 0; i < r.indices.size(); ++i) {
      r.distances[i] = static_cast<float>(i % 1000);
      r.indices[i] = static_cast<int64_t>(i);
    }
    for (size_t i = 0; i < r.indices.size(); i += 997) {
      EXPECT_EQ(r.distances[i], static_cast<float>(i % 1000));
      EXPECT_EQ(r.indices[i], static_cast<int64_t>(i));
    }
  }
  EXPECT_THROW(allocate_result_populated(int64_t(1) << 40, int64_t(1) << 40), Error);
}

}  // namespace
}  // namespace gknn::detail
