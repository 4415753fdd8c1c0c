// The Trainer on the CPU reference: it learns, it is deterministic, it checkpoints, it rejects bad input.
#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>

#include <cmath>

#include "conveyor/error.h"
#include "conveyor/train/trainer.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"
#include "tests/train/synthetic_batches.h"

namespace conveyor::train {
namespace {

using namespace std::chrono_literals;

constexpr ImageShape kShape{8, 8, 1};

TrainerOptions tiny_options(std::uint64_t seed = 1) {
  TrainerOptions o;
  o.model = ModelKind::small_resnet;
  o.num_classes = 4;
  o.input = kShape;
  o.batch = 16;
  o.width = 4;
  o.blocks_per_stage = 1;
  o.learning_rate = 0.05;
  o.weight_decay = 1e-4;
  o.seed = seed;
  return o;
}

TEST(TrainerCpu, LearnsASeparableProblemWellBelowChanceLoss) {
  testing::Watchdog watchdog(60s, "TrainerCpu.Learns");
  Trainer trainer(tiny_options());
  for (int step = 0; step < 60; ++step)
    trainer.step(testing::quadrant_batch(16, kShape, 100 + step).staged());
  EXPECT_LT(trainer.last_step().loss, 0.25 * std::log(4.0));
  const EvalResult held_out = trainer.evaluate(testing::quadrant_batch(16, kShape, 999).staged());
  EXPECT_GE(held_out.accuracy(), 0.9);
  EXPECT_EQ(held_out.count, 16u);
}

TEST(TrainerCpu, SameSeedGivesTheSameLossesAtAnyThreadCount) {
  auto losses = [](int threads) {
    std::vector<double> out;
    tbb::task_arena(threads).execute([&] {
      Trainer trainer(tiny_options(7));
      for (int step = 0; step < 3; ++step) {
        trainer.step(testing::quadrant_batch(16, kShape, step).staged());
        out.push_back(trainer.last_step().loss);
      }
    });
    return out;
  };
  EXPECT_EQ(losses(1), losses(3));
}

TEST(TrainerCpu, CheckpointRoundTripRestoresWeightsStatisticsAndMomentum) {
  testing::TempDir dir;
  const auto path = dir.path() / "model.ckpt";
  Trainer a(tiny_options(1));
  for (int step = 0; step < 3; ++step) a.step(testing::quadrant_batch(16, kShape, step).staged());
  a.save(path);

  Trainer b(tiny_options(2));  // other initial weights
  b.load(path);
  const auto probe = testing::quadrant_batch(16, kShape, 50);
  const EvalResult ea = a.evaluate(probe.staged()), eb = b.evaluate(probe.staged());
  EXPECT_EQ(ea.correct, eb.correct);
  EXPECT_DOUBLE_EQ(ea.loss_sum, eb.loss_sum);
  // The next step uses the momentum buffers too.
  a.step(probe.staged());
  b.step(probe.staged());
  EXPECT_DOUBLE_EQ(a.last_step().loss, b.last_step().loss);
  a.step(probe.staged());
  b.step(probe.staged());
  EXPECT_DOUBLE_EQ(a.last_step().loss, b.last_step().loss);
}

TEST(TrainerCpu, LoadRejectsAnotherModelAndAMissingFile) {
  testing::TempDir dir;
  const auto path = dir.path() / "model.ckpt";
  Trainer(tiny_options()).save(path);
  TrainerOptions wider = tiny_options();
  wider.width = 8;
  Trainer other(wider);
  EXPECT_THROW(other.load(path), InvalidArgument);
  EXPECT_THROW(other.load(dir.path() / "missing.ckpt"), IoError);
}

TEST(TrainerCpu, EvaluationLeavesTheModelUnchanged) {
  Trainer a(tiny_options(3)), b(tiny_options(3));
  const auto batch = testing::quadrant_batch(16, kShape, 5);
  const EvalResult first = a.evaluate(batch.staged()), second = a.evaluate(batch.staged());
  EXPECT_DOUBLE_EQ(first.loss_sum, second.loss_sum);
  a.step(batch.staged());
  b.step(batch.staged());
  EXPECT_DOUBLE_EQ(a.last_step().loss, b.last_step().loss);
}

TEST(TrainerCpu, EvaluatesAPartialBatch) {
  Trainer trainer(tiny_options());
  const EvalResult r = trainer.evaluate(testing::quadrant_batch(5, kShape, 8).staged());
  EXPECT_EQ(r.count, 5u);
  EXPECT_TRUE(std::isfinite(r.loss_sum));
}

TEST(TrainerCpu, RejectsPartialBatchesWrongShapesAndBadLabels) {
  Trainer trainer(tiny_options());
  EXPECT_THROW(trainer.step(testing::quadrant_batch(15, kShape, 1).staged()), InvalidArgument);
  EXPECT_THROW(trainer.step(testing::quadrant_batch(16, ImageShape{8, 8, 3}, 1).staged()), InvalidArgument);
  auto bad = testing::quadrant_batch(16, kShape, 1);
  bad.labels()[3] = 4;
  trainer.step(bad.staged());
  EXPECT_THROW(trainer.last_step(), InvalidArgument);
}

TEST(TrainerCpu, PlacementNamesTheCpuReference) {
  Trainer trainer(tiny_options());
  trainer.warmup();
  EXPECT_NE(trainer.placement().find("CPU reference"), std::string::npos);
  EXPECT_GT(trainer.warmup_seconds(), 0.0);
}

TEST(TrainerCpu, AskingForAGpuWithoutOneIsAClearError) {
  TrainerOptions o = tiny_options();
  o.device = 64;
  Trainer trainer(o);
  EXPECT_THROW(trainer.warmup(), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::train
