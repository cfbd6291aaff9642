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
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "core/finalize.hpp"
#include "core/host_parallel.hpp"
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
  EXPECT_EQ(host_team(), 8);
  EXPECT_EQ(host_parts(0, 100), 1);
  EXPECT_EQ(host_parts(99, 100), 1);
  EXPECT_EQ(host_parts(350, 100), 3);
  EXPECT_EQ(host_parts(int64_t(1) << 40, 100), 8);
  EXPECT_EQ(host_parts(5, 0), 5);
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
    parallel_memcpy(dst.data(), src.data(), bytes);
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), bytes), 0) << bytes;
    EXPECT_EQ(dst[bytes], 0xAB) << "wrote past the end, bytes = " << bytes;
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
