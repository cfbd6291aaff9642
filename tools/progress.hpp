// progress.hpp: a one-line progress bar on stderr for long searches; silent unless stderr is a terminal, so that
// logs and pipes never receive carriage-return noise.
#pragma once

#include <mutex>
#include <string>

#include "gknn/types.hpp"

namespace gknn::cli {

class ProgressBar {
 public:
  /// Draws only when `enabled` and stderr is a terminal.
  explicit ProgressBar(std::string label, bool enabled = true);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// A callback for SearchParams::progress; safe to call from several threads. Valid while this bar lives.
  ProgressCallback callback();
  void update(double fraction);
  /// Erases the bar (idempotent).
  void finish();

  static bool stderr_is_terminal();

 private:
  std::mutex mutex_;
  std::string label_;
  bool enabled_;
  int shown_permille_ = -1;
  bool drawn_ = false;
};

}  // namespace gknn::cli
