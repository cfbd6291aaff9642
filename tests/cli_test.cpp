// cli_test.cpp: runs the `gknn` executable end to end: gen -> search -> recall round trips, every bad-input case
// (non-zero exit, message naming the file or argument, no crash), info, bench --json.
#include <signal.h>
#include <spawn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#ifdef GKNN_HAVE_NLOHMANN_JSON
#include <nlohmann/json.hpp>
#endif

#include "gknn/gknn.hpp"
#include "testing/data.hpp"

namespace fs = std::filesystem;

namespace {

struct CliRun {
  int code = -1;  // exit status; 128 + signal when the process was killed (a crash)
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// One test directory per test, so that tests never see each other's files.
class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::absolute(fs::path("cli_test_files") / info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// Runs `gknn <args>` in the test directory with stdout and stderr captured (stderr is not a terminal, so the
  /// progress bar must stay silent).
  /// `limit_blocks` > 0: runs under `ulimit -f` (file size limit) with SIGXFSZ ignored, so that writes beyond the
  /// limit fail with EFBIG like on a full disk.
  CliRun gknn(const std::string& args, int limit_blocks = 0) const {
    const std::string limit =
        limit_blocks > 0 ? "trap '' XFSZ; ulimit -f " + std::to_string(limit_blocks) + "; " : std::string();
    const std::string command = "cd '" + dir_.string() + "' && (" + limit + "'" GKNN_CLI_PATH "' " + args +
                                ") > stdout.txt 2> stderr.txt";
    const int status = std::system(command.c_str());
    CliRun r;
    if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) r.code = 128 + WTERMSIG(status);
    r.out = slurp(dir_ / "stdout.txt");
    r.err = slurp(dir_ / "stderr.txt");
    return r;
  }

  /// Expects a clean failure: the given exit code, one "gknn: error:" message that contains `needle`.
  void expect_error(const std::string& args, int code, const std::string& needle) const {
    const CliRun r = gknn(args);
    EXPECT_EQ(r.code, code) << "gknn " << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.rfind("gknn: error: ", 0), 0u) << "gknn " << args << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "gknn " << args << "\nmessage should name '" << needle
                                                     << "'; stderr: " << r.err;
  }

  /// A small SIFT-like data set (integers 0..255) with its exact ground truth, written by `gknn gen`.
  void generate_uint8(const std::string& metric = "squared_l2", int k = 10) const {
    const CliRun r = gknn("gen --rows 700 --dim 12 --distribution clusters --clusters 5 --seed 7 --uint8 -o base.bvecs "
                       "--queries 40 --queries-out queries.bvecs --groundtruth-out truth.ivecs -k " +
                       std::to_string(k) + " --metric " + metric);
    ASSERT_EQ(r.code, 0) << r.err;
  }

  void write_bytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
  }

  /// fvecs rows written byte by byte (so that NaN, Inf and inconsistent dimensions can be produced).
  void write_raw_fvecs(const std::string& name, const std::vector<std::vector<float>>& rows) const {
    std::string bytes;
    for (const auto& row : rows) {
      const int32_t dim = static_cast<int32_t>(row.size());
      bytes.append(reinterpret_cast<const char*>(&dim), 4);
      bytes.append(reinterpret_cast<const char*>(row.data()), row.size() * 4);
    }
    write_bytes(name, bytes);
  }

  /// A .npy file with an arbitrary header dictionary and `payload` bytes of data.
  void write_npy_with_header(const std::string& name, const std::string& dict, size_t payload) const {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    write_bytes(name, bytes + header + std::string(payload, '\0'));
  }

  fs::path dir_;
};

std::vector<std::vector<float>> rows_of(int64_t rows, int64_t dim, float value) {
  const std::vector<float> row(static_cast<size_t>(dim), value);
  return std::vector<std::vector<float>>(static_cast<size_t>(rows), row);
}

// ---- round trips -----------------------------------------------------------------------------------------

TEST_F(Cli, GenSearchRecallRoundTripIsExact) {
  generate_uint8();
  const CliRun s = gknn("search --base base.bvecs --query queries.bvecs -k 10 -o result.ivecs "
                        "--distances-out dist.fvecs --groundtruth truth.ivecs");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(s.err, "") << "nothing on stderr when it is not a terminal (no progress bar)";
  EXPECT_NE(s.out.find("recall@10 (ids)      1.000000"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("recall@10 (distance) 1.000000"), std::string::npos) << s.out;
  const bool cuda = gknn::backend_available(gknn::Backend::Cuda);  // auto means CUDA on a GPU machine
  EXPECT_NE(s.out.find(cuda ? "backend      cuda" : "backend      cpu"), std::string::npos) << s.out;

  // Integer data: every distance is exact in float32, so the result equals the float64 oracle id for id.
  const auto result = gknn::read_ivecs(path("result.ivecs"));
  const auto truth = gknn::read_ivecs(path("truth.ivecs"));
  ASSERT_EQ(result.rows, 40);
  ASSERT_EQ(result.cols, 10);
  EXPECT_EQ(result.data, truth.data);
  const auto dist = gknn::read_fvecs(path("dist.fvecs"));
  ASSERT_EQ(dist.rows, 40);
  for (int64_t i = 0; i < dist.rows; ++i)
    for (int64_t j = 1; j < dist.cols; ++j) EXPECT_LE(dist.row(i)[j - 1], dist.row(i)[j]) << "row " << i;

  const CliRun r = gknn("recall --result result.ivecs --groundtruth truth.ivecs --result-distances dist.fvecs "
                     "--groundtruth-distances dist.fvecs");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("recall@10 (ids)      1.000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recall@10 (distance) 1.000000"), std::string::npos) << r.out;
}

