#include "src/device/placement.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/cuda/device.h"
#include "conveyor/error.h"
#include "src/device/hardware_queues.h"
#include "tests/support/scoped_environment.h"
#include "tests/support/subprocess.h"

namespace conveyor {
namespace {

std::vector<GpuInfo> two_gpus() {
  return {{0, "Test GPU A", 9, 0, 80ull << 30, 70ull << 30, "0000:01:00.0", 132},
          {1, "Test GPU B", 8, 6, 24ull << 30, 20ull << 30, "0000:02:00.0", 84}};
}

std::string message_of(const std::exception& error) { return error.what(); }

TEST(Placement, AutoWithoutAGpuRunsOnTheCpuAndSaysWhy) {
  const Placement p = detail::resolve_among(DeviceSpec::parse("auto"), {}, "cudaErrorNoDevice: no device");
  EXPECT_FALSE(p.gpu);
  EXPECT_EQ(p.device, -1);
  EXPECT_NE(p.description.find("cpu"), std::string::npos);
  EXPECT_NE(p.reason.find("no CUDA device visible"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("cudaErrorNoDevice"), std::string::npos) << p.reason;
}

TEST(Placement, AutoPicksTheFirstVisibleGpu) {
  const auto gpus = two_gpus();
  const Placement p = detail::resolve_among(DeviceSpec::parse("auto"), gpus, "");
  EXPECT_TRUE(p.gpu);
  EXPECT_EQ(p.device, 0);
  EXPECT_NE(p.description.find("Test GPU A"), std::string::npos) << p.description;
  EXPECT_NE(p.description.find("compute 9.0"), std::string::npos) << p.description;
}

TEST(Placement, CpuIsTheCpuEvenWithGpus) {
  const auto gpus = two_gpus();
  const Placement p = detail::resolve_among(DeviceSpec::parse("cpu"), gpus, "");
  EXPECT_FALSE(p.gpu);
  EXPECT_EQ(p.reason, "requested cpu");
}

TEST(Placement, GpuNPicksThatDevice) {
  const auto gpus = two_gpus();
  const Placement p = detail::resolve_among(DeviceSpec::parse("gpu:1"), gpus, "");
  EXPECT_TRUE(p.gpu);
  EXPECT_EQ(p.device, 1);
  EXPECT_NE(p.description.find("Test GPU B"), std::string::npos);
  EXPECT_NE(p.reason.find("gpu:1"), std::string::npos);
}

TEST(Placement, GpuOutOfRangeListsTheVisibleDevices) {
  const auto gpus = two_gpus();
  try {
    detail::resolve_among(DeviceSpec::parse("gpu:2"), gpus, "");
    FAIL() << "gpu:2 of two GPUs was accepted";
  } catch (const InvalidArgument& error) {
    const std::string message = message_of(error);
    EXPECT_NE(message.find("gpu:2"), std::string::npos) << message;
    EXPECT_NE(message.find("gpu:0 (Test GPU A"), std::string::npos) << message;
    EXPECT_NE(message.find("gpu:1 (Test GPU B"), std::string::npos) << message;
    EXPECT_NE(message.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << message;
  }
}

TEST(Placement, GpuWithoutAnyVisibleDeviceIsADeviceErrorWithTheCause) {
  try {
    detail::resolve_among(DeviceSpec::parse("gpu"), {}, "built without CUDA");
    FAIL() << "gpu without devices was accepted";
  } catch (const DeviceError& error) {
    const std::string message = message_of(error);
    EXPECT_NE(message.find("built without CUDA"), std::string::npos) << message;
    EXPECT_NE(message.find("--device cpu"), std::string::npos) << message;
  }
}

TEST(Placement, DescribePlacementPrintsOneAlignedLinePerStage) {
  const Placement p{true, 0, "gpu:0 (Test GPU A)", "requested gpu:0"};
  const std::vector<StagePlacement> stages = {{"decode + augment", "cpu, 16 threads"},
                                              {"copy", "gpu:0 copy stream"}};
  const std::string report = describe_placement(p, stages);
  EXPECT_NE(report.find("gpu:0 (Test GPU A)"), std::string::npos) << report;
  EXPECT_NE(report.find("requested gpu:0"), std::string::npos) << report;
  EXPECT_NE(report.find("  decode + augment  -> cpu, 16 threads\n"), std::string::npos) << report;
  EXPECT_NE(report.find("  copy              -> gpu:0 copy stream\n"), std::string::npos) << report;
}

// The same rules through the real runtime: which of these run depends on the machine.
TEST(PlacementOnThisMachine, AutoFallsBackToTheCpuWhenNoGpuIsVisible) {
  if (!list_gpus().empty()) GTEST_SKIP() << "a GPU is visible here";
  const Placement p = resolve(DeviceSpec::parse("auto"));
  EXPECT_FALSE(p.gpu);
  EXPECT_NE(p.reason.find("no CUDA device visible: "), std::string::npos) << p.reason;
  EXPECT_FALSE(gpu_unavailable_reason().empty());
}

TEST(PlacementOnThisMachine, AskingForAGpuWithoutOneThrowsDeviceError) {
  if (!list_gpus().empty()) GTEST_SKIP() << "a GPU is visible here";
  EXPECT_THROW(resolve(DeviceSpec::parse("gpu")), DeviceError);
  EXPECT_THROW(resolve(DeviceSpec::parse("gpu:1")), DeviceError);
}

TEST(PlacementOnThisMachine, AutoPicksGpu0WhenOneIsVisible) {
  const auto gpus = list_gpus();
  if (gpus.empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  const Placement p = resolve(DeviceSpec::parse("auto"));
  EXPECT_TRUE(p.gpu);
  EXPECT_EQ(p.device, 0);
  EXPECT_NE(p.description.find(gpus[0].name), std::string::npos);
  EXPECT_THROW(resolve(DeviceSpec{DeviceSpec::Kind::gpu, static_cast<int>(gpus.size())}), InvalidArgument);
}

TEST(PlacementOnThisMachine, ListedGpusDescribeThemselves) {
  const auto gpus = list_gpus();
  if (gpus.empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(gpus[i].index, static_cast<int>(i));
    EXPECT_FALSE(gpus[i].name.empty());
    EXPECT_GT(gpus[i].compute_major, 0);
    EXPECT_GT(gpus[i].total_memory, gpus[i].free_memory);
    EXPECT_GT(gpus[i].free_memory, 0u);
    EXPECT_FALSE(gpus[i].pci_bus_id.empty());
    EXPECT_GT(gpus[i].multiprocessors, 0);
  }
  EXPECT_TRUE(gpu_unavailable_reason().empty());
}

Ranks local_rank(int rank, int of) {
  Ranks ranks;
  ranks.rank = rank;
  ranks.world_size = of;
  ranks.local_rank = rank;
  ranks.local_world_size = of;
  return ranks;
}

TEST(RankGpu, IsTheLocalRanksGpuWhereTheProcessSeesTheHostsGpus) {
  // torchrun's and mpirun's processes each see every GPU of the host.
  const std::vector<GpuInfo> gpus = two_gpus();
  const Placement first = detail::rank_gpu_among(local_rank(0, 2), gpus, "");
  const Placement second = detail::rank_gpu_among(local_rank(1, 2), gpus, "");
  EXPECT_TRUE(first.gpu);
  EXPECT_EQ(first.device, 0);
  EXPECT_EQ(second.device, 1);
  EXPECT_NE(second.reason.find("local rank 1 of 2"), std::string::npos) << second.reason;
  EXPECT_NE(second.description.find("Test GPU B"), std::string::npos) << second.description;
}

TEST(RankGpu, IsTheOnlyVisibleGpuWhereTheLauncherGaveEachProcessItsOwn) {
  // Slurm's --gpus-per-task=1: local rank 3 of 4 sees one GPU, index 0 after CUDA_VISIBLE_DEVICES.
  const std::vector<GpuInfo> one = {two_gpus().back()};
  std::vector<GpuInfo> renumbered = one;
  renumbered.front().index = 0;
  const Placement p = detail::rank_gpu_among(local_rank(3, 4), renumbered, "");
  EXPECT_TRUE(p.gpu);
  EXPECT_EQ(p.device, 0);
  EXPECT_NE(p.reason.find("the only GPU this process sees"), std::string::npos) << p.reason;
  // The only process on its host (one rank per host) takes GPU 0 as its local rank's.
  EXPECT_EQ(detail::rank_gpu_among(local_rank(0, 1), renumbered, "").device, 0);
}

TEST(RankGpu, SeveralGpusButFewerThanTheLocalRankNeedsIsRefusedNamingThem) {
  try {
    detail::rank_gpu_among(local_rank(2, 4), two_gpus(), "");
    FAIL() << "local rank 2 placed among two visible GPUs";
  } catch (const InvalidArgument& error) {
    const std::string message = message_of(error);
    EXPECT_NE(message.find("local rank 2 of 4"), std::string::npos) << message;
    EXPECT_NE(message.find("sees 2"), std::string::npos) << message;
    EXPECT_NE(message.find("Test GPU A"), std::string::npos) << message;
  }
}

TEST(RankGpu, NoVisibleGpuIsADeviceErrorSayingWhy) {
  try {
    detail::rank_gpu_among(local_rank(1, 2), {}, "cudaErrorNoDevice: no device");
    FAIL() << "a rank placed on a GPU where none is visible";
  } catch (const DeviceError& error) {
    const std::string message = message_of(error);
    EXPECT_NE(message.find("local rank 1 of 2"), std::string::npos) << message;
    EXPECT_NE(message.find("cudaErrorNoDevice"), std::string::npos) << message;
  }
}

constexpr const char* kQueues = "CUDA_DEVICE_MAX_CONNECTIONS";

// The variable as the test finds it now.
std::string queues_now() { return std::getenv(kQueues) ? std::getenv(kQueues) : "(unset)"; }

// A launcher's variables, with the process's own CUDA_DEVICE_MAX_CONNECTIONS (getenv) behind them.
Environment launcher(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    if (const auto found = variables.find(name); found != variables.end()) return found->second;
    if (name == kQueues && std::getenv(kQueues)) return std::getenv(kQueues);
    return std::nullopt;
  };
}

TEST(HardwareQueues, ARankOfSeveralAsksForThirtyTwo) {
  const testing::ScopedEnvironment saved({{kQueues, std::nullopt}});
  EXPECT_NE(cuda::describe_hardware_queues().find("unset: CUDA's default"), std::string::npos)
      << cuda::describe_hardware_queues();
  EXPECT_TRUE(cuda::ask_for_hardware_queues(launcher({{"RANK", "1"}, {"WORLD_SIZE", "2"}})));
  EXPECT_EQ(queues_now(), "32");
  EXPECT_EQ(cuda::describe_hardware_queues(),
            "32 hardware work queues per CUDA context (CUDA_DEVICE_MAX_CONNECTIONS)");
}

TEST(HardwareQueues, EveryLaunchersRanksCount) {
  for (const auto& variables : std::vector<std::map<std::string, std::string>>{
           {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
           {{"SLURM_PROCID", "3"},
            {"SLURM_STEP_NUM_TASKS", "8"},
            {"SLURM_LOCALID", "3"},
            {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
            {"SLURM_NODEID", "0"}}}) {
    const testing::ScopedEnvironment saved({{kQueues, std::nullopt}});
    EXPECT_TRUE(cuda::ask_for_hardware_queues(launcher(variables))) << variables.begin()->first;
    EXPECT_EQ(queues_now(), "32");
  }
}

TEST(HardwareQueues, TheUsersOwnNumberStands) {
  const testing::ScopedEnvironment saved({{kQueues, std::optional<std::string>("8")}});
  EXPECT_FALSE(cuda::ask_for_hardware_queues(launcher({{"RANK", "1"}, {"WORLD_SIZE", "2"}})));
  EXPECT_EQ(queues_now(), "8");
  EXPECT_EQ(cuda::describe_hardware_queues(),
            "8 hardware work queues per CUDA context (CUDA_DEVICE_MAX_CONNECTIONS)");
}

TEST(HardwareQueues, ALoneProcessOrAMalformedLauncherLeavesTheEnvironmentAlone) {
  // One rank runs no collective that could wait for another: nothing to ask for. A malformed variable is
  // reported where the job reads its ranks, not while the library loads.
  const testing::ScopedEnvironment saved({{kQueues, std::nullopt}});
  EXPECT_FALSE(cuda::ask_for_hardware_queues(launcher({})));
  EXPECT_FALSE(cuda::ask_for_hardware_queues(launcher({{"RANK", "0"}, {"WORLD_SIZE", "1"}})));
  EXPECT_FALSE(cuda::ask_for_hardware_queues(launcher({{"RANK", "two"}, {"WORLD_SIZE", "4"}})));
  EXPECT_EQ(queues_now(), "(unset)");
}

// The child of the next test: its report is the variable as this program found it in main(), after the
// library's load-time request and before anything else could set it.
TEST(HardwareQueuesChild, ReportTheVariable) {
  const char* expected = std::getenv("CONVEYOR_TEST_QUEUES_EXPECTED");
  if (expected == nullptr) GTEST_SKIP() << "run by HardwareQueues.AskedForWhenTheLibraryLoadsInARank";
  EXPECT_EQ(queues_now(), expected);
}

TEST(HardwareQueues, AskedForWhenTheLibraryLoadsInARank) {
  // The driver reads the variable when it starts, so a program's first CUDA call must find it set: the
  // library sets it before main(). Checked in a process of its own, started as torchrun starts a rank.
  const std::vector<std::string> argv = {"/proc/self/exe", "--gtest_filter=HardwareQueuesChild.*"};
  const testing::ScopedEnvironment saved({{kQueues, std::nullopt}});  // the child inherits no value
  const testing::ProcessResult rank = testing::run_process(
      argv, {"RANK=1", "WORLD_SIZE=2", "CONVEYOR_TEST_QUEUES_EXPECTED=32"}, std::chrono::seconds(60));
  EXPECT_EQ(rank.exit_code, 0) << rank.out << rank.err;
  EXPECT_NE(rank.out.find("[  PASSED  ] 1 test"), std::string::npos) << rank.out;
  const testing::ProcessResult alone = testing::run_process(
      argv, {"RANK=0", "WORLD_SIZE=1", "CONVEYOR_TEST_QUEUES_EXPECTED=(unset)"}, std::chrono::seconds(60));
  EXPECT_EQ(alone.exit_code, 0) << alone.out << alone.err;
  const testing::ProcessResult users = testing::run_process(
      argv, {"RANK=1", "WORLD_SIZE=2", "CUDA_DEVICE_MAX_CONNECTIONS=4", "CONVEYOR_TEST_QUEUES_EXPECTED=4"},
      std::chrono::seconds(60));
  EXPECT_EQ(users.exit_code, 0) << users.out << users.err;
}

TEST(PlacementOnThisMachine, GpusInUseAreThoseThisProcessHoldsAContextOn) {
  const auto gpus = list_gpus();  // reads each GPU's free memory: a context on each
  if (gpus.empty()) {
    EXPECT_TRUE(gpus_in_use().empty());
    GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  }
  std::vector<int> every;
  for (const GpuInfo& gpu : gpus) every.push_back(gpu.index);
  EXPECT_EQ(gpus_in_use(), every);
}

}  // namespace
}  // namespace conveyor
