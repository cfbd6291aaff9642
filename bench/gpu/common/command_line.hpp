// command_line.hpp: the command line and top-level error handling the GPU selection benchmarks share.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace gknn::bench {

/// Options every selection benchmark takes: --quick --reps N --warmup N --device D --csv FILE --md FILE.
struct CommonArgs {
  bool quick = false;
  int reps = 5;
  int warmup = 1;
  int device = 0;
  std::string csv;
  std::string md;
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
  const char* program_;
  const char* usage_;
};

}  // namespace gknn::bench
