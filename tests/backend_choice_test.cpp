// backend_choice_test.cpp: which backend `auto` takes when the parameters force algorithms, and why. Holds on both
// kinds of machine: the expectations follow whether a CUDA device is visible.
#include <gtest/gtest.h>

#include <string>

#include "gknn/error.hpp"
#include "gknn/info.hpp"
#include "gknn/search.hpp"
#include "testing/data.hpp"

namespace gknn::testing {
namespace {

const bool kCuda = backend_available(Backend::Cuda);

/// The reason `auto` gives for the CPU when no GPU can be used at all.
std::string no_gpu_reason() {
  return build_info().cuda ? "auto: no CUDA device is visible" : "auto: this build has no CUDA backend";
}

SearchParams forcing(DistanceAlgorithm distance, SelectAlgorithm select, Metric metric = Metric::SquaredL2) {
  SearchParams p;
  p.k = 7;
  p.distance = distance;
  p.select = select;
  p.metric = metric;
  return p;
}

TEST(BackendChoice, ExplicitBackendsAreTakenAsTheyAre) {
  SearchParams p = forcing(DistanceAlgorithm::Auto, SelectAlgorithm::Heap);
  p.backend = Backend::Cpu;
  const BackendChoice cpu = choose_backend(p);
  EXPECT_EQ(cpu.backend, Backend::Cpu);
  EXPECT_EQ(cpu.reason, "requested");
  p.backend = Backend::Cuda;
  if (kCuda) {
    EXPECT_EQ(choose_backend(p).backend, Backend::Cuda);  // the search itself refuses heap, naming it
    const HostMatrix<float> base = integer_matrix(50, 4, 0, 9, 1), queries = integer_matrix(3, 4, 0, 9, 2);
    EXPECT_THROW(search(base.view(), queries.view(), p), Error);
  } else {
    EXPECT_THROW(choose_backend(p), Error);
  }
}

TEST(BackendChoice, AutoWithNothingForcedPrefersCuda) {
  const BackendChoice c = choose_backend(SearchParams{});
  EXPECT_EQ(c.backend, kCuda ? Backend::Cuda : Backend::Cpu);
  EXPECT_EQ(c.reason, kCuda ? "auto" : no_gpu_reason());
}

TEST(BackendChoice, AutoPassesOverCudaForACpuOnlyAlgorithm) {
  struct Case {
    SearchParams params;
    std::string why;  // on a GPU machine
  };
  const Case cases[] = {
      {forcing(DistanceAlgorithm::Auto, SelectAlgorithm::Heap), "auto: heap has no CUDA implementation"},
      {forcing(DistanceAlgorithm::Auto, SelectAlgorithm::Quickselect), "auto: quickselect has no CUDA implementation"},
      {forcing(DistanceAlgorithm::Reference, SelectAlgorithm::Auto), "auto: reference has no CUDA implementation"},
      {forcing(DistanceAlgorithm::Gemm, SelectAlgorithm::Sort), "auto: gemm has no CUDA implementation"},
  };
  const HostMatrix<float> base = integer_matrix(300, 6, 0, 9, 3), queries = integer_matrix(5, 6, 0, 9, 4);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    const BackendChoice choice = choose_backend(c.params);
    EXPECT_EQ(choice.backend, Backend::Cpu);
    EXPECT_EQ(choice.reason, kCuda ? c.why : no_gpu_reason());
    SearchParams on_cpu = c.params;
    on_cpu.backend = Backend::Cpu;
    // search() runs the same choice: the result is the CPU's, on every machine.
    EXPECT_EQ(search(base.view(), queries.view(), c.params).indices,
              search(base.view(), queries.view(), on_cpu).indices);
  }
}

TEST(BackendChoice, AutoKeepsCudaForACudaAlgorithm) {
  const SearchParams p = forcing(DistanceAlgorithm::GarciaGlobal, SelectAlgorithm::Sort);
  const BackendChoice c = choose_backend(p);
  EXPECT_EQ(c.backend, kCuda ? Backend::Cuda : Backend::Cpu);
  if (!kCuda) {  // the CPU has no garcia_global: the search names it
    const HostMatrix<float> base = integer_matrix(50, 4, 0, 9, 5), queries = integer_matrix(3, 4, 0, 9, 6);
    try {
      search(base.view(), queries.view(), p);
      ADD_FAILURE() << "garcia_global ran on the CPU";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("garcia_global"), std::string::npos) << e.what();
    }
  }
}

