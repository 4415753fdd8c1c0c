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
  const auto path = dir.path() / "model.json";
  Trainer a(tiny_options(1));
  for (int step = 0; step < 3; ++step) a.step(testing::quadrant_batch(16, kShape, step).staged());
  a.save_checkpoint(path, {.steps = 3});

  Trainer b(tiny_options(2));  // other initial weights
  EXPECT_EQ(b.load_checkpoint(path).steps, 3u);
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
  const auto path = dir.path() / "model.json";
  Trainer(tiny_options()).save_checkpoint(path);
  TrainerOptions wider = tiny_options();
  wider.width = 8;
  Trainer other(wider);
  EXPECT_THROW(other.load_checkpoint(path), InvalidArgument);
  EXPECT_THROW(other.load_checkpoint(dir.path() / "missing.json"), IoError);
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

TEST(TrainerCpu, EvaluationSumsBatchesUntilTakenThenStartsAgain) {
  Trainer trainer(tiny_options(4));
  const auto a = testing::quadrant_batch(16, kShape, 20), b = testing::quadrant_batch(16, kShape, 21),
             c = testing::quadrant_batch(5, kShape, 22);
  const EvalResult ra = trainer.evaluate(a.staged()), rb = trainer.evaluate(b.staged()),
                   rc = trainer.evaluate(c.staged());
  trainer.add_to_evaluation(a.staged());
  trainer.add_to_evaluation(b.staged());
  trainer.add_to_evaluation(c.staged());
  const EvalResult all = trainer.take_evaluation();
  EXPECT_EQ(all.count, 37u);
  EXPECT_EQ(all.correct, ra.correct + rb.correct + rc.correct);
  EXPECT_NEAR(all.loss_sum, ra.loss_sum + rb.loss_sum + rc.loss_sum, 1e-9 * all.loss_sum);
  const EvalResult next = trainer.take_evaluation();
  EXPECT_EQ(next.count, 0u);
  EXPECT_EQ(next.loss_sum, 0.0);
}

TEST(TrainerCpu, AnEvaluatedLabelOutOfRangeThrowsWhenTheSumsAreTaken) {
  Trainer trainer(tiny_options());
  auto bad = testing::quadrant_batch(16, kShape, 1);
  bad.labels()[3] = 4;
  trainer.add_to_evaluation(testing::quadrant_batch(16, kShape, 2).staged());
  trainer.add_to_evaluation(bad.staged());
  try {
    trainer.take_evaluation();
    FAIL() << "a label of 4 with 4 classes was counted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("1 of the 32 images"), std::string::npos) << e.what();
  }
  trainer.add_to_evaluation(testing::quadrant_batch(16, kShape, 2).staged());
  EXPECT_EQ(trainer.take_evaluation().count, 16u);  // the sums started again
}

// The images of a batch mirrored left-right, with the batch's labels unchanged.
testing::HostBatch mirrored(const testing::HostBatch& batch) {
  testing::HostBatch out = testing::quadrant_batch(batch.size, kShape, 0);
  for (std::size_t i = 0; i < batch.size; ++i) {
    const ImageView from = batch.image(i), to = out.image(i);
    for (int y = 0; y < kShape.height; ++y)
      for (int x = 0; x < kShape.width; ++x)
        to.data[static_cast<std::size_t>(y) * to.stride + static_cast<std::size_t>(x)] =
            from.data[static_cast<std::size_t>(y) * from.stride +
                      static_cast<std::size_t>(kShape.width - 1 - x)];
    out.labels()[i] = batch.labels()[i];
  }
  return out;
}

TEST(TrainerCpu, EvaluationWithTheMirrorImageSeesAnImageAndItsMirrorAlike) {
  TrainerOptions o = tiny_options(5);
  Trainer plain(o);
  o.evaluate_flipped = true;
  Trainer flipped(o);
  for (int step = 0; step < 5; ++step) {
    const auto batch = testing::quadrant_batch(16, kShape, 300 + step);
    plain.step(batch.staged());
    flipped.step(batch.staged());
  }
  const auto batch = testing::quadrant_batch(16, kShape, 77), same_labels = mirrored(batch);
  // Mean of the logits of x and mirror(x) is the same for mirror(x): same loss against the same labels.
  const EvalResult a = flipped.evaluate(batch.staged()), b = flipped.evaluate(same_labels.staged());
  EXPECT_EQ(a.loss_sum, b.loss_sum);
  EXPECT_EQ(a.correct, b.correct);
  // Without the mirror pass the two differ (the check above could not fail otherwise).
  EXPECT_NE(plain.evaluate(batch.staged()).loss_sum, plain.evaluate(same_labels.staged()).loss_sum);
}

TEST(TrainerCpu, LabelSmoothingChangesTheTrainingLossOnly) {
  TrainerOptions o = tiny_options(6);
  Trainer hard(o);
  o.label_smoothing = 0.3;
  Trainer smooth(o);
  const auto probe = testing::quadrant_batch(16, kShape, 40);
  EXPECT_EQ(hard.evaluate(probe.staged()).loss_sum, smooth.evaluate(probe.staged()).loss_sum);
  hard.step(probe.staged());
  smooth.step(probe.staged());
  EXPECT_NE(hard.last_step().loss, smooth.last_step().loss);
}

TEST(TrainerCpu, TheCpuRunsEagerlyWhateverCudaGraphSays) {
  TrainerOptions o = tiny_options(8);
  o.cuda_graph = true;
  Trainer asked(o);
  o.cuda_graph = false;
  Trainer eager(o);
  asked.warmup();
  const WarmupReport& r = asked.warmup_report();
  EXPECT_FALSE(r.graph);
  EXPECT_EQ(r.graph_fallback, "");
  EXPECT_EQ(r.algorithm_cache.file, "") << "no cuDNN on the CPU, no algorithm cache";
  EXPECT_EQ(asked.placement().find("graph"), std::string::npos) << asked.placement();
  for (int step = 0; step < 3; ++step) {
    const auto batch = testing::quadrant_batch(16, kShape, 60 + step);
    asked.step(batch.staged());
    eager.step(batch.staged());
    EXPECT_EQ(asked.last_step().loss, eager.last_step().loss) << "step " << step;
  }
}

TEST(TrainerCpu, TheWarmupReportAccountsForItsParts) {
  Trainer trainer(tiny_options());
  trainer.warmup();
  const WarmupReport& r = trainer.warmup_report();
  EXPECT_EQ(r.seconds, trainer.warmup_seconds());
  EXPECT_GT(r.prepare_seconds + r.first_step_seconds, 0.0);
  EXPECT_LE(r.context_seconds + r.prepare_seconds + r.first_step_seconds + r.capture_seconds,
            r.seconds + 1e-6);
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
