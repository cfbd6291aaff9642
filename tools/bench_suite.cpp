// bench_suite.cpp: see bench_suite.hpp.
#include "bench_suite.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gknn/error.hpp"

namespace gknn::cli {
namespace fs = std::filesystem;

void SuiteOptions::add_to(CLI::App& app, CLI::Option* sweep) {
  CLI::Option* suite = app.add_flag("--suite", enabled,
                                    "run issue 13's benchmark suite (bench/suite/run.sh of the source tree, with this "
                                    "build): the grid's sweep, the torch peer, CSV + Markdown + heat maps in "
                                    "--suite-dir; resumable slices of --suite-budget seconds");
  suite->excludes(sweep);
  app.add_flag("--suite-quick", quick, "with --suite: a subset of the grid (run.sh --quick)")->needs(suite);
  app.add_flag("--suite-recheck-auto", recheck_auto,
               "with --suite: time Auto again beside each measured cell's best pair (run.sh --recheck-auto)")
      ->needs(suite);
  app.add_option("--suite-budget", budget, "with --suite: seconds this call may take, or none (the whole grid)")
      ->check([](const std::string& v) {
        return v == "none" || (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos)
                   ? std::string()
                   : std::string("whole seconds or none");
      })
      ->needs(suite)
      ->capture_default_str();
  app.add_option("--suite-dir", dir, "with --suite: the suite's files (resumed from there)")
      ->needs(suite)
      ->capture_default_str();
}

namespace {

/// The build directory this executable belongs to (BUILD/tools/gknn), as run.sh expects it.
fs::path build_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  GKNN_EXPECT(!ec, ErrorCode::InvalidArgument, "bench --suite: cannot locate this executable (", ec.message(), ")");
  return self.parent_path().parent_path();
}

}  // namespace

int run_suite(const SuiteOptions& suite, const std::string& backend) {
  const fs::path script = fs::path(GKNN_SOURCE_DIR) / "bench" / "suite" / "run.sh";
  GKNN_EXPECT(fs::is_regular_file(script), ErrorCode::InvalidArgument, "bench --suite: ", script.string(),
              " not found: --suite runs the source tree's suite script, which this gknn was built from");
  const fs::path build = build_dir();
  GKNN_EXPECT(fs::is_regular_file(build / "tools" / "gknn"), ErrorCode::InvalidArgument, "bench --suite: ",
              (build / "tools" / "gknn").string(), " not found: run the gknn of a build tree");
  // run.sh works from the source root: the suite's directory is made absolute against the caller's.
  const fs::path out = fs::absolute(suite.dir);
  std::vector<std::string> args{"bash", script.string()};
  if (suite.quick) args.push_back("--quick");
  if (suite.recheck_auto) args.push_back("--recheck-auto");
  args.insert(args.end(), {"--budget", suite.budget, build.string(), out.string()});
  if (backend == "cpu") ::setenv("SUITE_BACKEND", "cpu", 1);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp("bash", argv.data());
  GKNN_EXPECT(false, ErrorCode::InvalidArgument, "bench --suite: cannot run bash (", std::strerror(errno), ")");
  return 1;
}

}  // namespace gknn::cli
