// Which CPUs sit next to a GPU, and how the processes of a host share them (conveyor/cuda/host_locality.h).
// Runs without a GPU: sysfs trees written by the test in the kernel's formats, the build machine's own PCI
// devices, and the sharing rule on the layouts of real hosts (one node, two sockets, a cgroup's CPUs).
#include "conveyor/cuda/host_locality.h"

#include <gtest/gtest.h>
#include <numa.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/error.h"
#include "src/pipeline/worker_affinity.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

std::vector<int> range(int first, int last) {
  std::vector<int> out;
  for (int cpu = first; cpu <= last; ++cpu) out.push_back(cpu);
  return out;
}

std::vector<int> join(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A PCI device folder as sysfs has it: numa_node and local_cpulist, one line each.
void write_device(const std::filesystem::path& devices, const std::string& name, const std::string& node,
                  const std::string& cpulist) {
  std::filesystem::create_directories(devices / name);
  std::ofstream(devices / name / "numa_node") << node << "\n";
  std::ofstream(devices / name / "local_cpulist") << cpulist << "\n";
}

#define REQUIRE_LIBNUMA() \
  if (numa_available() < 0) GTEST_SKIP() << "libnuma says NUMA is unavailable to this process"

TEST(GpuLocality, SysfsSaysWhichCpusAndWhichNodeAreCloseToADevice) {
  REQUIRE_LIBNUMA();
  // The kernel lists only CPUs the host has (libnuma refuses others): ranges and single CPUs of those.
  const int cpus = numa_num_configured_cpus();
  const std::string list = cpus >= 8 ? "0-1,4,6-7" : cpus >= 3 ? "0,2" : "0";
  const std::vector<int> expected = cpus >= 8 ? std::vector<int>{0, 1, 4, 6, 7}
                                    : cpus >= 3 ? std::vector<int>{0, 2}
                                                : std::vector<int>{0};
  const testing::TempDir sys;
  write_device(sys.path(), "0000:3b:00.0", "1", list);
  write_device(sys.path(), "0000:5e:00.0", "0", "0-" + std::to_string(cpus - 1));
  // cudaDeviceGetPCIBusId writes upper case; NVML-style ids have an eight-digit domain.
  for (const std::string id : {"0000:3B:00.0", "00000000:3b:00.0", "0000:3b:00.0"}) {
    const GpuLocality locality = pci_locality(sys.path(), id);
    EXPECT_EQ(locality.pci_bus_id, "0000:3b:00.0") << id;
    EXPECT_EQ(locality.cpus, expected) << id << ": " << locality.unknown;
    EXPECT_EQ(locality.numa_node, 1) << id;
  }
  EXPECT_EQ(pci_locality(sys.path(), "0000:5e:00.0").cpus, range(0, cpus - 1));
}

TEST(GpuLocality, AHostThatDoesNotSayLeavesTheLocalityUnknownWithoutThrowing) {
  const testing::TempDir sys;
  const GpuLocality missing = pci_locality(sys.path(), "0000:17:00.0");
  EXPECT_TRUE(missing.cpus.empty());
  EXPECT_EQ(missing.numa_node, -1);
  EXPECT_NE(missing.unknown.find("local_cpulist"), std::string::npos) << missing.unknown;
  // A VM that shows no node writes -1.
  write_device(sys.path(), "0000:17:00.0", "-1", "0-3");
  EXPECT_EQ(pci_locality(sys.path(), "0000:17:00.0").numa_node, -1);
  EXPECT_FALSE(pci_locality(sys.path(), "").unknown.empty());
}

TEST(GpuLocality, TheBuildMachinesOwnPciDevicesReadAsCpusItHas) {
  REQUIRE_LIBNUMA();
  const std::filesystem::path devices = "/sys/bus/pci/devices";
  if (!std::filesystem::is_directory(devices)) GTEST_SKIP() << "no " << devices;
  const int possible = numa_num_possible_cpus();
  int read = 0;
  for (const auto& entry : std::filesystem::directory_iterator(devices)) {
    const GpuLocality locality = pci_locality(devices, entry.path().filename().string());
    if (locality.cpus.empty()) continue;
    ++read;
    EXPECT_TRUE(std::is_sorted(locality.cpus.begin(), locality.cpus.end()));
    EXPECT_GE(locality.cpus.front(), 0);
    EXPECT_LT(locality.cpus.back(), possible) << entry.path();
    EXPECT_GE(locality.numa_node, -1);
  }
  if (read == 0) GTEST_SKIP() << "no PCI device here says which CPUs are close to it";
}

// ---- sharing the CPUs among the host's ranks ----

TEST(ShareNearGpus, OnTwoSocketsEachRankGetsItsShareOfItsGpusSocket) {
  // Four GPUs, two per socket of 16 CPUs: ranks 0 and 1 split 0-15, ranks 2 and 3 split 16-31.
  const std::vector<int> allowed = range(0, 31);
  const std::vector<std::vector<int>> near = {range(0, 15), range(0, 15), range(16, 31), range(16, 31)};
  EXPECT_EQ(share_near_gpus(allowed, near, 0).cpus, range(0, 7));
  EXPECT_EQ(share_near_gpus(allowed, near, 1).cpus, range(8, 15));
  EXPECT_EQ(share_near_gpus(allowed, near, 2).cpus, range(16, 23));
  EXPECT_EQ(share_near_gpus(allowed, near, 3).cpus, range(24, 31));
  EXPECT_NE(share_near_gpus(allowed, near, 3).reason.find("close to its GPU"), std::string::npos);
}

TEST(ShareNearGpus, OnAHostOfOneNodeTheSharesAreTheEvenShares) {
  const std::vector<int> allowed = range(0, 63);
  const std::vector<std::vector<int>> near(4, range(0, 63));
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(share_near_gpus(allowed, near, rank).cpus, detail::share_of_cpus(allowed, rank, 4)) << rank;
}

TEST(ShareNearGpus, OnlyTheCpusTheProcessMayUseAreShared) {
  // A cgroup that grants half of each socket.
  const std::vector<int> allowed = join(range(0, 7), range(16, 23));
  const std::vector<std::vector<int>> near = {range(0, 15), range(0, 15), range(16, 31), range(16, 31)};
  EXPECT_EQ(share_near_gpus(allowed, near, 0).cpus, range(0, 3));
  EXPECT_EQ(share_near_gpus(allowed, near, 1).cpus, range(4, 7));
  EXPECT_EQ(share_near_gpus(allowed, near, 2).cpus, range(16, 19));
  EXPECT_EQ(share_near_gpus(allowed, near, 3).cpus, range(20, 23));
}

TEST(ShareNearGpus, UnevenSocketsGiveEachGpuItsOwnSocketsShare) {
  // Three GPUs on the first socket, one on the second.
  const std::vector<int> allowed = range(0, 31);
  const std::vector<std::vector<int>> near = {range(0, 15), range(0, 15), range(0, 15), range(16, 31)};
  EXPECT_EQ(share_near_gpus(allowed, near, 0).cpus, range(0, 5));
  EXPECT_EQ(share_near_gpus(allowed, near, 1).cpus, range(6, 10));
  EXPECT_EQ(share_near_gpus(allowed, near, 2).cpus, range(11, 15));
  EXPECT_EQ(share_near_gpus(allowed, near, 3).cpus, range(16, 31));
}

TEST(ShareNearGpus, WithoutUsableLocalityTheEvenShareOfTheAllowedCpusIsTaken) {
  const std::vector<int> allowed = range(0, 15);
  // Unknown for the rank itself.
  std::vector<std::vector<int>> near = {{}, range(0, 7)};
  HostCpus share = share_near_gpus(allowed, near, 0);
  EXPECT_EQ(share.cpus, range(0, 7));
  EXPECT_NE(share.reason.find("unknown"), std::string::npos) << share.reason;
  // Its GPU's CPUs are none of the process's.
  near = {range(32, 47), range(32, 47)};
  share = share_near_gpus(allowed, near, 1);
  EXPECT_EQ(share.cpus, range(8, 15));
  EXPECT_NE(share.reason.find("none of its GPU's CPUs"), std::string::npos) << share.reason;
  // Fewer of them than ranks sharing them.
  near = {{3}, {3}};
  EXPECT_EQ(share_near_gpus(allowed, near, 1).cpus, range(8, 15));
}

TEST(ShareNearGpus, NoTwoRanksShareACpuAndEveryShareIsAllowed) {
  for (const int cpus : {8, 16, 31, 64}) {
    for (const int ranks : {2, 3, 4, 8}) {
      const std::vector<int> allowed = range(0, cpus - 1);
      // GPUs spread over two sockets in turn: 0, 2, 4, ... on the first.
      std::vector<std::vector<int>> near;
      for (int r = 0; r < ranks; ++r) near.push_back(r % 2 == 0 ? range(0, cpus / 2 - 1) : range(cpus / 2, cpus - 1));
      std::set<int> taken;
      for (int r = 0; r < ranks; ++r) {
        const HostCpus share = share_near_gpus(allowed, near, r);
        ASSERT_FALSE(share.cpus.empty()) << cpus << " CPUs, rank " << r << " of " << ranks;
        for (const int cpu : share.cpus) {
          EXPECT_TRUE(taken.insert(cpu).second) << "CPU " << cpu << " given twice (" << cpus << " CPUs, "
                                                << ranks << " ranks)";
          EXPECT_LT(cpu, cpus);
        }
      }
    }
  }
}

TEST(ShareNearGpus, ALocalRankOutsideTheHostsRanksIsRefused) {
  const std::vector<int> allowed = range(0, 7);
  const std::vector<std::vector<int>> near(2, allowed);
  EXPECT_THROW(share_near_gpus(allowed, near, 2), InvalidArgument);
  EXPECT_THROW(share_near_gpus(allowed, near, -1), InvalidArgument);
}

TEST(CpusNearGpu, TheOnlyProcessOfAHostKeepsEveryCpuItMayUse) {
  const HostCpus mine = cpus_near_gpu(Ranks{}, 0);
  EXPECT_EQ(mine.cpus, detail::this_threads_cpus());
  EXPECT_NE(mine.reason.find("only process"), std::string::npos) << mine.reason;
}

TEST(CpusNearGpu, ARankThatCannotSeeEveryLocalGpuTakesItsEvenShare) {
  // More local ranks than any GPU this process sees (none here, or fewer than 64 on a GPU machine).
  Ranks ranks;
  ranks.rank = ranks.local_rank = 5;
  ranks.world_size = ranks.local_world_size = 64;
  const HostCpus mine = cpus_near_gpu(ranks, 5);
  const std::vector<int> allowed = detail::this_threads_cpus();
  EXPECT_EQ(mine.cpus, detail::share_of_cpus(allowed, 5, 64));
  EXPECT_NE(mine.reason.find("visible to this process"), std::string::npos) << mine.reason;
}

}  // namespace
}  // namespace conveyor
