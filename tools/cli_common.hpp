// cli_common.hpp: helpers shared by the gknn subcommands (option validation, sizes, output paths, timing).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gknn/error.hpp"

namespace gknn::cli {

/// A subcommand: its CLI11 node and what to run when the user chose it (returns the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// A CLI11 validator that accepts exactly what `parse` accepts; parse errors (gknn::Error naming the accepted
/// values) become usage errors, so a typo in a name exits with 2 before any file is read.
CLI::Validator name_check(std::function<void(const std::string&)> parse, const std::string& what);

/// Numbers > 0 (positive) or >= 0, with a short message (CLI11's own ranges print DBL_MAX in full).
CLI::Validator positive();
CLI::Validator non_negative();

/// "4096", "512K", "512M", "2G", "1.5GiB" -> bytes (binary multiples). Throws gknn::Error quoting the text.
size_t parse_bytes(const std::string& text);

/// Runs `load` and prefixes any gknn::Error with the option it came from ("--base: cannot open 'x.fvecs'").
template <class Load>
auto with_option(const std::string& option, Load&& load) -> decltype(load()) {
  try {
    return load();
  } catch (const gknn::Error& e) {
    throw gknn::Error(e.code(), option + ": " + e.what());
  }
}

/// Fails (gknn::Error Io naming `option` and `path`) unless `path` can be written: run before long work so that a
/// typo in an output directory does not cost a whole search. Leaves an existing file untouched.
void ensure_writable(const std::string& path, const std::string& option);

/// Checks the outputs of a neighbour search before any long work: indices (-o) end in .ivecs or .npy, distances
/// (--distances-out) in .fvecs or .npy, both writable; an empty path is not written and not checked.
void check_neighbour_outputs(const std::string& indices_out, const std::string& distances_out);

/// Lower-case extension of a path without the dot ("" when none), ignoring an HDF5 ":dataset" suffix.
std::string extension_of(const std::string& path);

/// Wall-clock seconds since construction.
class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_ = Clock::now();
};

double median(std::vector<double> values);

/// The words the tool was started with (main records them; empty where the options are parsed without main, as in
/// the fuzz harness), so that a command stopped on purpose can print the exact command that goes on.
void remember_command_line(int argc, const char* const* argv);
const std::vector<std::string>& command_line();
/// `words` as one line a POSIX shell reads back as the same words (single quotes where a word needs them).
std::string shell_line(const std::vector<std::string>& words);

}  // namespace gknn::cli