TEST_F(Cli, NpyOutputsMatchIvecsOutputs) {
  // The second search forces heap, which only the CPU has: backend auto runs it there on every machine, so on a GPU
  // machine the ids of two backends are compared (integer data: they must be identical).
  generate_uint8();
  ASSERT_EQ(gknn("search --base base.bvecs --query queries.bvecs -k 10 -o a.ivecs").code, 0);
  const CliRun r =
      gknn("search --base base.bvecs --query queries.bvecs -k 10 --select heap -o b.npy --distances-out d.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ivecs = gknn::load_indices(path("a.ivecs"));
  const auto npy = gknn::read_npy_int64(path("b.npy"));
  EXPECT_EQ(gknn::read_npy(path("b.npy")).dtype, gknn::DType::Int64);
  EXPECT_EQ(ivecs.data, npy.data);
  EXPECT_EQ(gknn::read_npy_float(path("d.npy")).rows, 40);
}

// What `backend auto` resolves to when nothing forces the CPU, with its reason.
std::string plain_auto_choice() {
  if (gknn::backend_available(gknn::Backend::Cuda)) return "cuda (auto)";
  return gknn::build_info().cuda ? "cpu (auto: no CUDA device is visible)"
                                 : "cpu (auto: this build has no CUDA backend)";
}

TEST_F(Cli, AutoBackendTakesOneThatImplementsTheForcedAlgorithm) {
  generate_uint8();
  // heap exists on the CPU only: auto must run it there on every machine, and say why.
  const CliRun r = gknn("search --base base.bvecs --query queries.bvecs -k 10 --select heap --groundtruth truth.ivecs");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string heap_choice = gknn::backend_available(gknn::Backend::Cuda)
                                      ? "cpu (auto: heap has no CUDA implementation)"
                                      : plain_auto_choice();
  EXPECT_NE(r.out.find("backend      " + heap_choice + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recall@10 (ids)      1.000000"), std::string::npos) << r.out;
  const CliRun plain = gknn("search --base base.bvecs --query queries.bvecs -k 10");
  EXPECT_NE(plain.out.find("backend      " + plain_auto_choice() + "\n"), std::string::npos) << plain.out;
  const CliRun cpu = gknn("search --base base.bvecs --query queries.bvecs -k 10 --backend cpu --select heap");
  EXPECT_NE(cpu.out.find("backend      cpu (requested)\n"), std::string::npos) << cpu.out;
  // An explicit backend is never swapped: CUDA with a CPU-only selection stays an error (naming heap on a GPU
  // machine, the missing CUDA backend elsewhere).
  expect_error("search --base base.bvecs --query queries.bvecs --backend cuda --select heap", 1,
               gknn::backend_available(gknn::Backend::Cuda) ? "heap" : "cuda");
}

TEST_F(Cli, ExplainPrintsThePlanAndWhy) {
  generate_uint8();
  const CliRun r = gknn("search --base base.bvecs --query queries.bvecs -k 10 --backend cpu --metric l1 --explain");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("backend      cpu (requested)\ndistance     direct (auto: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nselect       heap (auto: k = 10 <= 256"), std::string::npos) << r.out;
  const CliRun plain = gknn("search --base base.bvecs --query queries.bvecs -k 10 --explain");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out.rfind("backend      " + plain_auto_choice() + "\ndistance     ", 0), 0u) << plain.out;
  expect_error("search --base base.bvecs --query queries.bvecs --backend cpu --distance gemm --metric l1 --explain",
               1, "gemm");
  // The exactness guard: uint8 rows are exact on every path; --guard off/always are taken; a bad name is refused.
  EXPECT_NE(plain.out.find("\nguard        none (not needed: "), std::string::npos) << plain.out;
  const CliRun always = gknn("search --base base.bvecs --query queries.bvecs -k 10 --backend cpu --guard always --explain");
  ASSERT_EQ(always.code, 0) << always.err;
  EXPECT_NE(always.out.find("\nguard        re-rank (re-rank: always (requested)"), std::string::npos) << always.out;
  const CliRun off = gknn("search --base base.bvecs --query queries.bvecs -k 10 --backend cpu --guard off --explain");
  EXPECT_NE(off.out.find("\nguard        none (off (requested)"), std::string::npos) << off.out;
  expect_error("search --base base.bvecs --query queries.bvecs -k 10 --guard sometimes", 2, "guard");
}

TEST_F(Cli, SearchTimesEachPhaseApart) {
  generate_uint8();
  const CliRun r = gknn("search --base base.bvecs --query queries.bvecs -k 10 --repeat 3");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"\nload ", "\ninit ", "\nupload ", "\nsearch cold ", "\nsearch warm ", "\ndownload ",
                           "\nthroughput "})
    EXPECT_NE(r.out.find(line), std::string::npos) << "no line '" << line + 1 << "' in\n" << r.out;
  EXPECT_NE(r.out.find("median of 3 warm searches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("queries/s  (warm search)"), std::string::npos) << r.out;
  const CliRun cold = gknn("search --base base.bvecs --query queries.bvecs -k 10 --repeat 0");
  ASSERT_EQ(cold.code, 0) << cold.err;
  EXPECT_EQ(cold.out.find("search warm"), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("queries/s  (cold search)"), std::string::npos) << cold.out;
  expect_error("search --base base.bvecs --query queries.bvecs --repeat -1", 2, "--repeat");
}

TEST_F(Cli, OracleSampleChecksEvenlySpacedQueries) {
  generate_uint8();
  const CliRun r = gknn("search --base base.bvecs --query queries.bvecs -k 10 --repeat 0 --oracle-sample 8");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("oracle       8 of 8 sampled queries (one in 5) with ids identical"), std::string::npos)
      << r.out;
  const CliRun all = gknn("search --base base.bvecs --query queries.bvecs -k 10 --repeat 0 --oracle-sample 1000");
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("oracle       40 of 40 sampled queries (one in 1)"), std::string::npos) << all.out;
}

TEST_F(Cli, RecallMeasuresAPartlyWrongResult) {
  generate_uint8();
  // Keep the first 5 true neighbours of each query and replace the last 5 by ids that are not among the 10.
  auto truth = gknn::read_ivecs(path("truth.ivecs"));
  auto wrong = truth;
  for (int64_t i = 0; i < wrong.rows; ++i) {
    int32_t candidate = 0;
    for (int64_t j = 5; j < 10; ++j) {
      while (std::find(truth.row(i), truth.row(i) + 10, candidate) != truth.row(i) + 10) ++candidate;
      wrong.row(i)[j] = candidate++;
    }
  }
  gknn::write_ivecs(path("wrong.ivecs"), std::as_const(wrong).view());
  const CliRun r = gknn("recall --result wrong.ivecs --groundtruth truth.ivecs");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("recall@10 (ids)      0.500000"), std::string::npos) << r.out;
  const CliRun r5 = gknn("recall --result wrong.ivecs --groundtruth truth.ivecs -k 5");
  EXPECT_NE(r5.out.find("recall@5 (ids)      1.000000"), std::string::npos) << r5.out;
}

