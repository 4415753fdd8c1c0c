#include "src/pipeline/worker_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <set>
#include <string>

#include "conveyor/dataset.h"
#include "conveyor/error.h"

namespace conveyor::detail {

void check_cpus(std::span<const int> cpus, std::string_view what) {
  std::set<int> seen;
  for (const int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE)
      throw InvalidArgument(std::string(what) + ": CPU " + std::to_string(cpu) + " is outside 0-" +
                            std::to_string(CPU_SETSIZE - 1));
    if (!seen.insert(cpu).second)
      throw InvalidArgument(std::string(what) + ": CPU " + std::to_string(cpu) + " is given twice");
  }
}

void pin_this_thread(std::span<const int> cpus) noexcept {
  // The set this thread last asked for (empty: none, it runs where it ran before any), and the affinity it
  // had before the first one, which an empty set gives back: a oneTBB worker pinned for one pipeline may
  // later work for a pipeline that asked for no CPUs.
  thread_local std::vector<int> applied;
  thread_local cpu_set_t original;
  if (std::equal(cpus.begin(), cpus.end(), applied.begin(), applied.end())) return;
  if (applied.empty() && pthread_getaffinity_np(pthread_self(), sizeof original, &original) != 0) return;
  cpu_set_t set;
  if (cpus.empty()) {
    set = original;
  } else {
    CPU_ZERO(&set);
    for (const int cpu : cpus)
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  // Remembered even when refused: asking again before every stage would not change the answer.
  try {
    applied.assign(cpus.begin(), cpus.end());
  } catch (...) {
    return;
  }
  static_cast<void>(pthread_setaffinity_np(pthread_self(), sizeof set, &set));
}

std::vector<int> this_threads_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

std::vector<int> share_of_cpus(std::span<const int> cpus, int part, int parts) {
  if (parts < 1 || part < 0 || part >= parts)
    throw InvalidArgument("share_of_cpus: part " + std::to_string(part) + " of " + std::to_string(parts));
  const std::size_t n = cpus.size();
  const auto k = static_cast<std::size_t>(parts);
  const auto p = static_cast<std::size_t>(part);
  if (n == 0) return {};
  if (n < k) return {cpus[p % n]};  // fewer CPUs than parts: one each, shared in turn
  // Shares differ by one CPU at most; the first n % k get the extra one.
  const std::size_t begin = p * (n / k) + std::min(p, n % k);
  const std::size_t size = n / k + (p < n % k ? 1 : 0);
  return {cpus.begin() + static_cast<std::ptrdiff_t>(begin),
          cpus.begin() + static_cast<std::ptrdiff_t>(begin + size)};
}

}  // namespace conveyor::detail

namespace conveyor {

std::vector<int> cpu_share(int part, int parts) {
  const std::vector<int> cpus = detail::this_threads_cpus();
  return detail::share_of_cpus(cpus, part, parts);
}

}  // namespace conveyor
