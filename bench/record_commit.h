// The commit a benchmark's JSON names.
#pragma once

#include <cstdlib>
#include <string>

#ifndef CONVEYOR_GIT_COMMIT
#define CONVEYOR_GIT_COMMIT "unknown"
#endif

namespace conveyor::bench {

// CONVEYOR_COMMIT from the environment when it is set, else the commit CMake was configured at. The GPU
// machine's scripts (bench/gpu/lib.sh) set it from the bundle, which is built at the working tree's
// commit: CMake's record is only refreshed when the build tree is configured again.
inline std::string recorded_commit() {
  const char* given = std::getenv("CONVEYOR_COMMIT");
  return given != nullptr && *given != '\0' ? std::string(given) : std::string(CONVEYOR_GIT_COMMIT);
}

}  // namespace conveyor::bench