TEST_F(Cli, EveryMetricMatchesItsGroundTruth) {
  // Float data for the metrics whose float32 and float64 results differ in rounding; ids must still agree here
  // (random data has no near-ties at this size), and the ann-benchmarks recall is tolerant anyway.
  ASSERT_EQ(gknn("gen --rows 600 --dim 9 --seed 3 -o base.fvecs --queries 30 --queries-out queries.fvecs").code, 0);
  for (const std::string metric : {"squared_l2", "l2", "inner_product", "cosine", "l1", "linf", "lp"}) {
    SCOPED_TRACE(metric);
    const std::string m = "--metric " + metric + (metric == "lp" ? " -p 3" : "");
    // Ground truth by the float64 reference: gen writes it only together with new data, so compute it here.
    const CliRun t =
        gknn("search --base base.fvecs --query queries.fvecs -k 7 --backend cpu --distance reference " + m +
             " -o truth.ivecs");
    ASSERT_EQ(t.code, 0) << t.err;
    const CliRun s = gknn("search --base base.fvecs --query queries.fvecs -k 7 " + m + " --groundtruth truth.ivecs");
    ASSERT_EQ(s.code, 0) << s.err;
    EXPECT_NE(s.out.find("recall@7 (ids)      1.000000"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("recall@7 (distance) 1.000000"), std::string::npos) << s.out;
  }
}

TEST_F(Cli, KLargerThanBaseIsPadded) {
  write_raw_fvecs("base.fvecs", {{0.f, 0.f}, {1.f, 0.f}, {3.f, 0.f}});
  write_raw_fvecs("queries.fvecs", {{0.9f, 0.f}});
  const CliRun r = gknn("search --base base.fvecs --query queries.fvecs -k 5 -o r.npy --distances-out d.fvecs");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ids = gknn::read_npy_int64(path("r.npy"));
  EXPECT_EQ(ids.data, (std::vector<int64_t>{1, 0, 2, -1, -1}));
  const auto d = gknn::read_fvecs(path("d.fvecs"));
  EXPECT_TRUE(std::isinf(d.row(0)[3]) && d.row(0)[3] > 0);
}

TEST_F(Cli, GenIsReproducible) {
  ASSERT_EQ(gknn("gen --rows 50 --dim 4 --distribution exponential --seed 11 -o a.npy").code, 0);
  ASSERT_EQ(gknn("gen --rows 50 --dim 4 --distribution exponential --seed 11 -o b.npy").code, 0);
  ASSERT_EQ(gknn("gen --rows 50 --dim 4 --distribution exponential --seed 12 -o c.npy").code, 0);
  EXPECT_EQ(slurp(dir_ / "a.npy"), slurp(dir_ / "b.npy"));
  EXPECT_NE(slurp(dir_ / "a.npy"), slurp(dir_ / "c.npy"));
  const auto m = gknn::read_npy_float(path("a.npy"));
  EXPECT_EQ(m.rows, 50);
  EXPECT_EQ(m.cols, 4);
}

TEST_F(Cli, Hdf5GroundTruthDistancesAreUsed) {
  if (!gknn::hdf5_supported()) GTEST_SKIP() << "this build has no HDF5";
  gknn::AnnDataset data;
  data.train = gknn::testing::random_matrix(300, 6, 1);
  data.test = gknn::testing::random_matrix(20, 6, 2);
  gknn::SearchParams params;
  params.k = 10;
  params.metric = gknn::Metric::L2;  // ann-benchmarks "euclidean" stores L2, not squared
  params.backend = gknn::Backend::Cpu;
  params.distance = gknn::DistanceAlgorithm::Reference;
  const gknn::Result truth = gknn::search(std::as_const(data.train).view(), std::as_const(data.test).view(), params);
  data.neighbors = gknn::HostMatrix<int32_t>(truth.rows, truth.k);
  data.distances = gknn::HostMatrix<float>(truth.rows, truth.k);
  for (size_t i = 0; i < truth.indices.size(); ++i) {
    data.neighbors.data[i] = static_cast<int32_t>(truth.indices[i]);
    data.distances.data[i] = truth.distances[i];
  }
  data.distance = "euclidean";
  gknn::write_ann_hdf5(path("set.hdf5"), data);
  // squared_l2 exercises the unit conversion: the stored L2 distances must be squared before comparing.
  const CliRun r = gknn("search --base set.hdf5:train --query set.hdf5:test -k 10 --groundtruth set.hdf5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("recall@10 (ids)      1.000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recall@10 (distance) 1.000000"), std::string::npos) << r.out;
}

// ---- bad input: a clear message and a non-zero exit, never a crash -----------------------------------------

TEST_F(Cli, MissingFilesAreNamed) {
  generate_uint8();
  expect_error("search --base nothere.fvecs --query queries.bvecs", 1, "nothere.fvecs");
  expect_error("search --base base.bvecs --query nothere.fvecs", 1, "--query");
  expect_error("search --base base.bvecs --query queries.bvecs --groundtruth nothere.ivecs", 1, "nothere.ivecs");
  expect_error("recall --result nothere.ivecs --groundtruth truth.ivecs", 1, "nothere.ivecs");
}

TEST_F(Cli, CorruptVecsFilesAreRejected) {
  generate_uint8();
  std::string good = slurp(dir_ / "base.bvecs");
  write_bytes("truncated.bvecs", good.substr(0, good.size() - 3));
  expect_error("search --base truncated.bvecs --query queries.bvecs", 1, "truncated.bvecs");
  write_raw_fvecs("ragged.fvecs", {{1.f, 2.f, 3.f}, {1.f, 2.f}, {1.f, 2.f, 3.f}});
  expect_error("search --base ragged.fvecs --query ragged.fvecs", 1, "ragged.fvecs");
  write_bytes("empty.fvecs", "");
  write_raw_fvecs("q.fvecs", {{1.f, 2.f}});
  const CliRun r = gknn("search --base empty.fvecs --query q.fvecs");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("empty.fvecs"), std::string::npos) << r.err;
}

TEST_F(Cli, UnsupportedNpyIsRejected) {
  write_raw_fvecs("q.fvecs", {{1.f, 2.f, 3.f}});
  write_npy_with_header("complex.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", 48);
  expect_error("search --base complex.npy --query q.fvecs", 1, "complex.npy");
  write_npy_with_header("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24);
  expect_error("search --base fortran.npy --query q.fvecs", 1, "fortran.npy");
  write_npy_with_header("cube.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 1), }", 24);
  expect_error("search --base cube.npy --query q.fvecs", 1, "cube.npy");
}

TEST_F(Cli, DimensionMismatchNamesBothFiles) {
  write_raw_fvecs("base.fvecs", rows_of(4, 3, 1.f));
  write_raw_fvecs("queries.fvecs", rows_of(2, 5, 1.f));
  expect_error("search --base base.fvecs --query queries.fvecs", 1, "base.fvecs");
  expect_error("search --base base.fvecs --query queries.fvecs", 1, "queries.fvecs");
}

TEST_F(Cli, NonFiniteValuesAreRejectedNamingTheRow) {
  auto rows = rows_of(5, 3, 0.5f);
  rows[3][1] = std::numeric_limits<float>::quiet_NaN();
  write_raw_fvecs("nan.fvecs", rows);
  rows[3][1] = std::numeric_limits<float>::infinity();
  write_raw_fvecs("inf.fvecs", rows);
  write_raw_fvecs("ok.fvecs", rows_of(2, 3, 0.25f));
  expect_error("search --base nan.fvecs --query ok.fvecs", 1, "row 3");
  expect_error("search --base ok.fvecs --query inf.fvecs", 1, "row 3");
  expect_error("search --base ok.fvecs --query inf.fvecs", 1, "inf.fvecs");
}

TEST_F(Cli, BadArgumentsAreUsageErrors) {
  write_raw_fvecs("x.fvecs", rows_of(4, 3, 1.f));
  expect_error("search --base x.fvecs --query x.fvecs -k 0", 2, "--k");
  expect_error("search --base x.fvecs --query x.fvecs -k -4", 2, "--k");
  expect_error("search --base x.fvecs --query x.fvecs --metric manhattan", 2, "manhattan");
  expect_error("search --base x.fvecs --query x.fvecs --metric lp -p 0", 2, "--p");
  expect_error("search --base x.fvecs --query x.fvecs --metric lp -p -2", 2, "--p");
  expect_error("search --base x.fvecs --query x.fvecs --select bogosort", 2, "bogosort");
  expect_error("search --base x.fvecs --query x.fvecs --select heap+aligned", 2, "heap+aligned");
  expect_error("search --base x.fvecs --query x.fvecs --backend tpu", 2, "tpu");
  expect_error("search --base x.fvecs --query x.fvecs --memory-budget 3parsecs", 2, "--memory-budget");
  expect_error("search --base x.fvecs --query x.fvecs --threads 100000", 2, "--threads");
  expect_error("search --base x.fvecs --query x.fvecs --frobnicate", 2, "--frobnicate");
  expect_error("search --base x.fvecs", 2, "--query");
  expect_error("", 2, "subcommand");
  expect_error("gen --rows 0 --dim 3 -o g.fvecs", 2, "--rows");
  expect_error("gen --rows 5 --dim 3 --distribution zipf -o g.fvecs", 2, "zipf");
  EXPECT_EQ(gknn("search --help").code, 0);
}

TEST_F(Cli, UnavailableAlgorithmsAreReported) {
  write_raw_fvecs("x.fvecs", rows_of(4, 3, 1.f));
  expect_error("search --base x.fvecs --query x.fvecs --distance gemm --metric l1", 1, "gemm");
  if (!gknn::backend_available(gknn::Backend::Cuda))
    expect_error("search --base x.fvecs --query x.fvecs --backend cuda", 1, "cuda");
}

TEST_F(Cli, ImpossibleAllocationIsAnErrorNotACrash) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer aborts on a failed operator new instead of throwing std::bad_alloc";
#endif
  write_raw_fvecs("x.fvecs", rows_of(4, 3, 1.f));
  // 4 x 10^15 results cannot be allocated: std::bad_alloc must become a message, not an abort.
  const CliRun r = gknn("search --base x.fvecs --query x.fvecs -k 1000000000000000");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("gknn: error: ", 0), 0u) << r.err;
}

TEST_F(Cli, UnwritableOutputFailsBeforeSearching) {
  write_raw_fvecs("x.fvecs", rows_of(4, 3, 1.f));
  expect_error("search --base x.fvecs --query x.fvecs -o no/such/dir/r.ivecs", 1, "no/such/dir/r.ivecs");
  expect_error("search --base x.fvecs --query x.fvecs --distances-out no/such/d.fvecs", 1, "no/such/d.fvecs");
  expect_error("search --base x.fvecs --query x.fvecs -o result.txt", 1, "result.txt");
  fs::create_directories(dir_ / "adir");
  expect_error("search --base x.fvecs --query x.fvecs -o adir", 1, "adir");
  // Checked before loading: even with a missing input, the output path is what gets reported.
  expect_error("search --base missing.fvecs --query x.fvecs -o no/dir/r.ivecs", 1, "no/dir/r.ivecs");
  expect_error("gen --rows 5 --dim 3 -o no/dir/g.fvecs", 1, "no/dir/g.fvecs");
}

