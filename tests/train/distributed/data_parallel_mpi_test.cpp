// Data parallel on CPU processes through Open MPI, on this host: scripts/launch.sh starts the ranks with
// mpirun. Two ranks end with bitwise-identical weights and momentum, and follow one process stepping on
// the global batch within float rounding (a network without batch norm; with batch norm each rank
// normalizes by its own half, so only the gradients' average is exact); one rank through MPI trains
// exactly as a plain trainer. Faults end runs: a rank killed mid-run ends the job within seconds with
// mpirun naming it, a rank that hangs ends the others after the collective timeout with an error that
// says so, and a world size that is not MPI's is a clear error at once.
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

std::vector<std::string> peer(std::vector<std::string> args) {
  args.insert(args.begin(), testing::data_parallel_peer());
  return args;
}

std::string output_of(const TimedRun& run) { return run.result.out + run.result.err; }

// The "final loss" lines of a run: one per rank.
std::vector<std::string> final_lines(const TimedRun& run) {
  return testing::lines_starting(run.result.out, "final loss ");
}

TEST(DataParallelMpi, TwoRanksEndWithIdenticalWeightsThatFollowOneProcessOnTheGlobalBatch) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(180s, "two CPU ranks through mpirun");
  testing::TempDir dir;
  const TimedRun two = testing::launch(2, peer({"--steps", "6", "--checkpoint", dir.path().string()}), 120s);
  ASSERT_EQ(two.result.exit_code, 0) << output_of(two);
  const std::vector<std::string> finals = final_lines(two);
  ASSERT_EQ(finals.size(), 2u) << output_of(two);
  EXPECT_EQ(finals[0], finals[1]) << "every rank prints the losses averaged over all ranks";
  EXPECT_NE(output_of(two).find("data parallel over Open MPI"), std::string::npos) << output_of(two);
  const std::string rank0 = testing::checkpoint_bytes(dir.path(), "rank0");
  ASSERT_FALSE(rank0.empty());
  EXPECT_TRUE(rank0 == testing::checkpoint_bytes(dir.path(), "rank1"))
      << "the two ranks' weights and momentum differ";

  const TimedRun one = testing::run_timed(
      peer({"--global", "--world-size", "2", "--steps", "6", "--checkpoint", dir.path().string()}), {}, 120s);
  ASSERT_EQ(one.result.exit_code, 0) << output_of(one);
  // Every step's gradient is the global batch's, summed in another order: float rounding apart, the same
  // weights. After 6 steps at learning rate 0.05 the largest difference was 2.4e-8 of the weights' scale on
  // the build machine (2026-11-28).
  const double difference = testing::largest_weight_difference(dir / "rank0.step-000000000000.safetensors",
                                                               dir / "global.step-000000000000.safetensors");
  EXPECT_LT(difference, 1e-6) << "two ranks of 8 against one process of 16";
  std::printf("[ weights  ] two ranks of 8 against one process of 16: largest difference %.3g\n", difference);
  const std::vector<std::string> one_steps = testing::lines_starting(one.result.out, "step ");
  const std::vector<std::string> two_steps = testing::lines_starting(two.result.out, "step ");
  ASSERT_EQ(one_steps.size(), 6u);
  ASSERT_EQ(two_steps.size(), 12u);
}

TEST(DataParallelMpi, OneRankThroughMpiTrainsExactlyAsAPlainTrainer) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(120s, "one rank through mpirun");
  testing::TempDir dir;
  std::vector<std::string> argv = testing::mpirun(1);
  const std::vector<std::string> command =
      peer({"--network", "batch-norm", "--steps", "4", "--checkpoint", dir.path().string()});
  argv.insert(argv.end(), command.begin(), command.end());
  const TimedRun mpi = testing::run_timed(argv, {}, 90s);
  ASSERT_EQ(mpi.result.exit_code, 0) << output_of(mpi);
  EXPECT_NE(output_of(mpi).find("data parallel over Open MPI"), std::string::npos) << output_of(mpi);
  const TimedRun plain = testing::run_timed(
      peer({"--network", "batch-norm", "--global", "--steps", "4", "--checkpoint", dir.path().string()}), {},
      90s);
  ASSERT_EQ(plain.result.exit_code, 0) << output_of(plain);
  EXPECT_EQ(testing::lines_starting(mpi.result.out, "step "),
            testing::lines_starting(plain.result.out, "step "));
  EXPECT_TRUE(testing::checkpoint_bytes(dir.path(), "rank0") ==
              testing::checkpoint_bytes(dir.path(), "global"));
}

TEST(DataParallelMpi, ARankKilledMidRunEndsTheJobWithinSecondsAndMpirunNamesIt) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(120s, "a rank killed mid-run");
  const TimedRun run = testing::launch(2, peer({"--steps", "200", "--die-at-step", "3"}), 90s);
  const std::string text = output_of(run);
  EXPECT_FALSE(run.result.timed_out) << text;
  EXPECT_EQ(run.result.exit_code, 128 + 9) << text;
  EXPECT_NE(text.find("rank 1 (pid"), std::string::npos) << text;
  EXPECT_NE(text.find("process rank 1 with PID"), std::string::npos) << text;
  EXPECT_NE(text.find("exited on signal 9 (Killed)"), std::string::npos) << text;
  EXPECT_TRUE(final_lines(run).empty()) << "no rank finished: " << text;
  // Start-up, three steps and the end: about 2 s on the idle build machine.
  EXPECT_LT(run.seconds, 30.0) << text;
}

TEST(DataParallelMpi, ARankThatHangsEndsTheOthersAfterTheCollectiveTimeout) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(120s, "a rank that hangs");
  const TimedRun run = testing::launch(
      2, peer({"--steps", "200", "--hang-at-step", "3", "--collective-timeout-ms", "3000"}), 90s);
  const std::string text = output_of(run);
  EXPECT_FALSE(run.result.timed_out) << text;
  EXPECT_NE(run.result.exit_code, 0) << text;
  EXPECT_NE(text.find("rank 1 (pid"), std::string::npos) << text;
  // Rank 0's own error, then the job ended by MPI_Abort, which takes the hanging rank down too.
  EXPECT_NE(text.find("data parallel (Open MPI, rank 0 of 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("made no progress for 3 s"), std::string::npos) << text;
  EXPECT_NE(text.find("conveyor: ending the MPI job with MPI_Abort"), std::string::npos) << text;
  EXPECT_LT(run.seconds, 30.0) << text;
}

TEST(DataParallelMpi, AWorldSizeThatIsNotMpisIsAClearErrorAtOnce) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(120s, "a wrong world size");
  const TimedRun run = testing::launch(2, peer({"--world-size", "3", "--steps", "2"}), 90s);
  const std::string text = output_of(run);
  EXPECT_FALSE(run.result.timed_out) << text;
  EXPECT_NE(run.result.exit_code, 0) << text;
  EXPECT_NE(
      text.find("MPI's launcher started this process as rank 0 of 2, but the ranks given say rank 0 of 3"),
      std::string::npos)
      << text;
  EXPECT_LT(run.seconds, 30.0) << text;
}

}  // namespace
}  // namespace conveyor::train
