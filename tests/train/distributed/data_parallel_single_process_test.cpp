// DataParallelTrainer in a process that is the whole job, on the CPU: no launcher, no MPI, no NCCL; it trains
// exactly as a plain Trainer does, so one program serves one process and many. And what it refuses before
// any rank could wait on it: CPU ranks that no MPI launcher started, batches of the wrong size, timeouts
// that are not positive.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/train/data_parallel.h"
#include "peer_runs.h"
#include "support/temp_dir.h"
#include "tests/train/synthetic_batches.h"

namespace conveyor::train {
namespace {

constexpr ImageShape kShape{16, 16, 1};

TrainerOptions small() {
  using namespace layers;
  TrainerOptions o;
  o.network = {conv(8, 3), batch_norm(), relu(), max_pool(2, 2), global_avg_pool(), dense(4)};
  o.num_classes = 4;
  o.input = kShape;
  o.batch = 8;
  o.learning_rate = 0.05;
  o.seed = 3;
  return o;
}

TEST(DataParallelSingleProcess, TrainsExactlyAsAPlainTrainer) {
  const TrainerOptions o = small();
  Trainer plain(o);
  DataParallelTrainer parallel(o, Ranks{});
  parallel.warmup();
  EXPECT_EQ(parallel.world_size(), 1);
  EXPECT_EQ(parallel.rank(), 0);
  EXPECT_NE(parallel.placement().find("one rank"), std::string::npos) << parallel.placement();
  std::vector<double> expected, got;
  for (int s = 0; s < 4; ++s) {
    const testing::HostBatch batch = testing::quadrant_batch(8, kShape, 40 + static_cast<std::uint64_t>(s));
    plain.step(batch.staged());
    expected.push_back(plain.last_step().loss);
    parallel.step(batch.staged());
    got.push_back(parallel.last_step().loss);
  }
  EXPECT_EQ(got, expected);
  parallel.average_statistics();
  parallel.barrier();
  testing::TempDir dir;
  plain.save_checkpoint(dir / "plain.json");
  parallel.trainer().save_checkpoint(dir / "parallel.json");
  EXPECT_TRUE(testing::checkpoint_bytes(dir.path(), "plain") ==
              testing::checkpoint_bytes(dir.path(), "parallel"))
      << "the weights, statistics and momentum after 4 steps differ";
}

TEST(DataParallelSingleProcess, CpuRanksThatNoMpiLauncherStartedAreRefused) {
  Ranks ranks;
  ranks.rank = 0;
  ranks.world_size = 2;
  ranks.master_addr = "127.0.0.1";
  ranks.master_port = 29500;
  ranks.source = RankSource::torchrun;
  try {
    DataParallelTrainer trainer(small(), ranks);
    FAIL() << "made a CPU trainer of two ranks without MPI";
  } catch (const InvalidArgument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("needs an MPI launcher"), std::string::npos) << message;
    EXPECT_NE(message.find("torchrun's variables"), std::string::npos) << message;
    EXPECT_NE(message.find("mpirun -np N"), std::string::npos) << message;
  }
}

TEST(DataParallelSingleProcess, ABatchOfTheWrongSizeIsRefusedBeforeTheStepBegins) {
  DataParallelTrainer parallel(small(), Ranks{});
  EXPECT_THROW(parallel.step(testing::quadrant_batch(4, kShape, 1).staged()), InvalidArgument);
  EXPECT_THROW(parallel.step(testing::quadrant_batch(8, ImageShape{8, 8, 1}, 1).staged()), InvalidArgument);
  // Nothing was begun: the trainer goes on.
  EXPECT_NO_THROW(parallel.step(testing::quadrant_batch(8, kShape, 3).staged()));
  EXPECT_GT(parallel.last_step().loss, 0);
  EXPECT_EQ(parallel.steps(), 1u);
}

TEST(DataParallelSingleProcess, RefusesTimeoutsAndBucketsThatAreNotPositive) {
  EXPECT_THROW(DataParallelTrainer(small(), Ranks{}, {.bucket_bytes = 0}), InvalidArgument);
  EXPECT_THROW(DataParallelTrainer(small(), Ranks{}, {.connect_timeout = std::chrono::milliseconds(0)}),
               InvalidArgument);
  EXPECT_THROW(DataParallelTrainer(small(), Ranks{}, {.collective_timeout = std::chrono::milliseconds(-1)}),
               InvalidArgument);
  EXPECT_THROW(DataParallelTrainer(small(), Ranks{}, {.abort_grace = std::chrono::milliseconds(-1)}), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::train
