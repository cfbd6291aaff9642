// index_threads_test.cpp: one gknn::Index searched from 8 host threads at once returns, in every thread, exactly
// what the same searches return one after another (include/gknn/index.hpp documents the guarantee). Every
// backend of this build takes part: the CPU searches run in parallel, the CUDA store serialises them.
//
// ThreadSanitizer (`make tsan`, docs/reliability.md): libgomp is not instrumented, so its barriers look like
// races to TSan. Under TSan each search therefore runs with SearchParams::threads = 1 (an OpenMP team of one,
// no libgomp synchronisation); the 8 host threads still share the Index, the BLAS guard and the allocator.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "gknn/index.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"

#if defined(__SANITIZE_THREAD__)
#define GKNN_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GKNN_UNDER_TSAN 1
#endif
#endif

namespace gknn::testing {
namespace {

#ifdef GKNN_UNDER_TSAN
constexpr int kOmpThreadsPerSearch = 1;
#else
constexpr int kOmpThreadsPerSearch = 2;
#endif

constexpr int kHostThreads = 8;
constexpr int kRounds = 3;

/// The searches of one host thread: distance and selection algorithms differ between threads, and a small
/// memory budget forces the tiled path on some of them.
std::vector<SearchParams> searches_of(int thread, Backend backend) {
  std::vector<SearchParams> list;
  for (int64_t k : {1, 17, 64}) {
    SearchParams p;
    p.k = k + thread;
    p.backend = backend;
    p.threads = kOmpThreadsPerSearch;
    if (backend == Backend::Cpu) {
      p.distance = thread % 3 == 0 ? DistanceAlgorithm::Gemm : thread % 3 == 1 ? DistanceAlgorithm::Direct
                                                                               : DistanceAlgorithm::Auto;
      p.select = thread % 2 == 0 ? SelectAlgorithm::Heap : SelectAlgorithm::Auto;
    }
    if (thread % 4 == 3) p.memory_budget = size_t{1} << 20;
    list.push_back(p);
  }
  return list;
}

void expect_concurrent_equals_sequential(Backend backend) {
  const HostMatrix<float> base = integer_matrix(3000, 24, -8, 8, 11);
  Index index(24, Metric::SquaredL2, backend);
  index.add(base.view());
  std::vector<HostMatrix<float>> queries;
  for (int t = 0; t < kHostThreads; ++t) queries.push_back(integer_matrix(40 + 7 * t, 24, -8, 8, 100 + t));

  std::vector<std::vector<Result>> expected(kHostThreads);
  for (int t = 0; t < kHostThreads; ++t)
    for (const SearchParams& p : searches_of(t, backend)) expected[t].push_back(index.search(queries[t].view(), p));

  std::vector<std::vector<Result>> got(kHostThreads);
  std::vector<std::string> errors(kHostThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kHostThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < kRounds; ++round)
          for (const SearchParams& p : searches_of(t, backend)) got[t].push_back(index.search(queries[t].view(), p));
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();

  for (int t = 0; t < kHostThreads; ++t) {
    SCOPED_TRACE("host thread " + std::to_string(t));
    ASSERT_EQ(errors[t], "");
    ASSERT_EQ(got[t].size(), expected[t].size() * kRounds);
    for (size_t i = 0; i < got[t].size(); ++i) {
      const Result& want = expected[t][i % expected[t].size()];
      EXPECT_EQ(got[t][i].indices, want.indices) << "search " << i;
      EXPECT_EQ(got[t][i].distances, want.distances) << "search " << i;
    }
  }
}

TEST(IndexThreads, CpuConcurrentSearchesEqualSequentialOnes) { expect_concurrent_equals_sequential(Backend::Cpu); }

TEST(IndexThreads, CudaConcurrentSearchesAreSerialisedAndEqual) {
  if (!backend_available(Backend::Cuda)) GTEST_SKIP() << "no CUDA device in this process (the CPU case ran)";
  expect_concurrent_equals_sequential(Backend::Cuda);
}

}  // namespace
}  // namespace gknn::testing
