#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gknn::cli {
namespace {
constexpr int kBarWidth = 30;
}

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled && stderr_is_terminal()) {}

ProgressBar::~ProgressBar() { finish(); }

bool ProgressBar::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

ProgressCallback ProgressBar::callback() {
  return [this](double fraction) { update(fraction); };
}

void ProgressBar::update(double fraction) {
  if (!enabled_ || !std::isfinite(fraction)) return;
  const int permille = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 1000);
  std::lock_guard lock(mutex_);
  // Redraw only on visible change: backends may report thousands of tiles per second.
  if (permille <= shown_permille_) return;
  shown_permille_ = permille;
  const int filled = permille * kBarWidth / 1000;
  std::fprintf(stderr, "\r%s [%.*s%*s] %5.1f%%", label_.c_str(), filled, "##############################",
               kBarWidth - filled, "", permille / 10.0);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  std::lock_guard lock(mutex_);
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  drawn_ = false;
  enabled_ = false;
}

}  // namespace gknn::cli
