// A time limit as the errors of the collectives name it ("3 s", "0.5 s").
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace conveyor::train {

inline std::string timeout_text(std::chrono::milliseconds limit) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", std::chrono::duration<double>(limit).count());
  return text;
}

}  // namespace conveyor::train
