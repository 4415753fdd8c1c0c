// scripts/launch.sh, the one-host launcher, both ways: through mpirun (where Open MPI is installed, as here)
// and as N processes with torchrun's variables (CONVEYOR_LAUNCHER=processes, as on a GPU machine without
// MPI). Every rank gets its launcher's variables with NVLink multicast off whatever the caller's
// environment says, and a rank that fails stops the others at once (a rank waiting on a collective would
// otherwise wait forever).
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "peer_runs.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"

namespace conveyor::train {
namespace {

using namespace std::chrono_literals;
using testing::TimedRun;

const std::vector<std::string> kMulticastOn{"NCCL_NVLS_ENABLE=1", "TORCH_SYMM_MEM_DISABLE_MULTICAST=0",
                                            "NVSHMEM_DISABLE_NVLS=0"};

// Each output line's words, keyed by the first (the rank).
std::map<int, std::vector<std::string>> words_by_rank(const std::string& text) {
  std::map<int, std::vector<std::string>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    if (!fields.empty()) out[std::stoi(fields[0])] = fields;
  }
  return out;
}

void expect_multicast_off(const std::vector<std::string>& f, std::size_t from) {
  EXPECT_EQ(f[from], "0") << "NCCL_NVLS_ENABLE";
  EXPECT_EQ(f[from + 1], "1") << "TORCH_SYMM_MEM_DISABLE_MULTICAST";
  EXPECT_EQ(f[from + 2], "1") << "NVSHMEM_DISABLE_NVLS";
}

TEST(Launch, ThroughMpirunEveryRankGetsOpenMpisVariablesAndNvlinkMulticastOff) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(60s, "launch.sh through mpirun, variables");
  std::vector<std::string> environment = kMulticastOn;
  environment.push_back("CONVEYOR_LAUNCHER=mpirun");
  const TimedRun run = testing::launch(
      2,
      {"sh", "-c",
       "echo $OMPI_COMM_WORLD_RANK $OMPI_COMM_WORLD_SIZE $OMPI_COMM_WORLD_LOCAL_RANK $NCCL_NVLS_ENABLE "
       "$TORCH_SYMM_MEM_DISABLE_MULTICAST $NVSHMEM_DISABLE_NVLS"},
      30s, environment);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto by_rank = words_by_rank(run.result.out);
  ASSERT_EQ(by_rank.size(), 2u) << run.result.out;
  for (const auto& [rank, f] : by_rank) {
    ASSERT_EQ(f.size(), 6u);
    EXPECT_EQ(f[1], "2");
    EXPECT_EQ(f[2], std::to_string(rank)) << "local rank";
    expect_multicast_off(f, 3);
  }
}

TEST(Launch, ThroughMpirunARankThatFailsEndsTheOthersAndGivesItsStatus) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(120s, "launch.sh through mpirun, a failing rank");
  const TimedRun run = testing::launch(
      3, {"sh", "-c", "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then sleep 1; exit 7; fi; exec sleep 600"}, 90s,
      {"CONVEYOR_LAUNCHER=mpirun"});
  EXPECT_FALSE(run.result.timed_out);
  EXPECT_EQ(run.result.exit_code, 7) << run.result.err;
  EXPECT_LT(run.seconds, 30.0);
}

TEST(Launch, AsProcessesEveryRankGetsTorchrunsVariablesAndNvlinkMulticastOff) {
  testing::Watchdog watchdog(60s, "launch.sh as processes, variables");
  std::vector<std::string> environment = kMulticastOn;
  environment.insert(environment.end(), {"CONVEYOR_LAUNCHER=processes", "RANK=5"});
  const TimedRun run = testing::launch(
      2,
      {"sh", "-c",
       "echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $NCCL_NVLS_ENABLE "
       "$TORCH_SYMM_MEM_DISABLE_MULTICAST $NVSHMEM_DISABLE_NVLS"},
      30s, environment);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto by_rank = words_by_rank(run.result.out);
  ASSERT_EQ(by_rank.size(), 2u) << run.result.out;
  for (const auto& [rank, f] : by_rank) {
    ASSERT_EQ(f.size(), 9u);
    EXPECT_EQ(f[1], "2");
    EXPECT_EQ(f[2], std::to_string(rank)) << "LOCAL_RANK";
    EXPECT_EQ(f[3], "2");
    EXPECT_EQ(f[4], "127.0.0.1");
    EXPECT_GT(std::stoi(f[5]), 0);
    EXPECT_EQ(f[5], by_rank.begin()->second[5]) << "one MASTER_PORT for all";
    expect_multicast_off(f, 6);
  }
}

