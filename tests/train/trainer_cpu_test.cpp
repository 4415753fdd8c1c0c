// The Trainer on the CPU reference: it learns, it is deterministic, it checkpoints, it rejects bad input.
#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>

#include <cmath>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/error.h"
#include "conveyor/ops/flip.h"
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

// The feeder's images() as the model's input (FeederOptions::normalize = input_normalization()): the step
// copies them instead of normalizing pixels(). Proven by augmented images (flip with p = 1), which differ
// from pixels(): the step must equal the step on batches flipped by hand.
TEST(TrainerCpu, TakesTheFeedersImagesWhenTheyAreItsInput) {
  Trainer with_images(tiny_options(5)), flipped_by_hand(tiny_options(5)), plain(tiny_options(5));
  const ops::NormalizeParams input = with_images.input_normalization();
  EXPECT_EQ(input.type, ops::ElementType::float32);
  EXPECT_EQ(input.layout, ops::TensorLayout::hwc);
  FeederOptions options;
  options.depth = 1;
  options.normalize = input;
  options.augment.flip_horizontal = 1.0;
  DeviceFeeder feeder(Placement{}, options);
  for (int step = 0; step < 3; ++step) {
    const auto batch = testing::quadrant_batch(16, kShape, 300 + step);
    with_images.step(feeder.stage(batch.buffer.batch(batch.size)));
    plain.step(batch.staged());
    for (std::size_t i = 0; i < batch.size; ++i) ops::flip_horizontal(batch.image(i));
    flipped_by_hand.step(batch.staged());
    const double a = with_images.last_step().loss, b = flipped_by_hand.last_step().loss;
    EXPECT_EQ(a, b) << "step " << step;
    EXPECT_NE(a, plain.last_step().loss) << "step " << step << ": the flip did not reach the model";
  }
}

TEST(TrainerCpu, AugmentedImagesInAnotherFormThanTheInputAreAnError) {
  Trainer trainer(tiny_options(5));
  FeederOptions options;
  options.depth = 1;
  options.normalize = trainer.input_normalization();
  options.normalize->mean[0] = 3;  // not the trainer's mean
  options.augment.flip_horizontal = 0.5;
  DeviceFeeder feeder(Placement{}, options);
  const auto batch = testing::quadrant_batch(16, kShape, 1);
  try {
    trainer.step(feeder.stage(batch.buffer.batch(batch.size)));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("input_normalization"), std::string::npos) << error.what();
  }
  // Plain normalized images in another form are simply not used: the step normalizes pixels().
  options.augment = {};
  DeviceFeeder normalizing(Placement{}, options);
  EXPECT_NO_THROW(trainer.step(normalizing.stage(batch.buffer.batch(batch.size))));
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
