// Resident memory of this process, and whether a sanitizer runs (they keep freed memory in quarantine and
// shadow, so resident memory says nothing about leaks there; LeakSanitizer checks those builds instead).
#pragma once

#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstddef>
#include <cstdio>
#include <memory>

namespace conveyor::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// Resident set size in bytes, from /proc/self/statm (its second field, in pages); 0 when unreadable.
// First hands the allocator's free memory back to the system (glibc keeps it in per-thread arenas, more
// of them when threads contend, so without this the figure follows the machine's load, not the program).
inline std::size_t resident_bytes() {
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen("/proc/self/statm", "r"),
                                                             std::fclose);
  if (!file) return 0;
  unsigned long size = 0, resident = 0;
  const int fields = std::fscanf(file.get(), "%lu %lu", &size, &resident);
  return fields == 2 ? static_cast<std::size_t>(resident) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))
                     : 0;
}

// The process's peak resident set size so far (VmHWM in /proc/self/status), in bytes; 0 when unreadable.
inline std::size_t peak_resident_bytes() {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen("/proc/self/status", "r"),
                                                             std::fclose);
  if (!file) return 0;
  char line[256];
  while (std::fgets(line, sizeof line, file.get())) {
    unsigned long kilobytes = 0;
    if (std::sscanf(line, "VmHWM: %lu kB", &kilobytes) == 1)
      return static_cast<std::size_t>(kilobytes) * 1024;
  }
  return 0;
}

// Starts the peak over from the current resident size (Linux 4.0+: "5" into /proc/self/clear_refs).
// False when the kernel does not allow it.
inline bool reset_peak_resident_bytes() {
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen("/proc/self/clear_refs", "w"),
                                                             std::fclose);
  return file && std::fputs("5", file.get()) >= 0 && std::fflush(file.get()) == 0;
}

}  // namespace conveyor::testing
