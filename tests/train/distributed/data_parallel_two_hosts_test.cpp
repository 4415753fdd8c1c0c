// Data parallel on CPU processes across two hosts: the two network namespaces of tests/support/two_hosts.sh,
// joined by a veth pair, one rank on each, started by mpirun on the first with on_host.sh as its rsh agent.
// The ranks end with bitwise-identical weights that follow one process on the global batch; a rank killed
// on the second host ends the job within seconds with mpirun naming it; and a second host that cannot reach
// the first (where mpirun, the job's rendezvous, runs) ends the run at once with Open MPI's error. Skipped
// where the hosts cannot be made (no root), unless CONVEYOR_REQUIRE_TWO_HOSTS=1 (CI) makes that a failure.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "peer_runs.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"

namespace conveyor::train {
namespace {

using namespace std::chrono_literals;
using testing::TimedRun;

constexpr int kSkipped = 77;  // two_hosts.sh could not make the hosts

std::string output_of(const TimedRun& run) { return run.result.out + run.result.err; }

TEST(DataParallelTwoHosts, TwoRanksEndWithIdenticalWeightsThatFollowOneProcessOnTheGlobalBatch) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(180s, "two CPU ranks on two hosts");
  testing::TempDir dir;
  const TimedRun run =
      testing::two_hosts(testing::mpirun_across_two_hosts({testing::data_parallel_peer(), "--steps", "6",
                                                           "--checkpoint", dir.path().string()}),
                         120s);
  if (run.result.exit_code == kSkipped) GTEST_SKIP() << output_of(run);
  ASSERT_EQ(run.result.exit_code, 0) << output_of(run);
  const std::vector<std::string> finals = testing::lines_starting(run.result.out, "final loss ");
  ASSERT_EQ(finals.size(), 2u) << output_of(run);
  EXPECT_EQ(finals[0], finals[1]);
  const std::string rank0 = testing::checkpoint_bytes(dir.path(), "rank0");
  ASSERT_FALSE(rank0.empty());
  EXPECT_TRUE(rank0 == testing::checkpoint_bytes(dir.path(), "rank1"))
      << "the two hosts' weights and momentum differ";
  const TimedRun one = testing::run_timed({testing::data_parallel_peer(), "--global", "--world-size", "2",
                                           "--steps", "6", "--checkpoint", dir.path().string()},
                                          {}, 120s);
  ASSERT_EQ(one.result.exit_code, 0) << output_of(one);
  EXPECT_LT(testing::largest_weight_difference(dir / "rank1.step-000000000000.safetensors",
                                               dir / "global.step-000000000000.safetensors"),
            1e-6);
}

TEST(DataParallelTwoHosts, ARankKilledOnTheSecondHostEndsTheJobWithinSeconds) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(120s, "a rank killed on the second host");
  const TimedRun run =
      testing::two_hosts(testing::mpirun_across_two_hosts(
                             {testing::data_parallel_peer(), "--steps", "200", "--die-at-step", "3"}),
                         90s);
  if (run.result.exit_code == kSkipped) GTEST_SKIP() << output_of(run);
  const std::string text = output_of(run);
  EXPECT_FALSE(run.result.timed_out) << text;
  EXPECT_EQ(run.result.exit_code, 128 + 9) << text;
  EXPECT_NE(text.find("process rank 1 with PID"), std::string::npos) << text;
  EXPECT_NE(text.find("on node 10.77.0.2 exited on signal 9 (Killed)"), std::string::npos) << text;
  EXPECT_TRUE(testing::lines_starting(run.result.out, "final loss ").empty()) << text;
  // Start-up on two hosts, three steps and the end: about 5 s on the idle build machine.
  EXPECT_LT(run.seconds, 30.0) << text;
}

TEST(DataParallelTwoHosts, AHostThatCannotReachTheFirstEndsTheRunAtOnce) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(120s, "the first host out of reach");
  // The second host loses its routes: its Open MPI daemon, started there, cannot connect back to mpirun.
  const TimedRun run = testing::two_hosts(
      "ip -n \"$CONVEYOR_NETNS_B\" route flush table main && " +
          testing::mpirun_across_two_hosts({testing::data_parallel_peer(), "--steps", "4"}),
      90s);
  if (run.result.exit_code == kSkipped) GTEST_SKIP() << output_of(run);
  const std::string text = output_of(run);
  EXPECT_FALSE(run.result.timed_out) << text;
  EXPECT_NE(run.result.exit_code, 0) << text;
  EXPECT_NE(text.find("ORTE was unable to reliably start one or more daemons"), std::string::npos) << text;
  EXPECT_NE(text.find("connection back to mpirun"), std::string::npos) << text;
  EXPECT_TRUE(testing::lines_starting(run.result.out, "step ").empty()) << text;
  // Under a second on the idle build machine.
  EXPECT_LT(run.seconds, 30.0) << text;
}

}  // namespace
}  // namespace conveyor::train
