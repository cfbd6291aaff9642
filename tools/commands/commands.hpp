// commands.hpp: one function per subcommand; each registers its options on the root app and returns how to run it.
#pragma once

#include <CLI/CLI.hpp>

#include "cli_common.hpp"

namespace gknn::cli {

Command add_search_command(CLI::App& root);
Command add_gen_command(CLI::App& root);
Command add_recall_command(CLI::App& root);
Command add_info_command(CLI::App& root);
Command add_bench_command(CLI::App& root);
Command add_join_command(CLI::App& root);

}  // namespace gknn::cli