TEST(Launch, AsProcessesWithAGpuEachEveryRankSeesItsOwnGpuOfTheCallersList) {
  testing::Watchdog watchdog(60s, "launch.sh as processes, a GPU each");
  const std::string command = "echo $RANK $CUDA_VISIBLE_DEVICES";
  const TimedRun listed =
      testing::launch(2, {"sh", "-c", command}, 30s,
                      {"CONVEYOR_LAUNCHER=processes", "CONVEYOR_GPU_EACH=1", "CUDA_VISIBLE_DEVICES=5,7,9"});
  ASSERT_EQ(listed.result.exit_code, 0) << listed.result.err;
  auto by_rank = words_by_rank(listed.result.out);
  ASSERT_EQ(by_rank.size(), 2u) << listed.result.out;
  EXPECT_EQ(by_rank[0].at(1), "5");
  EXPECT_EQ(by_rank[1].at(1), "7");
  // Without a list, copy R sees GPU R; without the option, every copy sees what the caller sees.
  const TimedRun unlisted =
      testing::launch(2, {"sh", "-c", command}, 30s, {"CONVEYOR_LAUNCHER=processes", "CONVEYOR_GPU_EACH=1"});
  ASSERT_EQ(unlisted.result.exit_code, 0) << unlisted.result.err;
  by_rank = words_by_rank(unlisted.result.out);
  EXPECT_EQ(by_rank[0].at(1), "0");
  EXPECT_EQ(by_rank[1].at(1), "1");
  const TimedRun shared = testing::launch(2, {"sh", "-c", command}, 30s,
                                          {"CONVEYOR_LAUNCHER=processes", "CUDA_VISIBLE_DEVICES=5,7"});
  ASSERT_EQ(shared.result.exit_code, 0) << shared.result.err;
  by_rank = words_by_rank(shared.result.out);
  EXPECT_EQ(by_rank[0].at(1), "5,7");
  EXPECT_EQ(by_rank[1].at(1), "5,7");
}

TEST(Launch, AGpuEachIsRefusedThroughMpirunAndWithTooShortAList) {
  testing::Watchdog watchdog(60s, "launch.sh, a GPU each refused");
  const TimedRun mpirun =
      testing::launch(2, {"true"}, 30s, {"CONVEYOR_LAUNCHER=mpirun", "CONVEYOR_GPU_EACH=1"});
  EXPECT_EQ(mpirun.result.exit_code, 2);
  EXPECT_NE(mpirun.result.err.find("CONVEYOR_LAUNCHER=processes"), std::string::npos) << mpirun.result.err;
  const TimedRun short_list = testing::launch(
      3, {"true"}, 30s, {"CONVEYOR_LAUNCHER=processes", "CONVEYOR_GPU_EACH=1", "CUDA_VISIBLE_DEVICES=0,1"});
  EXPECT_EQ(short_list.result.exit_code, 2);
  EXPECT_NE(short_list.result.err.find("names 2 GPUs"), std::string::npos) << short_list.result.err;
}

TEST(Launch, AsProcessesARankThatFailsStopsTheOthersAndGivesItsStatus) {
  testing::Watchdog watchdog(120s, "launch.sh as processes, a failing rank");
  testing::TempDir dir;
  const std::string pids = (dir / "pids").string();
  // Ranks 0 and 2 sleep for ten minutes; rank 1 fails as soon as all three have written their pid (else, on
  // a loaded machine, the launcher could stop a rank before it wrote it).
  const std::string script = "echo $$ >> '" + pids + "'; if [ \"$RANK\" = 1 ]; then while [ $(wc -l < '" +
                             pids + "') -lt 3 ]; do sleep 0.05; done; exit 7; fi; exec sleep 600";
  const TimedRun run = testing::launch(3, {"sh", "-c", script}, 90s, {"CONVEYOR_LAUNCHER=processes"});
  EXPECT_LT(run.seconds, 30.0);
  EXPECT_EQ(run.result.exit_code, 7) << run.result.err;
  EXPECT_NE(run.result.err.find("rank 1 exited with status 7"), std::string::npos) << run.result.err;
  std::ifstream in(pids);
  int count = 0;
  for (pid_t pid = 0; in >> pid; ++count)
    EXPECT_TRUE(::kill(pid, 0) == -1 && errno == ESRCH) << "process " << pid << " still runs";
  EXPECT_EQ(count, 3);
}

TEST(Launch, AsProcessesCpuRanksAreRefusedWithWhatToDoInstead) {
  // The CPU's collectives need MPI, which launch.sh's processes do not start.
  testing::Watchdog watchdog(60s, "CPU ranks without MPI");
  const TimedRun run = testing::launch(2, {testing::data_parallel_peer(), "--steps", "2"}, 30s,
                                       {"CONVEYOR_LAUNCHER=processes"});
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_NE(run.result.err.find("needs an MPI launcher"), std::string::npos) << run.result.err;
}

TEST(Launch, RefusesAMissingOrBadProcessCountOrLauncher) {
  EXPECT_EQ(testing::launch(0, {"true"}, 30s).result.exit_code, 2);
  EXPECT_EQ(testing::run_timed({testing::launch_script(), "two", "true"}, {}, 30s).result.exit_code, 2);
  EXPECT_EQ(testing::run_timed({testing::launch_script(), "2"}, {}, 30s).result.exit_code, 2);
  EXPECT_EQ(testing::launch(2, {"true"}, 30s, {"CONVEYOR_LAUNCHER=srun"}).result.exit_code, 2);
}

}  // namespace
}  // namespace conveyor::train
