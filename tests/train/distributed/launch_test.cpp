// scripts/launch.sh, the one-host launcher: N processes with torchrun's variables meet through the
// rendezvous, NVLink multicast is off in every one whatever the caller's environment says, and a rank that
// fails stops the others at once (a rank waiting on a collective would otherwise wait forever).
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "barrier_log.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"

namespace conveyor::train {
namespace {

using testing::ProcessResult;
using testing::TempDir;

ProcessResult launch(const std::vector<std::string>& args, const std::vector<std::string>& environment = {}) {
  std::vector<std::string> argv{CONVEYOR_LAUNCH};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::run_process(argv, environment, std::chrono::seconds(90));
}

std::string peer() { return testing::program_path("CONVEYOR_RENDEZVOUS_PEER", CONVEYOR_RENDEZVOUS_PEER); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Launch, ThreeRanksMeetThroughTheRendezvousAndPassItsBarriers) {
  testing::Watchdog watchdog(std::chrono::seconds(120), "launch.sh, three ranks");
  TempDir dir;
  const std::string log = (dir / "barriers.log").string();
  const ProcessResult result = launch({"3", peer(), "env://", "20000", log});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::set<std::string> ranks, bytes;
  for (const std::string& line : lines_of(result.out)) {  // "rank R: HEX"
    const std::size_t colon = line.find(": ");
    ASSERT_NE(colon, std::string::npos) << line;
    ranks.insert(line.substr(0, colon));
    bytes.insert(line.substr(colon + 2));
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"rank 0", "rank 1", "rank 2"}));
  ASSERT_EQ(bytes.size(), 1u) << "every rank got the same bytes from rank 0";
  EXPECT_EQ(bytes.begin()->size(), 256u);
  testing::expect_barriers_held(log, 3);  // each barrier: every rank entered before any rank left
}

TEST(Launch, EveryRankGetsTorchrunsVariablesAndNvlinkMulticastOff) {
  testing::Watchdog watchdog(std::chrono::seconds(60), "launch.sh, variables");
  const ProcessResult result = launch(
      {"2", "sh", "-c",
       "echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $NCCL_NVLS_ENABLE "
       "$TORCH_SYMM_MEM_DISABLE_MULTICAST $NVSHMEM_DISABLE_NVLS"},
      {"NCCL_NVLS_ENABLE=1", "TORCH_SYMM_MEM_DISABLE_MULTICAST=0", "NVSHMEM_DISABLE_NVLS=0", "RANK=5"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::map<int, std::vector<std::string>> by_rank;
  for (const std::string& line : lines_of(result.out)) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    ASSERT_EQ(fields.size(), 9u) << line;
    by_rank[std::stoi(fields[0])] = fields;
  }
  ASSERT_EQ(by_rank.size(), 2u) << result.out;
  for (const auto& [rank, f] : by_rank) {
    EXPECT_EQ(f[1], "2");
    EXPECT_EQ(f[2], std::to_string(rank)) << "LOCAL_RANK";
    EXPECT_EQ(f[3], "2");
    EXPECT_EQ(f[4], "127.0.0.1");
    EXPECT_GT(std::stoi(f[5]), 0);
    EXPECT_EQ(f[5], by_rank.begin()->second[5]) << "one MASTER_PORT for all";
    EXPECT_EQ(f[6], "0") << "NCCL_NVLS_ENABLE";
    EXPECT_EQ(f[7], "1") << "TORCH_SYMM_MEM_DISABLE_MULTICAST";
    EXPECT_EQ(f[8], "1") << "NVSHMEM_DISABLE_NVLS";
  }
}

TEST(Launch, ARankThatFailsStopsTheOthersAndGivesItsStatus) {
  testing::Watchdog watchdog(std::chrono::seconds(120), "launch.sh, a failing rank");
  TempDir dir;
  const std::string pids = (dir / "pids").string();
  // Ranks 0 and 2 wait at the rendezvous for rank 1 for ten minutes; rank 1 fails as soon as all three
  // have written their pid (else, on a loaded machine, the launcher could stop a rank before it wrote it).
  const std::string script = "echo $$ >> '" + pids + "'; if [ \"$RANK\" = 1 ]; then while [ $(wc -l < '" +
                             pids + "') -lt 3 ]; do sleep 0.05; done; exit 7; fi; exec '" + peer() +
                             "' env:// 600000 '" + (dir / "log").string() + "'";
  const auto started = std::chrono::steady_clock::now();
  const ProcessResult result = launch({"3", "sh", "-c", script});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  EXPECT_EQ(result.exit_code, 7) << result.err;
  EXPECT_NE(result.err.find("rank 1 exited with status 7"), std::string::npos) << result.err;
  std::ifstream in(pids);
  int count = 0;
  for (pid_t pid = 0; in >> pid; ++count)
    EXPECT_TRUE(::kill(pid, 0) == -1 && errno == ESRCH) << "process " << pid << " still runs";
  EXPECT_EQ(count, 3);
}

TEST(Launch, RefusesAMissingOrBadProcessCount) {
  EXPECT_EQ(launch({"0", "true"}).exit_code, 2);
  EXPECT_EQ(launch({"two", "true"}).exit_code, 2);
  EXPECT_EQ(launch({"2"}).exit_code, 2);
}

}  // namespace
}  // namespace conveyor::train