TEST_F(Cli, GroundTruthShapeMismatchIsReported) {
  generate_uint8("squared_l2", 5);
  expect_error("search --base base.bvecs --query queries.bvecs -k 10 --groundtruth truth.ivecs", 1, "truth.ivecs");
  expect_error("recall --result truth.ivecs --groundtruth truth.ivecs -k 6", 1, "-k");
}

// ---- info and bench ----------------------------------------------------------------------------------------

TEST_F(Cli, InfoListsBuildAndAlgorithms) {
  const CliRun r = gknn("info");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("gknn " + gknn::build_info().version), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("algorithms of backend cpu"), std::string::npos) << r.out;
  const gknn::PlanTableSummary table = gknn::plan_table_summary("");
  EXPECT_NE(r.out.find("plan table   " + table.source + ": " + std::to_string(table.rows) + " rows\n"),
            std::string::npos)
      << r.out;
  for (const auto& s : gknn::select_algorithms(gknn::Backend::Cpu))
    EXPECT_NE(r.out.find(gknn::to_string(s.algorithm)), std::string::npos) << r.out;
  for (auto a : gknn::distance_algorithms(gknn::Backend::Cpu, gknn::Metric::SquaredL2))
    EXPECT_NE(r.out.find(gknn::to_string(a)), std::string::npos) << r.out;
  // The catalogue has a line for every algorithm of gknn/algorithms.def, available here or not.
  for (const auto& d : gknn::catalogue::kDistances)
    EXPECT_NE(r.out.find("  distance " + std::string(d.name) + " "), std::string::npos) << d.name << "\n" << r.out;
  for (const auto& s : gknn::catalogue::kSelects)
    EXPECT_NE(r.out.find("  select   " + std::string(s.name) + " "), std::string::npos) << s.name << "\n" << r.out;
}

// A CUDA build lists its CUDA algorithms even on a machine without a GPU, and says whether a device is visible.
TEST_F(Cli, InfoListsCompiledCudaAlgorithmsWithOrWithoutADevice) {
  const CliRun r = gknn("info");
  ASSERT_EQ(r.code, 0) << r.err;
  if (!gknn::backend_compiled(gknn::Backend::Cuda)) {
    EXPECT_NE(r.out.find("cuda (not compiled in)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("algorithms of backend cuda"), std::string::npos) << r.out;
    return;
  }
  const bool device = gknn::backend_available(gknn::Backend::Cuda);
  const std::string state = device ? "built, device visible" : "built, no device visible";
  EXPECT_NE(r.out.find("algorithms of backend cuda (" + state + ")"), std::string::npos) << r.out;
  const size_t cuda_section = r.out.find("algorithms of backend cuda");
  for (const auto& s : gknn::compiled_select_algorithms(gknn::Backend::Cuda))
    EXPECT_NE(r.out.find(gknn::to_string(s.algorithm), cuda_section), std::string::npos) << r.out;
  for (auto a : gknn::compiled_distance_algorithms(gknn::Backend::Cuda, gknn::Metric::SquaredL2))
    EXPECT_NE(r.out.find(gknn::to_string(a), cuda_section), std::string::npos) << r.out;
}

TEST_F(Cli, BenchJsonIsValid) {
  generate_uint8();
  const CliRun r = gknn("bench --base base.bvecs --query queries.bvecs -k 10 --repeat 3 --warmup 0 --json");
  ASSERT_EQ(r.code, 0) << r.err;
#ifdef GKNN_HAVE_NLOHMANN_JSON
  const auto json = nlohmann::json::parse(r.out);  // throws (test fails) on invalid JSON
  EXPECT_EQ(json.at("k"), 10);
  EXPECT_EQ(json.at("backend"), gknn::backend_available(gknn::Backend::Cuda) ? "cuda" : "cpu");
  EXPECT_EQ(json.at("queries").at("rows"), 40);
  EXPECT_EQ(json.at("search_runs_s").size(), 3u);
  const auto& stages = json.at("stages_s");
  EXPECT_GT(stages.at("search").get<double>(), 0.0);
  EXPECT_GE(stages.at("selection_estimate").get<double>(), 0.0);
  EXPECT_NEAR(stages.at("total").get<double>(), stages.at("load").get<double>() + stages.at("search").get<double>(),
              1e-6);
  EXPECT_GT(json.at("queries_per_s").get<double>(), 0.0);
#else
  GTEST_SKIP() << "nlohmann-json not found at configure time: JSON not parsed back";
#endif
  const CliRun table = gknn("bench --base base.bvecs --query queries.bvecs -k 10 --repeat 1 --warmup 0");
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("queries/s"), std::string::npos) << table.out;
}

/// The lines of a file, split into comma-separated fields (the sweep's files never quote).
std::vector<std::vector<std::string>> csv_fields(const fs::path& file) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    rows.emplace_back();
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, ',');) rows.back().push_back(field);
  }
  return rows;
}

/// The data rows of a plan table (neither comments nor the header).
std::vector<std::string> plan_rows(const fs::path& file) {
  std::vector<std::string> rows;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#' && line != std::string(gknn::plan_table_header())) rows.push_back(line);
  return rows;
}

constexpr const char* kSweepCsvHeader =
    "device,metric,data,n,q,d,k,path,distance,select,ms,runs,auto_distance,auto_select,capped";

TEST_F(Cli, BenchSweepWritesPlanTableRows) {
  const std::string sweep =
      "bench --sweep --backend cpu --sweep-n 300 --sweep-q 20 --sweep-d 8 --sweep-k 5 --sweep-metrics squared_l2,l1 "
      "--sweep-data integer --repeat 1 --warmup 0 --out table.csv";
  const CliRun r = gknn(sweep + " --csv timings.csv");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto timings = csv_fields(path("timings.csv"));
  ASSERT_FALSE(timings.empty());
  EXPECT_EQ(slurp(path("timings.csv")).substr(0, std::string(kSweepCsvHeader).size()), kSweepCsvHeader);
  int autos = 0, candidates = 0;
  for (size_t i = 1; i < timings.size(); ++i) {
    const std::vector<std::string>& fields = timings[i];
    ASSERT_EQ(fields.size(), 15u) << i;
    EXPECT_EQ(fields[0], "cpu");
    autos += fields[7] == "auto";
    candidates += fields[7] == "candidate";
  }
  EXPECT_EQ(autos, 2);          // one Auto timing per cell
  EXPECT_GE(candidates, 2 * 3);  // every distance, then every selection, per cell
  EXPECT_NE(r.out.find("worst        Auto / best = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 rows added or replaced in"), std::string::npos) << r.out;
  ASSERT_EQ(gknn(sweep).code, 0);  // the same cells again: their rows are replaced, not repeated
  int headers = 0;
  {
    std::ifstream in(path("table.csv"));
    for (std::string line; std::getline(in, line);) headers += line == std::string(gknn::plan_table_header());
  }
  EXPECT_EQ(headers, 1);
  const std::vector<std::string> rows = plan_rows(path("table.csv"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].rfind("cpu,dot,integer,300,20,8,5,", 0), 0u) << rows[0];
  EXPECT_EQ(rows[1].rfind("cpu,l1,integer,300,20,8,5,direct,", 0), 0u) << rows[1];  // the CPU's only L1 kernel
  expect_error("bench -k 3", 1, "--base and --query are required");
}

