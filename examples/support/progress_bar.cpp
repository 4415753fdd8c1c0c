#include "progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace example_support {

namespace {
constexpr int kWidth = 30;
}

ProgressBar::ProgressBar(std::string label, int total, bool enabled)
    : label_(std::move(label)), total_(std::max(total, 1)), enabled_(enabled) {
  draw();
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::advance() {
  ++done_;
  draw();
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

bool ProgressBar::wanted() { return isatty(STDERR_FILENO) == 1; }

void ProgressBar::draw() const {
  if (!enabled_ || finished_) return;
  const int filled = kWidth * std::min(done_, total_) / total_;
  std::fprintf(stderr, "\r%-22s [%s%s] %d/%d steps", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), done_, total_);
  std::fflush(stderr);
}

}  // namespace example_support
