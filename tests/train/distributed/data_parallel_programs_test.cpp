// The examples as data-parallel programs, on two CPU processes that scripts/launch.sh starts through
// mpirun: custom_network and quickstart each end with the same "final loss A -> B" line on every rank (the
// losses averaged over the ranks); feed_vs_prefetch records every step's loss and its place in the job, and
// refuses what it cannot do with a message that says why.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "peer_runs.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor::train {
namespace {

using namespace std::chrono_literals;
using testing::ProcessResult;
using testing::TimedRun;

std::string output_of(const TimedRun& run) { return run.result.out + run.result.err; }

class DataParallelPrograms : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 6; ++i)
        testing::write_file(dir / "photos" / ("class_" + std::to_string(c)) / (std::to_string(i) + ".jpg"),
                            testing::make_jpeg(40, 48, 3, static_cast<std::uint64_t>(10 * c + i + 1)));
    // custom_network's list file: 28x28 gray JPEGs of ten classes.
    std::filesystem::create_directories(dir / "fashion");
    std::ofstream list(dir / "fashion" / "train.txt");
    for (int i = 0; i < 40; ++i) {
      const std::filesystem::path image = dir / "fashion" / (std::to_string(i) + ".jpg");
      testing::write_file(image, testing::make_jpeg(28, 28, 1, static_cast<std::uint64_t>(100 + i)));
      list << image.string() << ' ' << i % 10 << '\n';
    }
  }

  std::vector<std::string> feed_vs_prefetch(std::vector<std::string> args) {
    args.insert(args.begin(), {testing::program_path("CONVEYOR_FEED_VS_PREFETCH", CONVEYOR_FEED_VS_PREFETCH),
                               "--data", (dir / "photos").string()});
    return args;
  }

  testing::TempDir dir;
};

void expect_one_final_line_per_rank_all_equal(const TimedRun& run, std::size_t ranks) {
  ASSERT_EQ(run.result.exit_code, 0) << output_of(run);
  const std::vector<std::string> finals = testing::lines_starting(run.result.out, "final loss ");
  ASSERT_EQ(finals.size(), ranks) << output_of(run);
  for (const std::string& line : finals) EXPECT_EQ(line, finals[0]) << output_of(run);
}

TEST_F(DataParallelPrograms, CustomNetworkOnTwoCpuRanksPrintsTheSameFinalLossOnEveryRank) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(180s, "custom_network on two ranks");
  const TimedRun run = testing::launch(
      2,
      {testing::program_path("CONVEYOR_CUSTOM_NETWORK", CONVEYOR_CUSTOM_NETWORK), "--data",
       (dir / "fashion").string(), "--device", "cpu", "--steps", "4", "--batch", "8", "--threads", "1"},
      150s);
  expect_one_final_line_per_rank_all_equal(run, 2);
  EXPECT_NE(output_of(run).find("data parallel over Open MPI"), std::string::npos) << output_of(run);
  EXPECT_EQ(testing::lines_starting(run.result.out, "step ").size(), 4u) << "rank 0 prints the steps";
}

TEST_F(DataParallelPrograms, QuickstartOnTwoCpuRanksPrintsTheSameFinalLossOnEveryRank) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(240s, "quickstart on two ranks");
  // One step: ResNet-18 on the CPU reference, two ranks on two cores (two steps took 127 s under ASan).
  const TimedRun run = testing::launch(
      2, {testing::program_path("CONVEYOR_QUICKSTART", CONVEYOR_QUICKSTART), (dir / "photos").string(), "1"},
      200s);
  expect_one_final_line_per_rank_all_equal(run, 2);
  EXPECT_NE(output_of(run).find("rank 0 of 2"), std::string::npos) << output_of(run);
}