// A re-check of Auto alone (bench/suite/report.py --auto-from): one auto line a cell, resumable, no plan table.
TEST_F(Cli, BenchSweepAutoOnlyTimesAutoAlone) {
  const std::string sweep =
      "bench --sweep --backend cpu --sweep-n 300 --sweep-q 20 --sweep-d 8 --sweep-k 1,5 --sweep-metrics squared_l2 "
      "--sweep-data integer --repeat 1 --warmup 0 --sweep-auto-only --csv autos.csv";
  const CliRun r = gknn(sweep);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(", Auto only"), std::string::npos) << r.out;
  const auto rows = csv_fields(path("autos.csv"));
  ASSERT_EQ(rows.size(), 3u);  // the header, then one line a cell
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 15u);
    EXPECT_EQ(rows[i][7], "auto");
    EXPECT_EQ(rows[i][12], "gemm");  // the pair Auto resolved to
  }
  const CliRun again = gknn(sweep + " --resume");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("cells        0 measured now, 2 from earlier runs, 0 left"), std::string::npos) << again.out;
  expect_error(sweep + " --out table.csv", 2, "--out excludes --sweep-auto-only");  // a usage error
}

// The grid's largest cells cost seconds a call: a pair whose warm-up call takes --sweep-long-call-ms or more is timed
// once after it (0 here: every call is long), the others --repeat times at least; a capped one once either way.
TEST_F(Cli, BenchSweepTimesLongCallsOnce) {
  const std::string grid =
      "bench --sweep --backend cpu --sweep-n 300 --sweep-q 20 --sweep-d 8 --sweep-k 5 --sweep-metrics squared_l2 "
      "--sweep-data integer --repeat 3 --warmup 1";
  ASSERT_EQ(gknn(grid + " --csv usual.csv").code, 0);
  ASSERT_EQ(gknn(grid + " --sweep-long-call-ms 0 --csv long.csv").code, 0);
  int usual = 0, long_ones = 0;
  for (const auto& f : csv_fields(path("usual.csv")))
    if (f.size() == 15 && f[11] != "runs" && f[11] != "0" && f[14] != "1") {
      EXPECT_GE(std::stoi(f[11]), 3) << f[8] << "+" << f[9];
      ++usual;
    }
  for (const auto& f : csv_fields(path("long.csv")))
    if (f.size() == 15 && f[11] != "runs" && f[11] != "0") {
      EXPECT_EQ(f[11], "1") << f[8] << "+" << f[9];
      ++long_ones;
    }
  EXPECT_GT(usual, 0);
  EXPECT_GT(long_ones, 0);
  expect_error(grid + " --sweep-long-call-ms -1", 2, "--sweep-long-call-ms");
}

// issue 13's `gknn bench --suite`: the source tree's bench/suite/run.sh with this build (here a one-cell grid on the
// CPU through run.sh's SUITE_* variables): the sweep's CSV and the report land in --suite-dir, relative to the
// caller's directory although run.sh works from the source root; --suite and --sweep exclude each other.
TEST_F(Cli, BenchSuiteRunsTheSuiteScriptIntoItsDirectory) {
  if (std::system("python3 -c pass > /dev/null 2>&1") != 0) GTEST_SKIP() << "run.sh's report needs python3";
  const std::vector<std::pair<const char*, const char*>> grid{
      {"SUITE_N", "300"}, {"SUITE_Q", "20"}, {"SUITE_D", "8"}, {"SUITE_K", "5"}, {"SUITE_DATA", "integer"}};
  for (const auto& [name, value] : grid) ::setenv(name, value, 1);
  const CliRun r = gknn("bench --suite --backend cpu --suite-budget 60 --suite-dir my_suite");
  for (const auto& [name, value] : grid) ::unsetenv(name);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto rows = csv_fields(path("my_suite/suite_gknn.csv"));
  ASSERT_GE(rows.size(), 3u) << r.out;  // the header, candidates and Auto of the one cell
  EXPECT_EQ(rows[1][0], "cpu");
  EXPECT_NE(slurp(path("my_suite/suite.md")).find("Cells: 1 of 1 measured"), std::string::npos) << r.out;
  expect_error("bench --suite --sweep", 2, "excludes --suite");
  expect_error("bench --suite --suite-budget soon", 2, "--suite-budget: whole seconds or none");
  expect_error("bench --suite-quick", 2, "--suite-quick requires --suite");
}

// Auto against each cell's fastest pair of a full sweep, side by side (--sweep-best-from): two lines a cell that the
// full sweep completed, the candidate that sweep's fastest, both with the same count of runs; cells it lacks are
// left out; --sweep-recheck-above keeps the cells where Auto lost there by more than its factor. Without
// --sweep-auto-only the option is a usage error.
TEST_F(Cli, BenchSweepBestFromDuelsAutoWithTheFastestPair) {
  const std::string grid =
      "bench --sweep --backend cpu --sweep-n 300 --sweep-q 20 --sweep-d 8 --sweep-metrics squared_l2 "
      "--sweep-data integer --repeat 1 --warmup 0";
  const CliRun full = gknn(grid + " --sweep-k 1 --csv full.csv");
  ASSERT_EQ(full.code, 0) << full.err;
  std::string fastest_distance, fastest_select;
  double fastest_ms = 0;
  for (const auto& f : csv_fields(path("full.csv")))
    if (f.size() == 15 && f[7] == "candidate" && f[11] != "0" && (fastest_ms == 0 || std::stod(f[10]) < fastest_ms)) {
      fastest_ms = std::stod(f[10]);
      fastest_distance = f[8];
      fastest_select = f[9];
    }
  ASSERT_GT(fastest_ms, 0);
  const CliRun duel = gknn(grid + " --sweep-k 1,5 --sweep-auto-only --sweep-best-from full.csv --csv duel.csv");
  ASSERT_EQ(duel.code, 0) << duel.err;
  const auto rows = csv_fields(path("duel.csv"));
  ASSERT_EQ(rows.size(), 3u);  // the header, then the k = 1 cell's two lines (k = 5 is not in full.csv)
  EXPECT_EQ(rows[1][7], "candidate");
  EXPECT_EQ(rows[1][6], "1");
  EXPECT_EQ(rows[1][8], fastest_distance);
  EXPECT_EQ(rows[1][9], fastest_select);
  EXPECT_EQ(rows[2][7], "auto");
  EXPECT_EQ(rows[1][11], rows[2][11]);  // the runs alternated: as many of each
  EXPECT_GE(std::stoi(rows[2][11]), 1);
  expect_error(grid + " --sweep-best-from full.csv --csv other.csv", 2, "--sweep-best-from requires --sweep-auto-only");
  // --sweep-recheck-above: only the cells where Auto took more than the factor times the fastest pair there (Auto
  // never takes a billion times it; every cell's Auto takes more than 0 times it).
  const std::string recheck = grid + " --sweep-k 1 --sweep-auto-only --sweep-best-from full.csv --sweep-recheck-above ";
  const CliRun none = gknn(recheck + "1e9 --csv none.csv");
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_NE(none.out.find("cells        0 measured now"), std::string::npos) << none.out;
  const CliRun every = gknn(recheck + "0 --csv every.csv");
  ASSERT_EQ(every.code, 0) << every.err;
  EXPECT_NE(every.out.find("cells        1 measured now"), std::string::npos) << every.out;
  expect_error(grid + " --sweep-auto-only --sweep-recheck-above 1.1 --csv x.csv", 2,
               "--sweep-recheck-above requires --sweep-best-from");
}

