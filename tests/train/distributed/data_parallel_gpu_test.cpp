// Data-parallel training through NCCL on real GPUs. With one replica in all the path through NCCL (bucketed
// all-reduces on their own stream, eager or captured in the step's CUDA graph) must give exactly the losses
// and weights of a plain Trainer; with two GPUs, replicas fed the same batch must train exactly like one,
// replicas fed two halves must follow one GPU on the whole batch (up to batch norm's per-replica
// statistics), and every replica must hold the same weights after every step. Skipped without a GPU; the
// two-GPU tests without a second one.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
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

int visible_gpus() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

#define CONVEYOR_REQUIRE_GPUS(n) \
  if (visible_gpus() < (n)) GTEST_SKIP() << (n) << " CUDA devices needed, " << visible_gpus() << " visible"

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

// The first `count` images of `from`, starting at `first`, as a batch of their own.
testing::HostBatch slice(const testing::HostBatch& from, std::size_t first, std::size_t count) {
  testing::HostBatch out{PageableBatchBuffer(count, from.buffer.shape()), count};
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(out.buffer.slot(i).data, from.buffer.slot(first + i).data, from.buffer.shape().bytes());
    out.buffer.labels()[i] = from.buffer.labels()[first + i];
  }
  return out;
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
    trainer.step(testing::quadrant_batch(static_cast<std::size_t>(o.batch), kShape, 200 + s).staged());
    out.push_back(trainer.last_step().loss);
  }
  if (weights) *weights = checkpoint_bytes(trainer, dir, "plain.ckpt");
  return out;
}

std::vector<double> parallel_losses(DataParallelTrainer& trainer, int batch, int steps) {
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) {
    trainer.step(testing::quadrant_batch(static_cast<std::size_t>(batch), kShape, 200 + s).staged());
    out.push_back(trainer.last_step().loss);
  }
  return out;
}

void print(const char* what, const std::vector<double>& losses) {
  std::printf("[ losses   ] %s:", what);
  for (const double l : losses) std::printf(" %.9g", l);
  std::printf("\n");
}

class OneReplica : public ::testing::TestWithParam<std::tuple<Precision, bool>> {};

TEST_P(OneReplica, ThroughNcclGivesExactlyThePlainTrainersLossesAndWeights) {
  CONVEYOR_REQUIRE_GPU();
  testing::Watchdog watchdog(std::chrono::minutes(5), "one replica through NCCL");
  TrainerOptions o = small(std::get<0>(GetParam()));
  o.cuda_graph = std::get<1>(GetParam());
  testing::TempDir dir;
  std::string plain_weights;
  const std::vector<double> expected = plain_losses(o, 8, dir, &plain_weights);
  DataParallelTrainer parallel(o, std::vector<int>{0});
  parallel.warmup();
  std::printf("[ placement] %s\n", parallel.placement().c_str());
  EXPECT_EQ(parallel.world_size(), 1);
  EXPECT_EQ(parallel.local_replicas(), 1u);
  const std::vector<double> got = parallel_losses(parallel, o.batch, 8);
  print("plain trainer", expected);
  print("data parallel, 1 replica", got);
  EXPECT_EQ(got, expected);
  EXPECT_TRUE(checkpoint_bytes(parallel.replica(0), dir, "parallel.ckpt") == plain_weights)
      << "the weights, statistics and momentum after 8 steps differ";
}

INSTANTIATE_TEST_SUITE_P(PrecisionsAndGraphs, OneReplica,
                         ::testing::Combine(::testing::Values(Precision::fp32, Precision::bf16),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_graph" : "_eager");
                         });

TEST(DataParallel, OneProcessWorldOfOneMeetsThroughTheFileRendezvousAndMatchesThePlainTrainer) {
  CONVEYOR_REQUIRE_GPU();
  testing::Watchdog watchdog(std::chrono::minutes(5), "world of one through the rendezvous");
  const TrainerOptions o = small(Precision::bf16);
  testing::TempDir dir;
  const std::vector<double> expected = plain_losses(o, 6, dir, nullptr);
  const std::unique_ptr<Rendezvous> rendezvous =
      connect_rendezvous(Ranks{}, "file://" + (dir / "meet").string());
  TrainerOptions by_rank = o;
  by_rank.device = -1;  // the local rank's GPU: 0
  DataParallelTrainer parallel(by_rank, *rendezvous);
  EXPECT_EQ(parallel.device(0), 0);
  EXPECT_EQ(parallel_losses(parallel, o.batch, 6), expected);
}

