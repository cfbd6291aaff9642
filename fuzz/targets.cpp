#include "targets.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_common.hpp"
#include "commands/commands.hpp"
#include "gknn/error.hpp"
#include "gknn/io.hpp"
#include "search_setup.hpp"

namespace gknn::fuzz {
namespace {

/// The directory lives as long as the process: libFuzzer runs millions of inputs in one process.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gknn-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("gknn fuzz: mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Writes the input to "<temp dir>/input<extension>"; aborts when it cannot (nothing would be tested).
std::string write_input(const uint8_t* data, size_t size, const std::string& extension) {
  static const TempDir dir;
  std::string path = dir.path() + "/input" + extension;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror("gknn fuzz: cannot write the input file");
    std::abort();
  }
  return path;
}

template <class T>
void check_shape(const HostMatrix<T>& m) {
  if (m.rows < 0 || m.cols < 0 || m.data.size() != static_cast<size_t>(m.rows) * static_cast<size_t>(m.cols)) {
    std::fprintf(stderr, "gknn fuzz: reader returned %lld x %lld with %zu values\n", static_cast<long long>(m.rows),
                 static_cast<long long>(m.cols), m.data.size());
    std::abort();
  }
}

/// Runs `body`, accepting success, gknn::Error and CLI11's usage errors only.
template <class Body>
void expect_clean(const char* what, Body&& body) {
  try {
    body();
  } catch (const gknn::Error&) {
    // malformed input, reported as the library promises
  } catch (const CLI::Error&) {
    // a usage error (exit code 2 in the tool)
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gknn fuzz: %s threw a non-gknn exception: %s\n", what, e.what());
    std::abort();
  }
}

std::vector<std::string> split_arguments(const uint8_t* data, size_t size) {
  std::vector<std::string> args(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) args.emplace_back();
    else args.back().push_back(static_cast<char>(data[i]));
  }
  return args;
}

/// Parses `args` (program name prepended) with `app`.
void parse(CLI::App& app, std::vector<std::string> args) {
  std::string program = "gknn";
  std::vector<char*> argv{program.data()};
  for (std::string& a : args) argv.push_back(a.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

void run_vecs(const uint8_t* data, size_t size) {
  const std::string fvecs = write_input(data, size, ".fvecs");
  expect_clean("read_fvecs", [&] { check_shape(read_fvecs(fvecs)); });
  expect_clean("read_ivecs", [&] { check_shape(read_ivecs(fvecs)); });
  expect_clean("read_bvecs", [&] { check_shape(read_bvecs(fvecs)); });
  expect_clean("vecs_shape", [&] { vecs_shape(fvecs, 4); });
  expect_clean("vecs_shape", [&] { vecs_shape(fvecs, 1); });
  expect_clean("read_fvecs range", [&] { check_shape(read_fvecs(fvecs, 1, 1)); });
  expect_clean("read_bvecs range", [&] { check_shape(read_bvecs(fvecs, 1)); });
  expect_clean("load_matrix", [&] { check_shape(load_matrix(fvecs)); });
  const std::string bvecs = write_input(data, size, ".bvecs");
  expect_clean("load_matrix", [&] { check_shape(load_matrix(bvecs)); });
  const std::string ivecs = write_input(data, size, ".ivecs");
  expect_clean("load_indices", [&] { check_shape(load_indices(ivecs)); });
}

void run_npy(const uint8_t* data, size_t size) {
  const std::string path = write_input(data, size, ".npy");
  expect_clean("read_npy", [&] {
    const NpyArray a = read_npy(path);
    if (a.rows < 0 || a.cols < 0) std::abort();
  });
  expect_clean("read_npy_float", [&] { check_shape(read_npy_float(path)); });
  expect_clean("read_npy_int64", [&] { check_shape(read_npy_int64(path)); });
  expect_clean("load_matrix", [&] { check_shape(load_matrix(path)); });
  expect_clean("load_indices", [&] { check_shape(load_indices(path)); });
}

void run_hdf5(const uint8_t* data, size_t size) {
  const std::string path = write_input(data, size, ".hdf5");
  expect_clean("read_ann_hdf5", [&] {
    const AnnDataset d = read_ann_hdf5(path);
    check_shape(d.train);
    check_shape(d.test);
    check_shape(d.neighbors);
    check_shape(d.distances);
  });
  expect_clean("load_matrix", [&] { check_shape(load_matrix(path + ":test")); });
  expect_clean("load_indices", [&] { check_shape(load_indices(path)); });
}

void run_cli(const uint8_t* data, size_t size) {
  const std::vector<std::string> args = split_arguments(data, size);
  expect_clean("parse_bytes", [&] {
    if (cli::parse_bytes(args.front()) >= (size_t{1} << 62)) std::abort();  // the documented range
  });
  expect_clean("the gknn app", [&] {
    CLI::App app("gknn", "gknn");
    app.require_subcommand(1);
    // Every subcommand registered as in gknn_main.cpp; parsed only, never run. The Commands own the variables
    // the options write into, so they must outlive the parse (as in gknn_main.cpp).
    const std::vector<cli::Command> commands = {cli::add_search_command(app), cli::add_gen_command(app),
                                                cli::add_recall_command(app), cli::add_info_command(app),
                                                cli::add_bench_command(app)};
    parse(app, args);
  });
  expect_clean("the search options", [&] {
    CLI::App app("search", "search");
    cli::SearchOptions options;
    options.add_to(app);
    parse(app, args);
    (void)options.params();  // sizes, algorithm names and Tang options to SearchParams
  });
}

}  // namespace gknn::fuzz