// issue 13: the suite runs in slices over several sessions. A resumed sweep measures only the cells its CSV lacks
// (a cell without its auto line was cut short and is measured again), keeps the earlier lines as they were and
// holds every cell once; the plan table keeps one row per cell.
TEST_F(Cli, BenchSweepResumesOnlyTheMissingCells) {
  const std::string sweep =
      "bench --sweep --backend cpu --sweep-n 300 --sweep-q 20 --sweep-d 8 --sweep-metrics squared_l2 "
      "--sweep-data integer --repeat 1 --warmup 0 --csv timings.csv --out table.csv";
  const CliRun first = gknn(sweep + " --sweep-k 1");
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find("cells        1 measured now, 0 from earlier runs, 0 left"), std::string::npos) << first.out;
  const std::string before = slurp(path("timings.csv"));
  const std::string cut_short = "cpu,squared_l2,integer,300,20,8,5,candidate,gemm,heap,1.5,1,gemm,heap,0";
  write_bytes("timings.csv", before + cut_short + "\n");

  const CliRun resumed = gknn(sweep + " --sweep-k 1,5 --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("cells        1 measured now, 1 from earlier runs, 0 left"), std::string::npos)
      << resumed.out;
  EXPECT_NE(resumed.out.find("1 rows of cells cut short dropped"), std::string::npos) << resumed.out;
  EXPECT_EQ(resumed.out.find("continue"), std::string::npos) << "nothing is left to continue:\n" << resumed.out;
  const std::string after = slurp(path("timings.csv"));
  EXPECT_EQ(after.rfind(before, 0), 0u) << "the earlier cell's lines must stay as they were:\n" << after;
  EXPECT_EQ(after.find(cut_short), std::string::npos) << after;
  std::map<std::string, int> autos;
  for (const std::vector<std::string>& f : csv_fields(path("timings.csv")))
    if (f.size() == 15 && f[7] == "auto") ++autos[f[6]];
  EXPECT_EQ(autos, (std::map<std::string, int>{{"1", 1}, {"5", 1}}));
  const std::vector<std::string> rows = plan_rows(path("table.csv"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].rfind("cpu,dot,integer,300,20,8,1,", 0), 0u) << rows[0];
  EXPECT_EQ(rows[1].rfind("cpu,dot,integer,300,20,8,5,", 0), 0u) << rows[1];

  const CliRun again = gknn(sweep + " --sweep-k 1,5 --resume");  // everything is there: nothing is measured
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("cells        0 measured now, 2 from earlier runs, 0 left"), std::string::npos) << again.out;
  EXPECT_EQ(slurp(path("timings.csv")), after);
  EXPECT_EQ(plan_rows(path("table.csv")), rows);
}

TEST_F(Cli, BenchSweepResumeRejectsOtherFiles) {
  const std::string sweep =
      "bench --sweep --backend cpu --sweep-n 300 --sweep-q 20 --sweep-d 8 --sweep-k 5 --sweep-metrics squared_l2 "
      "--sweep-data integer --repeat 1 --warmup 0 --resume --csv ";
  // The format before the capped column, and a row whose k is not a number.
  write_bytes("old.csv", "device,metric,data,n,q,d,k,path,distance,select,ms,runs,auto_distance,auto_select\n");
  expect_error(sweep + "old.csv", 1, "old.csv line 1: expected the header");
  write_bytes("bad.csv", std::string(kSweepCsvHeader) + "\ncpu,squared_l2,integer,300,20,8,five,auto,gemm,heap,1,1,"
                                                         "gemm,heap,0\n");
  expect_error(sweep + "bad.csv", 1, "bad.csv line 2: field 7 'five' is not a positive integer");
  write_bytes("zero.csv", std::string(kSweepCsvHeader) + "\ncpu,squared_l2,integer,300,20,8,5,auto,gemm,heap,1,0,"
                                                          "gemm,heap,0\n");
  expect_error(sweep + "zero.csv", 1, "zero.csv line 2: runs 0 (skipped as hopeless) is only for a capped candidate");
  write_bytes("table.csv", std::string(gknn::plan_table_header()) + "\ncpu,dot,integer,300,20\n");
  expect_error(sweep + "t.csv --out table.csv", 1, "table.csv line 2");
  expect_error("bench --sweep --backend cpu --resume", 2, "--csv");
  expect_error("bench --sweep --backend cpu --sweep-budget 10", 2, "--csv");
  EXPECT_FALSE(fs::exists(path("t.csv")));
}

// A budget of 0 starts no cell, says what is left and prints this very command with --resume added.
TEST_F(Cli, BenchSweepBudgetPrintsTheCommandThatGoesOn) {
  const std::string sweep =
      "bench --sweep --backend cpu --sweep-n 300 --sweep-q 20 --sweep-d 8 --sweep-k 1,5 --sweep-metrics squared_l2 "
      "--sweep-data integer --repeat 1 --warmup 0 --csv timings.csv --sweep-budget 0";
  const CliRun r = gknn(sweep);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cells        0 measured now, 0 from earlier runs, 2 left"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first cell left: squared_l2 integer n=300 q=20 d=8 k=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncontinue     " GKNN_CLI_PATH " " + sweep + " --resume\n"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(path("timings.csv")));
  const CliRun rest = gknn(sweep + " --resume --sweep-budget 600");  // the last value of an option counts
  ASSERT_EQ(rest.code, 0) << rest.err;
  EXPECT_NE(rest.out.find("cells        2 measured now, 0 from earlier runs, 0 left"), std::string::npos) << rest.out;
}

/// A timed candidate's runs: at least `repeat`, at most the sweep's 51.
void expect_timed_runs(const std::string& runs, int repeat) {
  EXPECT_GE(std::stoi(runs), repeat);
  EXPECT_LE(std::stoi(runs), 51);
}

// A candidate whose first call takes more than --sweep-cap times the cell's best so far (Auto's time, taken first,
// included) is timed once and flagged; Auto is always timed in full. Cap 0 caps every candidate, a huge cap none.
TEST_F(Cli, BenchSweepCapFlagsHopelessCandidates) {
  const std::string sweep =
      "bench --sweep --backend cpu --sweep-n 300 --sweep-q 20 --sweep-d 8 --sweep-k 5 --sweep-metrics squared_l2 "
      "--sweep-data integer --repeat 3 --warmup 1 --csv timings.csv --sweep-cap ";
  ASSERT_EQ(gknn(sweep + "0").code, 0);
  auto rows = csv_fields(path("timings.csv"));
  ASSERT_GE(rows.size(), 1u + 3 + 1);  // the header, at least the two rounds' candidates, Auto
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 15u);
    const bool automatic = rows[i][7] == "auto";
    EXPECT_EQ(rows[i][14], automatic ? "0" : "1") << i;
    // Timed runs: at least --repeat, more while they sum to under 25 ms (at most 51); a capped one: its one call.
    if (automatic) expect_timed_runs(rows[i][11], 3);
    else EXPECT_EQ(rows[i][11], "1") << i;
  }
  ASSERT_EQ(gknn(sweep + "1e9").code, 0);
  rows = csv_fields(path("timings.csv"));
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][14], "0") << i;
    expect_timed_runs(rows[i][11], 3);
  }
}

/// The candidate lines of a sweep's --csv by (metric, n, q, distance, select).
std::map<std::vector<std::string>, std::vector<std::string>> sweep_candidates(const fs::path& file) {
  std::map<std::vector<std::string>, std::vector<std::string>> out;
  for (const std::vector<std::string>& f : csv_fields(file))
    if (f.size() == 15 && f[7] == "candidate") out[{f[1], f[3], f[4], f[8], f[9]}] = f;
  return out;
}

