#include "src/service/client/received_memory.h"

#include <cstdlib>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace conveyor::service::detail {
namespace {

constexpr int kMmapThreshold = 32 << 20;  // glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit hosts)
constexpr int kTrimThreshold = 1 << 30;

bool user_set_thresholds() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr) {
    const std::string_view t(tunables);
    if (t.find("glibc.malloc.mmap_threshold") != std::string_view::npos ||
        t.find("glibc.malloc.trim_threshold") != std::string_view::npos)
      return true;
  }
  return std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr || std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr;
}

std::string apply() {
#if defined(__GLIBC__)
  if (user_set_thresholds())
    return "received memory: glibc's malloc thresholds as this process's environment sets them";
  if (mallopt(M_MMAP_THRESHOLD, kMmapThreshold) != 1 || mallopt(M_TRIM_THRESHOLD, kTrimThreshold) != 1)
    return "received memory: glibc refused fixed malloc thresholds; its defaults stand";
  return "received memory: kept for the next reads (glibc's mmap threshold 32 MB, trim threshold 1 GB)";
#else
  return "received memory: the C library's own malloc (not glibc: no thresholds set)";
#endif
}

}  // namespace

std::string keep_received_memory() {
  // Once: every stream of every trainer in the process shares one heap.
  static const std::string note = apply();
  return note;
}

}  // namespace conveyor::service::detail