TEST(BackendChoice, NoBackendForTheCombinationIsAnError) {
  // gemm serves no L1 anywhere; with CUDA visible neither backend fits, and the message says what each lacks.
  const SearchParams p = forcing(DistanceAlgorithm::Gemm, SelectAlgorithm::Auto, Metric::L1);
  if (!kCuda) {
    EXPECT_EQ(choose_backend(p).backend, Backend::Cpu);  // the CPU search then names gemm and l1
    return;
  }
  try {
    choose_backend(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("gemm has no CUDA implementation"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gemm has no CPU implementation for metric l1"), std::string::npos)
        << e.what();
  }
}

TEST(BackendChoice, SelectKFollowsTheSameRule) {
  SelectParams sp;
  sp.algorithm = SelectAlgorithm::Heap;
  const BackendChoice c = choose_backend(sp);
  EXPECT_EQ(c.backend, Backend::Cpu);
  EXPECT_EQ(c.reason, kCuda ? "auto: heap has no CUDA implementation" : no_gpu_reason());
  const HostMatrix<float> values = integer_matrix(4, 30, 0, 5, 7);
  SelectParams cpu = sp;
  cpu.backend = Backend::Cpu;
  EXPECT_EQ(select_k(values.view(), nullptr, 6, Order::Ascending, sp).indices,
            select_k(values.view(), nullptr, 6, Order::Ascending, cpu).indices);
}

// ---- explain_search: the plan and the reasons, from the functions the search calls -----------------------

TEST(ExplainSearch, CpuReasonsFollowMetricAndK) {
  const HostMatrix<float> base = random_matrix(300, 24, 5), queries = random_matrix(70, 24, 6);
  SearchParams p = forcing(DistanceAlgorithm::Auto, SelectAlgorithm::Auto);
  p.backend = Backend::Cpu;
  SearchPlan plan = explain_search(base.view(), queries.view(), p);
  EXPECT_EQ(plan.backend.backend, Backend::Cpu);
  EXPECT_EQ(plan.backend.reason, "requested");
  EXPECT_EQ(plan.distance, DistanceAlgorithm::Gemm);
  EXPECT_NE(plan.distance_reason.find("dot-product"), std::string::npos) << plan.distance_reason;
  EXPECT_EQ(plan.select, SelectAlgorithm::Heap);
  EXPECT_NE(plan.select_reason.find("k = 7"), std::string::npos) << plan.select_reason;

  p.metric = Metric::L1;
  p.k = 290;
  plan = explain_search(base.view(), queries.view(), p);
  EXPECT_EQ(plan.distance, DistanceAlgorithm::Direct);
  EXPECT_EQ(plan.select, SelectAlgorithm::Quickselect);
  EXPECT_NE(plan.select_reason.find("k = 290"), std::string::npos) << plan.select_reason;

  p.distance = DistanceAlgorithm::Reference;
  EXPECT_EQ(explain_search(base.view(), queries.view(), p).distance_reason, "requested");
  const std::string text = to_string(plan);
  EXPECT_NE(text.find("backend      cpu (requested)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("distance     direct (auto: "), std::string::npos) << text;
  EXPECT_NE(text.find("select       quickselect (auto: "), std::string::npos) << text;
}

TEST(ExplainSearch, AutoBackendAndCudaReasons) {
  const HostMatrix<float> ints = integer_matrix(500, 32, 0, 255, 7), int_queries = integer_matrix(100, 32, 0, 255, 8);
  SearchParams p = forcing(DistanceAlgorithm::Auto, SelectAlgorithm::Auto);
  SearchPlan plan = explain_search(ints.view(), int_queries.view(), p);
  if (!kCuda) {
    EXPECT_EQ(plan.backend.backend, Backend::Cpu);
    EXPECT_EQ(plan.backend.reason, no_gpu_reason());
    return;
  }
  EXPECT_EQ(plan.backend.backend, Backend::Cuda);
  EXPECT_EQ(plan.distance, DistanceAlgorithm::Fp16Mma) << plan.distance_reason;
  EXPECT_NE(plan.distance_reason.find("integer data"), std::string::npos) << plan.distance_reason;
  EXPECT_NE(plan.select_reason.find("k = 7"), std::string::npos) << plan.select_reason;
  EXPECT_FALSE(plan.selects_itself);
  // Enough query x base pairs (here 9M): the fused kernel, for the same data and k.
  const HostMatrix<float> long_base = integer_matrix(90000, 32, 0, 255, 11);
  plan = explain_search(long_base.view(), int_queries.view(), p);
  EXPECT_EQ(plan.distance, DistanceAlgorithm::Fused) << plan.distance_reason;
  EXPECT_NE(plan.distance_reason.find("fused kernel"), std::string::npos) << plan.distance_reason;
  // It keeps the top k itself: no selection stage, whatever a selection request or a table row says.
  EXPECT_TRUE(plan.selects_itself);
  EXPECT_EQ(plan.select, SelectAlgorithm::Auto);
  EXPECT_NE(to_string(plan).find("select       none (none: fused keeps each query's top k itself)"),
            std::string::npos)
      << to_string(plan);
  SearchParams fused_insertion = forcing(DistanceAlgorithm::Fused, SelectAlgorithm::Insertion);
  EXPECT_TRUE(explain_search(long_base.view(), int_queries.view(), fused_insertion).selects_itself);
  // Beyond what the kernel serves (rows of more than 256 bytes): the two-stage path, with its selection.
  const HostMatrix<float> long_rows = integer_matrix(2000, 300, 0, 100, 13),
                          long_queries = integer_matrix(70, 300, 0, 100, 14);
  const SearchPlan two_stage = explain_search(long_rows.view(), long_queries.view(), fused_insertion);
  EXPECT_FALSE(two_stage.selects_itself);
  EXPECT_EQ(two_stage.select, SelectAlgorithm::Insertion);
  const HostMatrix<float> floats = random_matrix(500, 32, 9), float_queries = random_matrix(256, 32, 10);
  // Float data: under the exactness guard (its default, Auto) from 256 queries the TF32 tensor cores with the
  // re-rank, with fewer fp32 SGEMM; unguarded, fp32 SGEMM.
  EXPECT_EQ(explain_search(floats.view(), FloatView{float_queries.row(0), 255, 32, 0}, p).distance,
            DistanceAlgorithm::Cublas);
  plan = explain_search(floats.view(), float_queries.view(), p);
  EXPECT_EQ(plan.distance, DistanceAlgorithm::Tf32) << plan.distance_reason;
  EXPECT_NE(plan.distance_reason.find("exactness guard"), std::string::npos) << plan.distance_reason;
  EXPECT_TRUE(plan.guarded) << plan.guard_reason;
  SearchParams unguarded = p;
  unguarded.guard = Guard::Off;
  plan = explain_search(floats.view(), float_queries.view(), unguarded);
  EXPECT_EQ(plan.distance, DistanceAlgorithm::Cublas);
  EXPECT_NE(plan.distance_reason.find("not integers"), std::string::npos) << plan.distance_reason;
  plan = explain_search(ints.view(), FloatView{int_queries.row(0), 10, 32, 0}, p);
  EXPECT_NE(plan.distance_reason.find("fewer than 64 queries"), std::string::npos) << plan.distance_reason;
  p.metric = Metric::L1;
  EXPECT_EQ(explain_search(floats.view(), float_queries.view(), p).distance, DistanceAlgorithm::LpGemm);
  // Byte-sized integers: L1 and Linf packed (lp_bytes); Lp and wider integers on lp_gemm.
  EXPECT_EQ(explain_search(ints.view(), int_queries.view(), p).distance, DistanceAlgorithm::LpBytes);
  p.metric = Metric::Linf;
  EXPECT_EQ(explain_search(ints.view(), int_queries.view(), p).distance, DistanceAlgorithm::LpBytes);
  const HostMatrix<float> wide = integer_matrix(500, 32, 0, 300, 12);
  EXPECT_EQ(explain_search(wide.view(), int_queries.view(), p).distance, DistanceAlgorithm::LpGemm);
  p.metric = Metric::Lp;
  EXPECT_EQ(explain_search(ints.view(), int_queries.view(), p).distance, DistanceAlgorithm::LpGemm);
  // d < 16: the direct kernels, by the number of queries (one key per thread below 16 queries, lp_gemm's register
  // tiles from 16), and for integer data with q x n >= 2^27 the fused kernel.
  p.metric = Metric::L1;
  const HostMatrix<float> narrow = random_matrix(500, 8, 9), narrow_queries = random_matrix(100, 8, 10);
  EXPECT_EQ(explain_search(narrow.view(), narrow_queries.view(), p).distance, DistanceAlgorithm::LpGemm);
  p.metric = Metric::SquaredL2;
  EXPECT_EQ(explain_search(narrow.view(), narrow_queries.view(), p).distance, DistanceAlgorithm::LpGemm);
  EXPECT_EQ(explain_search(narrow.view(), FloatView{narrow_queries.row(0), 15, 8, 0}, p).distance,
            DistanceAlgorithm::Naive);
  const HostMatrix<float> narrow_ints = integer_matrix(1 << 17, 8, 0, 255, 13);
  const HostMatrix<float> narrow_int_queries = integer_matrix(1024, 8, 0, 255, 14);
  EXPECT_EQ(explain_search(narrow_ints.view(), narrow_int_queries.view(), p).distance, DistanceAlgorithm::Fused);
  EXPECT_EQ(explain_search(narrow_ints.view(), FloatView{narrow_int_queries.row(0), 1023, 8, 0}, p).distance,
            DistanceAlgorithm::LpGemm);
}

TEST(ExplainSearch, RefusesWhatTheSearchRefuses) {
  const HostMatrix<float> base = random_matrix(50, 4, 11), queries = random_matrix(5, 4, 12);
  SearchParams p = forcing(DistanceAlgorithm::Gemm, SelectAlgorithm::Auto, Metric::L1);
  p.backend = Backend::Cpu;
  EXPECT_THROW(explain_search(base.view(), queries.view(), p), Error);
  p = forcing(DistanceAlgorithm::Auto, SelectAlgorithm::Auto);
  p.k = 0;
  EXPECT_THROW(explain_search(base.view(), queries.view(), p), Error);
}

}  // namespace
}  // namespace gknn::testing