// On the H200 one `insertion` call took 87.5 s at n=262144 q=10000 d=8 k=1000, a pair already capped at q=1024. A
// pair capped in a smaller neighbour cell (same n, d, k and a smaller q, or same q, d, k and a smaller n; measured in
// this run or read from the resumed CSV) is not called: it is recorded with runs 0, capped 1 and its capped time
// scaled by the work ratio, and is never the best. A round whose every pair is hopeless times the least hopeless one,
// and Auto's own pair is always timed (Auto's time says it is not hopeless).
// Cap 0 caps every candidate of a cell and --sweep-hopeless 0 prunes whatever was capped, whatever it lost by; --sweep-no-prune times them all, and so does a loss factor no pair reaches.
TEST_F(Cli, BenchSweepSkipsCandidatesCappedInASmallerCell) {
  const std::string sweep =
      "bench --sweep --backend cpu --sweep-n 300,600 --sweep-d 8 --sweep-k 5 --sweep-metrics squared_l2,l1 "
      "--sweep-data integer --repeat 1 --warmup 0 --sweep-cap 0 --sweep-hopeless 0 --out table.csv --csv ";
  const CliRun first = gknn(sweep + "timings.csv --sweep-q 20");  // n=600 is pruned by n=300 of this run
  ASSERT_EQ(first.code, 0) << first.err;
  const CliRun resumed = gknn(sweep + "timings.csv --sweep-q 20,40 --resume");  // q=40 by the CSV's q=20
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("candidates skipped (capped in a smaller cell"), std::string::npos) << resumed.out;
  const auto rows = sweep_candidates(path("timings.csv"));
  const std::vector<std::pair<std::string, std::string>> larger{{"300", "40"}, {"600", "20"}, {"600", "40"}};
  // Auto's pair per (metric, n, q): its distance with the rules' selection, and the selection it resolved to.
  std::map<std::vector<std::string>, std::pair<std::string, std::string>> autos;
  for (const std::vector<std::string>& f : csv_fields(path("timings.csv")))
    if (f.size() == 15 && f[7] == "auto") autos[{f[1], f[3], f[4]}] = {f[12], f[13]};
  const auto autos_own = [&](const std::vector<std::string>& key) {  // key: metric, n, q, distance, select
    const auto& [distance, select] = autos.at({key[0], key[1], key[2]});
    return key[3] == distance && (key[4] == "auto" || key[4] == select);
  };
  // A pair Auto took in some cell of its metric may have been timed (and capped) in a middle cell, which then
  // scales its estimate instead of the smallest cell.
  const auto auto_took_anywhere = [&](const std::vector<std::string>& key) {
    for (const auto& [cell, pair] : autos)
      if (cell[0] == key[0] && pair.first == key[3]) return true;
    return false;
  };
  size_t skipped = 0;
  for (const auto& [key, f] : rows) {
    if (f[11] != "0") continue;
    ++skipped;
    EXPECT_EQ(f[14], "1") << "a skipped candidate is flagged capped";
    EXPECT_FALSE(key[1] == "300" && key[2] == "20") << "the smallest cell has no smaller neighbour";
  }
  EXPECT_GT(skipped, 0u);
  for (const auto& [key, small] : rows) {  // every distance-round pair capped in the smallest cell, in every other
    if (key[1] != "300" || key[2] != "20" || small[14] != "1" || key[4] != "auto") continue;
    for (const auto& [n, q] : larger) {
      const std::vector<std::string>& f = rows.at({key[0], n, q, key[3], key[4]});
      // Cap 0 caps every pair of the smallest cell (Auto's time is the reference from the first one on), so each
      // larger round is all hopeless and calls its forced pair (and Auto's own): checked below.
      if (f[11] != "0" || auto_took_anywhere(key)) continue;
      const double scaled = std::stod(small[10]) * std::stod(n) / 300 * std::stod(q) / 20;
      EXPECT_NEAR(std::stod(f[10]), scaled, 1e-3 * scaled + 1e-5)
          << "the capped time x the work ratio: " << key[0] << " " << key[3] << " at n=" << n << " q=" << q;
    }
  }
  // Every round of a larger cell is all hopeless but its forced pair: the selection round's too, whichever distance
  // won there, since a selection capped behind one distance is hopeless behind any (l1 has one distance; squared_l2's
  // fastest may differ from cell to cell).
  for (const std::string metric : {"l1", "squared_l2"})
    for (const auto& [n, q] : larger)
      for (const bool selection_round : {false, true}) {
        int called = 0, own = 0;
        for (const auto& [key, f] : rows)
          if (key[0] == metric && key[1] == n && key[2] == q && (key[4] != "auto") == selection_round &&
              f[11] != "0") {
            ++called;
            own += autos_own(key);
          }
        EXPECT_GE(called, 1) << metric << " " << n << " " << q << " selection round " << selection_round;
        EXPECT_LE(called - own, 1) << metric << " " << n << " " << q << " selection round " << selection_round
                                   << ": besides Auto's own pair, only the forced one";
      }
  for (const std::string& row : plan_rows(path("table.csv"))) {  // the best pairs were called
    std::stringstream split(row);
    std::vector<std::string> p;
    for (std::string field; std::getline(split, field, ',');) p.push_back(field);
    ASSERT_GE(p.size(), 9u) << row;
    const std::string metric = p[1] == "dot" ? "squared_l2" : p[1];
    EXPECT_NE(rows.at({metric, p[3], p[4], p[7], p[8]})[11], "0") << row;
  }
  const CliRun again = gknn(sweep + "timings.csv --sweep-q 20,40 --resume");  // the runs-0 lines read back
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("cells        0 measured now, 8 from earlier runs"), std::string::npos) << again.out;

  ASSERT_EQ(gknn(sweep + "all.csv --sweep-q 20,40 --sweep-no-prune").code, 0);
  const auto all = sweep_candidates(path("all.csv"));
  EXPECT_EQ(all.size(), rows.size()) << "skipped candidates are recorded too";
  for (const auto& [key, f] : all) EXPECT_NE(f[11], "0") << key[0] << " " << key[1] << " " << key[2] << " " << key[3];

  ASSERT_EQ(gknn(sweep + "lost.csv --sweep-q 20,40 --sweep-hopeless 1e9").code, 0);  // the last value counts
  for (const auto& [key, f] : sweep_candidates(path("lost.csv")))
    EXPECT_NE(f[11], "0") << "no pair lost by 1e9: " << key[0] << " " << key[1] << " " << key[2] << " " << key[3];
}

// A selection capped behind one distance is hopeless behind any (on the H200 `insertion` at k = 1000, capped behind
// shared_reduce at q = 1, ran behind another distance at q = 64 until the command's limit). The resumed CSV's small
// cell says every selection lost behind `fused`, a distance the CPU sweep never takes: in the larger cell the
// selection round (behind the CPU's fastest distance) calls only its forced pair.
TEST_F(Cli, BenchSweepSelectionCappedBehindAnotherDistanceIsHopeless) {
  const std::string sweep =
      "bench --sweep --backend cpu --sweep-n 300 --sweep-d 8 --sweep-k 5 --sweep-metrics squared_l2 "
      "--sweep-data integer --repeat 1 --warmup 0 --sweep-hopeless 0 --csv timings.csv ";
  ASSERT_EQ(gknn(sweep + "--sweep-q 20 --sweep-cap 1e9").code, 0);
  std::vector<std::vector<std::string>> rows = csv_fields(path("timings.csv"));
  int rewritten = 0;
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i][7] == "candidate" && rows[i][9] != "auto") {  // the selection round: lost behind fused
      rows[i][8] = "fused", rows[i][10] = "1000", rows[i][11] = "1", rows[i][14] = "1";
      ++rewritten;
    }
  ASSERT_GE(rewritten, 2);
  {
    std::ofstream out(path("timings.csv"));
    for (const auto& f : rows) {
      for (size_t j = 0; j < f.size(); ++j) out << (j ? "," : "") << f[j];
      out << "\n";
    }
  }
  const CliRun resumed = gknn(sweep + "--sweep-q 20,40 --sweep-cap 1e9 --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  // Called: the round's forced pair, and Auto's own pair (never skipped: Auto's time says it is not hopeless).
  std::string auto_distance, auto_select;
  for (const auto& f : csv_fields(path("timings.csv")))
    if (f.size() == 15 && f[4] == "40" && f[7] == "auto") auto_distance = f[12], auto_select = f[13];
  int called = 0, autos_own = 0, hopeless = 0;
  for (const auto& [key, f] : sweep_candidates(path("timings.csv")))
    if (key[2] == "40" && key[4] != "auto") {
      EXPECT_NE("fused", key[3]) << "the CPU's selection round runs behind one of its own distances";
      (f[11] == "0" ? hopeless : called)++;
      autos_own += f[11] != "0" && key[3] == auto_distance && key[4] == auto_select;
    }
  EXPECT_GE(called, 1);
  EXPECT_LE(called - autos_own, 1) << "besides Auto's own pair, only the forced one";
  EXPECT_EQ(rewritten - called, hopeless);
}

