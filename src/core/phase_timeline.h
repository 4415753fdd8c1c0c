// Where a set-up's seconds went, phase by phase, as one line for stats and notes:
// "context 0.110 s, streams 0.001 s, ...". The feeder's device set-up, its GPU decoder's startup and each
// nvJPEG decoder's construction report their phases this way.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace conveyor::detail {

class PhaseTimeline {
 public:
  using Clock = std::chrono::steady_clock;

  PhaseTimeline() : start_(Clock::now()), phase_began_(start_) {}

  // Ends the phase that began at the previous call (or at construction), naming it.
  void done(const char* name) {
    const Clock::time_point now = Clock::now();
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.3f s", line_.empty() ? "" : ", ", name,
                  std::chrono::duration<double>(now - phase_began_).count());
    line_ += part;
    phase_began_ = now;
  }
  // Ends it with the sub-phases of its own in brackets: "decoder 0.700 s (hardware handle 0.500 s, ...)".
  void done(const char* name, const std::string& inside) {
    done(name);
    if (!inside.empty()) line_ += " (" + inside + ")";
  }

  const std::string& line() const noexcept { return line_; }
  double seconds() const noexcept { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  Clock::time_point start_;
  Clock::time_point phase_began_;
  std::string line_;
};

}  // namespace conveyor::detail
