#include "conveyor/cuda/host_locality.h"

#include <numa.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "conveyor/error.h"
#include "src/device/gpu_query.h"
#include "src/pipeline/worker_affinity.h"

namespace conveyor {
namespace {

struct BitmaskFree {
  void operator()(bitmask* mask) const noexcept { numa_bitmask_free(mask); }
};

// The first line of a small sysfs file; empty when it cannot be read.
std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

// sysfs's name of a device: lower case, a four-digit domain ("00000000:3B:00.0" -> "0000:3b:00.0").
std::string sysfs_name(std::string bus_id) {
  std::transform(bus_id.begin(), bus_id.end(), bus_id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::size_t colon = bus_id.find(':');
  if (colon == 8 && bus_id.compare(0, 4, "0000") == 0) bus_id.erase(0, 4);
  return bus_id;
}

}  // namespace

GpuLocality pci_locality(const std::filesystem::path& pci_devices, const std::string& bus_id) {
  GpuLocality out;
  out.pci_bus_id = sysfs_name(bus_id);
  if (out.pci_bus_id.empty()) {
    out.unknown = "no PCI bus id";
    return out;
  }
  const std::filesystem::path device = pci_devices / out.pci_bus_id;
  const std::string node = first_line(device / "numa_node");
  if (!node.empty()) {
    try {
      out.numa_node = std::max(-1, std::stoi(node));
    } catch (const std::exception&) {
      out.numa_node = -1;
    }
  }
  const std::string list = first_line(device / "local_cpulist");
  if (list.empty()) {
    out.unknown = "no " + (device / "local_cpulist").string();
    return out;
  }
  // libnuma parses the kernel's CPU list format ("0-15,32-47"); it must not be used where it says NUMA is
  // unavailable (a container that forbids its system calls): the locality is then unknown.
  if (numa_available() < 0) {
    out.unknown = "libnuma: NUMA is not available to this process";
    return out;
  }
  const std::unique_ptr<bitmask, BitmaskFree> mask(numa_parse_cpustring_all(list.c_str()));
  if (!mask) {
    out.unknown = "libnuma cannot read the CPU list '" + list + "'";
    return out;
  }
  const int possible = numa_num_possible_cpus();
  for (int cpu = 0; cpu < possible; ++cpu)
    if (numa_bitmask_isbitset(mask.get(), static_cast<unsigned>(cpu))) out.cpus.push_back(cpu);
  if (out.cpus.empty()) out.unknown = "an empty CPU list '" + list + "'";
  return out;
}

GpuLocality gpu_locality(int device) {
  const detail::GpuCensus census = detail::take_gpu_census(false);
  for (const GpuInfo& gpu : census.gpus)
    if (gpu.index == device) return pci_locality("/sys/bus/pci/devices", gpu.pci_bus_id);
  GpuLocality out;
  out.unknown = census.gpus.empty() ? "no GPU: " + census.unavailable_reason
                                    : "no gpu:" + std::to_string(device) + " among " +
                                          std::to_string(census.gpus.size()) + " visible";
  return out;
}

HostCpus share_near_gpus(std::span<const int> allowed, std::span<const std::vector<int>> near_gpu,
                         int local_rank) {
  const int ranks = static_cast<int>(near_gpu.size());
  if (local_rank < 0 || local_rank >= ranks)
    throw InvalidArgument("share_near_gpus: local rank " + std::to_string(local_rank) + " of " +
                          std::to_string(ranks));
  std::vector<int> mine_allowed(allowed.begin(), allowed.end());
  std::sort(mine_allowed.begin(), mine_allowed.end());
  const auto even = [&](std::string why) {
    return HostCpus{detail::share_of_cpus(mine_allowed, local_rank, ranks),
                    "share " + std::to_string(local_rank) + " of " + std::to_string(ranks) +
                        " of the CPUs this process may use (" + why + ")"};
  };
  const std::vector<int>& own = near_gpu[static_cast<std::size_t>(local_rank)];
  if (own.empty()) return even("its GPU's CPUs are unknown");
  std::vector<int> near;
  std::vector<int> sorted_own = own;
  std::sort(sorted_own.begin(), sorted_own.end());
  std::set_intersection(sorted_own.begin(), sorted_own.end(), mine_allowed.begin(), mine_allowed.end(),
                        std::back_inserter(near));
  // The ranks whose GPUs are close to the same CPUs share them, in rank order.
  int position = 0, sharing = 0;
  for (int r = 0; r < ranks; ++r) {
    std::vector<int> other = near_gpu[static_cast<std::size_t>(r)];
    std::sort(other.begin(), other.end());
    if (other != sorted_own) continue;
    if (r == local_rank) position = sharing;
    ++sharing;
  }
  if (static_cast<int>(near.size()) < sharing)
    return even(near.empty() ? "none of its GPU's CPUs is among them"
                             : "fewer of its GPU's CPUs than ranks sharing them");
  return {detail::share_of_cpus(near, position, sharing),
          "share " + std::to_string(position) + " of " + std::to_string(sharing) + " of the " +
              std::to_string(near.size()) + " CPUs close to its GPU that this process may use (" +
              std::to_string(ranks) + " ranks on the host)"};
}

HostCpus cpus_near_gpu(const Ranks& ranks, int device) {
  const std::vector<int> allowed = detail::this_threads_cpus();
  if (ranks.local_world_size <= 1)
    return {allowed, "the only process on this host: every CPU it may use"};
  const int visible = static_cast<int>(detail::take_gpu_census(false).gpus.size());
  std::vector<std::vector<int>> near(static_cast<std::size_t>(ranks.local_world_size));
  std::string unknown;
  if (visible >= ranks.local_world_size) {
    for (int r = 0; r < ranks.local_world_size; ++r) {
      const GpuLocality locality = gpu_locality(r == ranks.local_rank ? device : r);
      near[static_cast<std::size_t>(r)] = locality.cpus;
      if (r == ranks.local_rank && locality.cpus.empty()) unknown = locality.unknown;
    }
  } else {
    unknown = std::to_string(visible) + " GPU(s) visible to this process for " +
              std::to_string(ranks.local_world_size) + " local ranks: the others' GPUs are unknown";
    near.assign(near.size(), {});
  }
  HostCpus out = share_near_gpus(allowed, near, ranks.local_rank);
  if (!unknown.empty()) out.reason += "; " + unknown;
  return out;
}

}  // namespace conveyor