TEST_F(DataParallelPrograms, FeedVsPrefetchRecordsEveryStepsLossAndItsPlaceInTheJob) {
  testing::Watchdog watchdog(120s, "feed_vs_prefetch --record-loss");
  const std::string json = (dir / "run.json").string();
  const ProcessResult result = testing::run_process(
      feed_vs_prefetch({"--device", "cpu", "--modes",  "prefetch", "--threads",       "2",
                        "--batch",  "4",   "--warmup", "1",        "--steps",         "3",
                        "--size",   "16",  "--width",  "4",        "--deterministic", "--record-loss",
                        "--json",   json}),
      {}, 90s);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  std::ifstream in(json);
  const nlohmann::json run = nlohmann::json::parse(in);
  EXPECT_EQ(run["world_size"], 1);
  EXPECT_EQ(run["rank"], 0);
  EXPECT_EQ(run["deterministic"], true);
  EXPECT_EQ(run["pipeline_deterministic"], true)
      << "--record-loss and --deterministic keep the batches fixed";
  const nlohmann::json& prefetch = run["results"][0];
  EXPECT_EQ(prefetch["mode"], "prefetch");
  ASSERT_EQ(prefetch["losses"].size(), 4u) << "one loss per step, the warm-up step included";
  for (const auto& loss : prefetch["losses"]) EXPECT_GT(loss.get<double>(), 0.0);
  // The scalar fields are written with 6 significant digits, the lists in full.
  EXPECT_NEAR(prefetch["losses"].back().get<double>(), prefetch["loss_last"].get<double>(), 1e-5);
}

TEST_F(DataParallelPrograms, FeedVsPrefetchOnTwoCpuRanksRecordsTheSameLossesOnEveryRank) {
  CONVEYOR_REQUIRE_MPIRUN();
  testing::Watchdog watchdog(180s, "feed_vs_prefetch on two ranks");
  const std::string json = (dir / "run.json").string();
  const TimedRun run = testing::launch(
      2,
      feed_vs_prefetch({"--device", "cpu", "--threads", "1", "--batch", "4", "--warmup", "1", "--steps", "2",
                        "--size", "16", "--width", "4", "--deterministic", "--record-loss", "--json", json}),
      150s);
  ASSERT_EQ(run.result.exit_code, 0) << output_of(run);
  std::vector<nlohmann::json> ranks;
  for (const char* name : {"run.rank0.json", "run.rank1.json"}) {
    std::ifstream in(dir / name);
    ASSERT_TRUE(in) << "no " << name << ": " << output_of(run);
    ranks.push_back(nlohmann::json::parse(in));
  }
  EXPECT_EQ(ranks[0]["world_size"], 2);
  EXPECT_EQ(ranks[1]["rank"], 1);
  ASSERT_EQ(ranks[0]["results"][0]["losses"].size(), 3u);
  EXPECT_EQ(ranks[0]["results"][0]["losses"], ranks[1]["results"][0]["losses"])
      << "every rank reads the losses averaged over the job";
}

TEST_F(DataParallelPrograms, UnderALauncherTheProgramsRefuseWhatTheyCannotDo) {
  testing::Watchdog watchdog(120s, "refusals under a launcher");
  const std::vector<std::string> rank1{
      "RANK=1",           "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
      "MASTER_PORT=29500"};
  ProcessResult result =
      testing::run_process(feed_vs_prefetch({"--device", "cpu", "--modes", "feed,prefetch"}), rank1, 60s);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("runs the prefetch mode only"), std::string::npos) << result.err;
  result = testing::run_process(feed_vs_prefetch({"--device", "gpu:1"}), rank1, 60s);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("each process trains on the GPU of its local rank"), std::string::npos)
      << result.err;
  // CPU ranks that no MPI launcher started: the CPU's collectives need one.
  result = testing::run_process(feed_vs_prefetch({"--device", "cpu", "--steps", "1"}), rank1, 60s);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("needs an MPI launcher"), std::string::npos) << result.err;
  result = testing::run_process({testing::program_path("CONVEYOR_QUICKSTART", CONVEYOR_QUICKSTART),
                                 (dir / "photos").string(), "2", "--gpus", "2"},
                                {}, 30s);
  EXPECT_EQ(result.exit_code, 2) << "one process drives one GPU: no --gpus";
}

}  // namespace
}  // namespace conveyor::train
