// Data-parallel training through NCCL on a real GPU, in one process that is the whole job (the communicator
// of one rank, bootstrapped by the process itself). The path through NCCL (bucketed all-reduces on their own
// stream, eager or captured in the step's CUDA graph, the watch beside them) must give exactly the losses and
// weights of a plain Trainer, for the built-in networks and a user's. Two ranks, in two processes, are in
// data_parallel_two_gpus_test.cpp. Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ranks.h"
#include "conveyor/train/data_parallel.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"
#include "tests/train/gpu_test_support.h"
#include "tests/train/synthetic_batches.h"

namespace conveyor::train {
namespace {

constexpr ImageShape kShape{16, 16, 1};

TrainerOptions small(Precision precision, int batch = 32) {
  TrainerOptions o;
  o.model = ModelKind::small_resnet;
  o.num_classes = 4;
  o.input = kShape;
  o.batch = batch;
  o.width = 8;
  o.blocks_per_stage = 1;
  o.learning_rate = 0.05;
  o.precision = precision;
  o.device = 0;
  o.seed = 3;
  o.deterministic = true;  // the same algorithms in every trainer, so only the reduction can differ
  return o;
}

// The bytes of a checkpoint's weights and momentum (its two safetensors files; the JSON beside them names
// the files, so it differs between names).
std::string checkpoint_bytes(Trainer& trainer, const testing::TempDir& dir, const std::string& name) {
  const std::filesystem::path path = dir / (name + ".json");
  trainer.save_checkpoint(path);
  std::string bytes;
  for (const char* suffix : {".step-000000000000.safetensors", ".step-000000000000.optimizer.safetensors"}) {
    std::ifstream in(dir / (name + suffix), std::ios::binary);
    EXPECT_TRUE(in) << "no " << name << suffix << " beside " << path;
    bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return bytes;
}

std::vector<double> plain_losses(const TrainerOptions& o, int steps, testing::TempDir& dir,
                                 std::string* weights) {
  Trainer trainer(o);
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) {
    trainer.step(testing::quadrant_batch(static_cast<std::size_t>(o.batch), kShape, 200 + s).on_gpu(0));
    out.push_back(trainer.last_step().loss);
  }
  if (weights) *weights = checkpoint_bytes(trainer, dir, "plain.ckpt");
  return out;
}

std::vector<double> parallel_losses(DataParallelTrainer& trainer, int batch, int steps) {
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) {
    trainer.step(testing::quadrant_batch(static_cast<std::size_t>(batch), kShape, 200 + s).on_gpu(0));
    out.push_back(trainer.last_step().loss);
  }
  return out;
}

void print(const char* what, const std::vector<double>& losses) {
  std::printf("[ losses   ] %s:", what);
  for (const double l : losses) std::printf(" %.9g", l);
  std::printf("\n");
}

class OneRank : public ::testing::TestWithParam<std::tuple<Precision, bool>> {};

TEST_P(OneRank, ThroughNcclGivesExactlyThePlainTrainersLossesAndWeights) {
  CONVEYOR_REQUIRE_GPU();
  testing::Watchdog watchdog(std::chrono::minutes(5), "one rank through NCCL");
  TrainerOptions o = small(std::get<0>(GetParam()));
  o.cuda_graph = std::get<1>(GetParam());
  testing::TempDir dir;
  std::string plain_weights;
  const std::vector<double> expected = plain_losses(o, 8, dir, &plain_weights);
  DataParallelTrainer parallel(o, Ranks{});
  parallel.warmup();
  std::printf("[ placement] %s\n", parallel.placement().c_str());
  EXPECT_NE(parallel.placement().find("NCCL"), std::string::npos);
  EXPECT_NE(parallel.placement().find("bootstrap: one process"), std::string::npos);
  EXPECT_EQ(parallel.world_size(), 1);
  const std::vector<double> got = parallel_losses(parallel, o.batch, 8);
  print("plain trainer", expected);
  print("data parallel, 1 rank", got);
  EXPECT_EQ(got, expected);
  EXPECT_TRUE(checkpoint_bytes(parallel.trainer(), dir, "parallel.ckpt") == plain_weights)
      << "the weights, statistics and momentum after 8 steps differ";
  parallel.average_statistics();
  parallel.barrier();
}

INSTANTIATE_TEST_SUITE_P(PrecisionsAndGraphs, OneRank,
                         ::testing::Combine(::testing::Values(Precision::fp32, Precision::bf16),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_graph" : "_eager");
                         });

TEST(DataParallel, ABatchOfTheWrongSizeOrDeviceIsRefusedBeforeTheStepBegins) {
  CONVEYOR_REQUIRE_GPU();
  testing::Watchdog watchdog(std::chrono::minutes(5), "a refused batch");
  DataParallelTrainer parallel(small(Precision::bf16), Ranks{});
  EXPECT_THROW(parallel.step(testing::quadrant_batch(16, kShape, 1).on_gpu(0)), InvalidArgument);
  // Nothing was begun: the trainer goes on.
  EXPECT_NO_THROW(parallel.step(testing::quadrant_batch(32, kShape, 3).on_gpu(0)));
  EXPECT_GT(parallel.last_step().loss, 0);
}

// A network the user describes takes the same gradient path (buckets cut from its parameters, the
// all-reduces captured in the step's graph) as the built-in ones.
TEST(DataParallel, AUserNetworkThroughNcclGivesExactlyThePlainTrainersLosses) {
  CONVEYOR_REQUIRE_GPU();
  testing::Watchdog watchdog(std::chrono::minutes(5), "a user network through NCCL");
  using namespace layers;
  TrainerOptions o = small(Precision::bf16);
  o.network = {conv(8, 3),
               batch_norm(),
               relu(),
               max_pool(2, 2),
               residual({conv(16, 3, 2), batch_norm(), relu(), conv(16, 3), batch_norm()},
                        {conv(16, 1, 2, 0), batch_norm()}),
               global_avg_pool(),
               dense(4)};
  testing::TempDir dir;
  const std::vector<double> expected = plain_losses(o, 6, dir, nullptr);
  DataParallelTrainer parallel(o, Ranks{});
  parallel.warmup();
  std::printf("[ placement] %s\n", parallel.placement().c_str());
  EXPECT_TRUE(parallel.trainer().warmup_report().graph);
  EXPECT_EQ(parallel_losses(parallel, o.batch, 6), expected);
}

}  // namespace
}  // namespace conveyor::train
