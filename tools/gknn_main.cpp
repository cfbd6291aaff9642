// gknn: the command-line tool. Exit codes: 0 success, 1 a gknn error (bad file, bad data, unsupported request),
// 2 a usage error (unknown option, bad option value).
#include <cstdio>
#include <exception>
#include <new>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_common.hpp"
#include "commands/commands.hpp"
#include "gknn/error.hpp"
#include "interrupt.hpp"

namespace {

constexpr int kUsageError = 2;
constexpr int kFailure = 1;

int report(const char* message, int code) {
  std::fprintf(stderr, "gknn: error: %s\n", message);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  gknn::cli::install_interrupt_handlers();  // SIGINT/SIGTERM: no partial output file, exit 128 + signal
  gknn::cli::remember_command_line(argc, argv);
  CLI::App app("gknn: exact k-nearest-neighbour search on GPUs (CUDA) and CPUs", "gknn");
  app.require_subcommand(1);
  const std::vector<gknn::cli::Command> commands = {
      gknn::cli::add_search_command(app), gknn::cli::add_gen_command(app), gknn::cli::add_recall_command(app),
      gknn::cli::add_info_command(app), gknn::cli::add_bench_command(app),
      gknn::cli::add_join_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    report(e.what(), kUsageError);
    std::fprintf(stderr, "Run 'gknn --help' or 'gknn <command> --help' for usage.\n");
    return kUsageError;
  }
  try {
    for (const gknn::cli::Command& command : commands)
      if (command.app->parsed()) return command.run();
    return report("no command given", kUsageError);
  } catch (const gknn::Error& e) {
    return report(e.what(), kFailure);
  } catch (const std::bad_alloc&) {
    return report("out of host memory (try a smaller k, fewer queries per file, or --memory-budget)", kFailure);
  } catch (const std::exception& e) {
    return report(e.what(), kFailure);
  }
}
