// Where a GPU sits on its host, and which CPUs each process of a host runs its pipeline on, so that every
// rank's threads work next to its own GPU, on cores no other rank uses (issue 41, "every GPU of a host").
//
// The host says which CPUs and which NUMA node are close to a PCI device in sysfs
// (/sys/bus/pci/devices/<bus id>/local_cpulist and numa_node); the CPU lists are read with libnuma. A GPU's
// bus id comes from the CUDA runtime (GpuInfo::pci_bus_id). Where the host does not say (no sysfs, a
// container without it, a VM that shows one node), the locality is unknown and the shares fall back to
// even, contiguous shares of the CPUs this process may use (cpu_share in conveyor/dataset.h).
//
//   const Ranks ranks = ranks_from_environment();
//   const HostCpus mine = cpus_near_gpu(ranks, placement.device);
//   PipelineOptions options;  options.cpus = mine.cpus;   // DeviceFeeder::feed does this by default
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "conveyor/ranks.h"

namespace conveyor {

struct GpuLocality {
  std::string pci_bus_id;  // "0000:3b:00.0", as sysfs names it
  std::vector<int> cpus;   // CPUs the host says are close to the device, ascending; empty: unknown
  int numa_node = -1;      // the device's NUMA node; -1: unknown, or a host that has one
  std::string unknown;     // why cpus is empty (or numa_node -1), for logs
};

// What sysfs says about PCI device `bus_id` (as cudaDeviceGetPCIBusId writes it, any case; a domain of
// eight digits is cut to sysfs's four) under `pci_devices` (the real one: /sys/bus/pci/devices). Never
// throws for a missing or unreadable file: the fields stay unknown and `unknown` says why.
GpuLocality pci_locality(const std::filesystem::path& pci_devices, const std::string& bus_id);

// The locality of GPU `device` (the CUDA runtime's index) on this host; unknown without CUDA or the GPU.
GpuLocality gpu_locality(int device);

// The CPUs a pipeline runs on, and why those.
struct HostCpus {
  std::vector<int> cpus;  // ascending; never empty when `allowed` was not
  std::string reason;
};

// The CPUs of local rank `local_rank` among the host's ranks, whose GPUs are close to `near_gpu[r]` each
// (an empty list: unknown): the rank's share of the CPUs close to its GPU that it may use (`allowed`),
// split evenly and contiguously among the ranks whose GPUs are close to the same CPUs, in rank order. When
// its GPU's CPUs are unknown, not among `allowed`, or fewer than the ranks sharing them: the local_rank-th
// of near_gpu.size() even shares of `allowed`. Throws InvalidArgument unless 0 <= local_rank <
// near_gpu.size().
HostCpus share_near_gpus(std::span<const int> allowed, std::span<const std::vector<int>> near_gpu,
                         int local_rank);

// This process's CPUs as local rank ranks.local_rank of ranks.local_world_size, driving GPU `device`: every
// local rank's GPU read from sysfs when this process sees one GPU per local rank (local rank r drives
// GPU r, as scripts/launch.sh and torchrun's examples set it), else an even share; the CPUs it may use now
// (its affinity) when it is the only process on the host.
HostCpus cpus_near_gpu(const Ranks& ranks, int device);

}  // namespace conveyor