TEST_F(Cli, JoinWritesTheSelfJoinAndReports) {
  if (!gknn::build_info().join_kdtree) GTEST_SKIP() << "this build has no CPU kd-tree (libnanoflann-dev)";
  ASSERT_EQ(gknn("gen --rows 600 --dim 3 --distribution expo --lambda 40 -o pts.npy").code, 0);
  const CliRun r = gknn("join --input pts.npy -k 7 --mode cpu -o ids.npy --distances-out d.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"phases", "share", "re-indexings"}) EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  const gknn::HostMatrix<float> points = gknn::read_npy_float(path("pts.npy"));
  const gknn::HostMatrix<int64_t> ids = gknn::read_npy_int64(path("ids.npy"));
  const gknn::HostMatrix<float> distances = gknn::read_npy_float(path("d.npy"));
  gknn::JoinParams params;
  params.mode = gknn::JoinMode::Cpu;
  const gknn::Result want = gknn::knn_join(points.view(), 7, params);
  EXPECT_EQ(ids.data, want.indices);
  EXPECT_EQ(distances.data, want.distances);
  for (int64_t i = 0; i < ids.rows; ++i) EXPECT_NE(ids.row(i)[0], i);  // never the point itself
}

TEST_F(Cli, JoinErrors) {
  ASSERT_EQ(gknn("gen --rows 5 --dim 2 -o pts.npy").code, 0);
  expect_error("join --input pts.npy -k 5 --mode cpu", 1, "smaller than the number of points");
  expect_error("join --input pts.npy -k 2 --mode fast", 2, "fast");
  expect_error("join --input missing.npy -k 2", 1, "--input");
}

// ---- no partial output -------------------------------------------------------------------------------------

/// Names in the test directory that look like a result or its temporary file ("<name>.tmp-<pid>-<n>").
std::vector<std::string> files_named_like(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) found.push_back(name);
  }
  return found;
}

TEST_F(Cli, FailedWriteLeavesNoPartialFileAndKeepsTheOldOne) {
  // A file-size limit makes every write past 64 blocks fail with EFBIG, like a full disk but in any directory
  // and without root (SIGXFSZ ignored so that write() reports the error instead of killing the process).
  write_bytes("big.fvecs", "previous complete result");
  const CliRun r = gknn("gen --rows 20000 --dim 16 -o big.fvecs", 64);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("gknn: error: cannot write '", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("big.fvecs"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir_ / "big.fvecs"), "previous complete result") << "a failed write must not touch the old file";
  EXPECT_EQ(files_named_like(dir_, "big.fvecs"), std::vector<std::string>{"big.fvecs"}) << "temporary file left";
}

TEST_F(Cli, FailedWriteOfANewFileLeavesNothing) {
  write_raw_fvecs("x.fvecs", rows_of(300, 8, 1.f));
  ASSERT_EQ(gknn("search --base x.fvecs --query x.fvecs -k 100 -o ok.ivecs").code, 0);
  const CliRun r = gknn("search --base x.fvecs --query x.fvecs -k 100 -o r.npy", 16);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot write '"), std::string::npos) << r.err;
  EXPECT_TRUE(files_named_like(dir_, "r.npy").empty()) << "partial result or temporary file left behind";
  EXPECT_EQ(gknn::read_ivecs(path("ok.ivecs")).rows, 300) << "without the limit the same search succeeds";
}

TEST_F(Cli, DevFullIsReportedAsAFailedWrite) {
  write_raw_fvecs("x.fvecs", rows_of(50, 4, 1.f));
  // Links give the devices the extensions the CLI requires. A device cannot be replaced by a rename, so the link
  // is followed and the device written in place: /dev/full's ENOSPC must surface, /dev/null must stay a device.
  fs::create_symlink("/dev/full", dir_ / "full.ivecs");
  fs::create_symlink("/dev/full", dir_ / "full.npy");
  fs::create_symlink("/dev/null", dir_ / "null.ivecs");
  expect_error("search --base x.fvecs --query x.fvecs -k 5 -o full.ivecs", 1, "/dev/full");
  expect_error("gen --rows 5000 --dim 8 -o full.npy", 1, "No space left on device");
  const CliRun ok = gknn("search --base x.fvecs --query x.fvecs -k 5 -o null.ivecs");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null") && fs::is_character_file("/dev/full"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "null.ivecs") && fs::is_symlink(dir_ / "full.npy")) << "links must survive";
}

TEST_F(Cli, ReadOnlyDirectoryIsReportedBeforeSearching) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permissions do not stop root from writing";
  write_raw_fvecs("x.fvecs", rows_of(10, 4, 1.f));
  fs::create_directories(dir_ / "ro");
  fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  expect_error("search --base x.fvecs --query x.fvecs -k 5 -o ro/r.ivecs", 1, "ro/r.ivecs");
  expect_error("gen --rows 5 --dim 3 -o ro/g.fvecs", 1, "ro/g.fvecs");
  EXPECT_TRUE(fs::is_empty(dir_ / "ro"));
  fs::permissions(dir_ / "ro", fs::perms::owner_all);
}

/// Starts `gknn <args>` (no shell: a shell's background job would ignore SIGINT), sends `signal` after
/// `delay`, and returns the exit code (-1 if it exited before the signal) and stderr.
CliRun interrupted_run(const fs::path& dir, const std::vector<std::string>& args, int signal,
                       std::chrono::milliseconds delay) {
  std::vector<std::string> argv_text{GKNN_CLI_PATH};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string err_path = (dir / "stderr.txt").string(), out_path = (dir / "stdout.txt").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const fs::path previous = fs::current_path();
  fs::current_path(dir);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  fs::current_path(previous);
  posix_spawn_file_actions_destroy(&actions);
  CliRun r;
  if (spawned != 0) return r;
  std::this_thread::sleep_for(delay);
  int status = 0;
  const bool finished_early = waitpid(pid, &status, WNOHANG) == pid;
  if (!finished_early) {
    kill(pid, signal);
    waitpid(pid, &status, 0);
  }
  r.code = finished_early ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = slurp(dir / "stderr.txt");
  return r;
}

TEST_F(Cli, SignalDuringSearchLeavesNoOutputAndExitsWithAMessage) {
  // A search that takes many seconds on one thread (float64 reference kernel), interrupted after one second.
  const CliRun g = gknn("gen --rows 60000 --dim 64 -o base.fvecs --queries 4000 --queries-out q.fvecs");
  ASSERT_EQ(g.code, 0) << g.err;
  const std::vector<std::string> search = {"search", "--base", "base.fvecs", "--query", "q.fvecs", "-k", "50",
                                           "--backend", "cpu", "--distance", "reference", "--threads", "1",
                                           "-o", "r.ivecs", "--distances-out", "d.fvecs"};
  for (const auto& [signal, name] : {std::pair{SIGINT, "SIGINT"}, std::pair{SIGTERM, "SIGTERM"}}) {
    SCOPED_TRACE(name);
    const CliRun r = interrupted_run(dir_, search, signal, std::chrono::milliseconds(1000));
    ASSERT_NE(r.code, -1) << "the search finished within a second: enlarge the workload of this test";
    EXPECT_EQ(r.code, 128 + signal) << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
    EXPECT_TRUE(files_named_like(dir_, "r.ivecs").empty());
    EXPECT_TRUE(files_named_like(dir_, "d.fvecs").empty());
  }
}

}  // namespace
