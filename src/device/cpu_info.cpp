#include <sched.h>

#include <fstream>
#include <string>
#include <thread>

#include "conveyor/cuda/device.h"

namespace conveyor {

CpuInfo cpu_info() {
  CpuInfo info;
  info.logical_cores = std::thread::hardware_concurrency();
  // The affinity mask is what a container or taskset really grants; thread counts should follow it.
  cpu_set_t set;
  CPU_ZERO(&set);
  info.usable_cores = sched_getaffinity(0, sizeof set, &set) == 0 ? static_cast<unsigned>(CPU_COUNT(&set))
                                                                  : info.logical_cores;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    const auto value = colon == std::string::npos ? colon : line.find_first_not_of(" \t", colon + 1);
    if (value != std::string::npos) info.model = line.substr(value);
    break;
  }
  if (info.model.empty()) info.model = "unknown";
  return info;
}

}  // namespace conveyor
