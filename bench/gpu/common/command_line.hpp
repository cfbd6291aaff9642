// command_line.hpp: the command line and top-level error handling the GPU selection benchmarks share.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gknn::bench {

/// Options every selection benchmark takes: --quick --reps N --warmup N --device D --csv FILE --md FILE, and to
/// aim at one measurement (a profiler run, a quick check): --shape QxN (repeatable), --k LIST, --filter TEXT.
struct CommonArgs {
  bool quick = false;
  int reps = 5;
  int warmup = 1;
  int device = 0;
  std::string csv;
  std::string md;
  std::vector<std::pair<int64_t, int64_t>> shapes;  ///< empty: the benchmark's own
  std::vector<int64_t> ks;                          ///< empty: the benchmark's own
  std::string filter;                               ///< only variants whose name contains it

  bool wanted(const std::string& variant_name) const {
    return filter.empty() || variant_name.find(filter) != std::string::npos;
  }
};

class CommandLine {
 public:
  /// usage: the options after the program name, e.g. "[--quick] [--reps N]".
  CommandLine(const char* program, const char* usage) : program_(program), usage_(usage) {}

  [[noreturn]] void fail(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program_, why.c_str(), program_, usage_);
    std::exit(2);
  }

  /// Fills `common`; any other option goes to extra(name, value), where value() consumes and returns the option's
  /// argument. extra returns false for an option it does not know, which ends the program with the usage.
  template <class Extra>
  void parse(int argc, char** argv, CommonArgs& common, Extra&& extra) const {
    for (int i = 1; i < argc; ++i) {
      const std::string s = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) fail("missing value after " + s);
        return argv[++i];
      };
      if (s == "--quick") common.quick = true;
      else if (s == "--reps") common.reps = std::max(1, std::atoi(value().c_str()));
      else if (s == "--warmup") common.warmup = std::max(0, std::atoi(value().c_str()));
      else if (s == "--device") common.device = std::atoi(value().c_str());
      else if (s == "--csv") common.csv = value();
      else if (s == "--md") common.md = value();
      else if (s == "--shape") common.shapes.push_back(parse_shape(value()));
      else if (s == "--k") common.ks = parse_list(value());
      else if (s == "--filter") common.filter = value();
      else if (!extra(s, value)) fail("unknown argument " + s);
    }
  }

  /// The body of main(): an exception is reported as "program: message" with exit code 1.
  template <class Run>
  int guarded(Run&& run) const {
    try {
      return run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", program_, e.what());
      return 1;
    }
  }

 private:
  std::pair<int64_t, int64_t> parse_shape(const std::string& v) const {
    const size_t x = v.find('x');
    const long long q = x == std::string::npos ? 0 : std::atoll(v.substr(0, x).c_str());
    const long long n = x == std::string::npos ? 0 : std::atoll(v.substr(x + 1).c_str());
    if (q < 1 || n < 1) fail("--shape wants QxN with positive integers, got '" + v + "'");
    return {q, n};
  }
  std::vector<int64_t> parse_list(const std::string& v) const {
    std::vector<int64_t> out;
    for (size_t at = 0; at <= v.size();) {
      const size_t comma = std::min(v.find(',', at), v.size());
      const long long x = std::atoll(v.substr(at, comma - at).c_str());
      if (x < 1) fail("--k wants a comma-separated list of positive integers, got '" + v + "'");
      out.push_back(x);
      at = comma + 1;
    }
    return out;
  }

  const char* program_;
  const char* usage_;
};

}  // namespace gknn::bench