TEST(DataParallel, ABatchOfTheWrongSizeIsRefusedBeforeAnyReplicaStarts) {
  CONVEYOR_REQUIRE_GPU();
  testing::Watchdog watchdog(std::chrono::minutes(5), "a refused batch");
  DataParallelTrainer parallel(small(Precision::bf16), std::vector<int>{0});
  EXPECT_THROW(parallel.step(testing::quadrant_batch(16, kShape, 1).staged()), InvalidArgument);
  std::vector<DeviceBatch> two;
  two.push_back(testing::quadrant_batch(32, kShape, 1).staged());
  two.push_back(testing::quadrant_batch(32, kShape, 2).staged());
  EXPECT_THROW(parallel.step(two), InvalidArgument) << "two batches for one replica";
  // Nothing was started: the trainer goes on.
  EXPECT_NO_THROW(parallel.step(testing::quadrant_batch(32, kShape, 3).staged()));
  EXPECT_GT(parallel.last_step().loss, 0);
}

TEST(DataParallelTwoGpus, ReplicasFedTheSameBatchTrainExactlyLikeOneGpu) {
  CONVEYOR_REQUIRE_GPUS(2);
  testing::Watchdog watchdog(std::chrono::minutes(5), "two replicas, same batches");
  for (const Precision p : {Precision::fp32, Precision::bf16}) {
    const TrainerOptions o = small(p);
    testing::TempDir dir;
    std::string plain_weights;
    const std::vector<double> expected = plain_losses(o, 6, dir, &plain_weights);
    DataParallelTrainer parallel(o, std::vector<int>{0, 1});
    parallel.warmup();
    std::printf("[ placement] %s\n", parallel.placement().c_str());
    std::vector<double> got;
    for (int s = 0; s < 6; ++s) {
      const testing::HostBatch batch = testing::quadrant_batch(32, kShape, 200 + s);
      std::vector<DeviceBatch> batches;
      batches.push_back(batch.on_gpu(0));
      batches.push_back(batch.on_gpu(1));
      parallel.step(batches);
      got.push_back(parallel.last_step().loss);
    }
    print(to_string(p), got);
    // The average of two equal gradients is that gradient, exactly.
    EXPECT_EQ(got, expected) << to_string(p);
    EXPECT_TRUE(checkpoint_bytes(parallel.replica(0), dir, "r0.ckpt") == plain_weights) << to_string(p);
    EXPECT_TRUE(checkpoint_bytes(parallel.replica(1), dir, "r1.ckpt") == plain_weights) << to_string(p);
  }
}

TEST(DataParallelTwoGpus, ReplicasFedTwoHalvesFollowOneGpuOnTheWholeBatch) {
  CONVEYOR_REQUIRE_GPUS(2);
  testing::Watchdog watchdog(std::chrono::minutes(5), "two replicas, two halves");
  const int half = 64;
  TrainerOptions whole_options = small(Precision::fp32, 2 * half);
  Trainer whole(whole_options);
  DataParallelTrainer parallel(small(Precision::fp32, half), std::vector<int>{0, 1});
  testing::TempDir dir;
  std::vector<double> one, two;
  for (int s = 0; s < 6; ++s) {
    const testing::HostBatch batch = testing::quadrant_batch(2 * half, kShape, 300 + s);
    whole.step(batch.staged());
    one.push_back(whole.last_step().loss);
    std::vector<DeviceBatch> halves;
    halves.push_back(slice(batch, 0, half).staged());
    halves.push_back(slice(batch, half, half).staged());
    parallel.step(halves);
    two.push_back(parallel.last_step().loss);
    // The replicas took the same averaged step: their weights stay identical (statistics aside, which are
    // per replica until averaged).
  }
  print("one GPU, batch 128", one);
  print("two GPUs, batch 64 each", two);
  // Gradients are averaged exactly; only batch norm's statistics differ (64 images per replica, not 128).
  for (std::size_t i = 0; i < one.size(); ++i)
    EXPECT_TRUE(testing::within("step " + std::to_string(i) + " loss, 2 x 64 vs 1 x 128",
                                std::abs(two[i] - one[i]) / one[i], i == 0 ? 0.02 : 0.05));
  const std::string before0 = checkpoint_bytes(parallel.replica(0), dir, "a0.ckpt");
  const std::string before1 = checkpoint_bytes(parallel.replica(1), dir, "a1.ckpt");
  EXPECT_EQ(before0.size(), before1.size());
  EXPECT_NE(before0, before1) << "per-replica running statistics should differ before averaging";
  parallel.average_statistics();
  EXPECT_TRUE(checkpoint_bytes(parallel.replica(0), dir, "b0.ckpt") ==
              checkpoint_bytes(parallel.replica(1), dir, "b1.ckpt"))
      << "after average_statistics() the replicas' weights, statistics and momentum are identical";
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
  DataParallelTrainer parallel(o, std::vector<int>{0});
  parallel.warmup();
  std::printf("[ placement] %s\n", parallel.placement().c_str());
  EXPECT_TRUE(parallel.replica(0).warmup_report().graph);
  EXPECT_EQ(parallel_losses(parallel, o.batch, 6), expected);
}

}  // namespace
}  // namespace conveyor::train
