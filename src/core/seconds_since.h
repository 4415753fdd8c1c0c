// Seconds from a steady-clock moment to now, for the timings that stats and notes report.
#pragma once

#include <chrono>

namespace conveyor::detail {

inline double seconds_since(std::chrono::steady_clock::time_point start) noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace conveyor::detail
