// fuzz_regressions_test.cpp: the fuzz harnesses' targets over every committed input: the seed corpora and the
// regression inputs (each once a crash, leak, hang or oversized allocation, fixed since). A target aborts on
// anything but success or gknn::Error, so a regression fails this test; the sanitizer build (make sanitize)
// replays them under ASan+UBSan as well.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "targets.hpp"

namespace fs = std::filesystem;

namespace {

using Target = void (*)(const uint8_t*, size_t);

struct Harness {
  const char* name;  ///< folder name under fuzz/corpus and fuzz/regressions
  Target run;
};

const Harness kHarnesses[] = {{"vecs", gknn::fuzz::run_vecs},
                              {"npy", gknn::fuzz::run_npy},
                              {"hdf5", gknn::fuzz::run_hdf5},
                              {"cli", gknn::fuzz::run_cli}};

std::vector<fs::path> inputs_in(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().filename() != "README.md") files.push_back(entry.path());
  return files;
}

/// Replays every file of fuzz/<set>/<harness>/; returns how many.
size_t replay(const Harness& h, const char* set) {
  size_t count = 0;
  for (const fs::path& file : inputs_in(fs::path(GKNN_FUZZ_DIR) / set / h.name)) {
    SCOPED_TRACE(file.string());
    std::ifstream in(file, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const auto start = std::chrono::steady_clock::now();
    h.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    // The fuzzers treat more than 1 s per input as a hang; sanitizer builds get some slack.
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
    ++count;
  }
  return count;
}

TEST(FuzzRegressions, SeedCorporaAreReadCleanly) {
  for (const Harness& h : kHarnesses) {
    SCOPED_TRACE(h.name);
    // Every harness has seeds; a missing folder would make this test pass without testing anything.
    EXPECT_GT(replay(h, "corpus"), 0u) << "fuzz/corpus/" << h.name << " is empty or missing";
  }
}

TEST(FuzzRegressions, RegressionInputsAreReadCleanly) {
  size_t total = 0;
  for (const Harness& h : kHarnesses) {
    SCOPED_TRACE(h.name);
    total += replay(h, "regressions");
  }
  RecordProperty("regression_inputs", static_cast<int>(total));
}

}  // namespace
