// The whole stack on real data nobody here made: Fashion-MNIST JPEG files (made from Debian's
// dataset-fashion-mnist by the fixture) -> the pipeline (decode, pad 4 + random crop 28, flip) -> batches
// -> the feeder -> the trainer (the CPU reference without a GPU). A short run on a subset must learn:
// test accuracy far above the 10 % of chance. This checks learning, not speed.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "conveyor/conveyor.h"

namespace conveyor {
namespace {

const std::filesystem::path kData = CONVEYOR_TEST_FASHION_MNIST;

TEST(FashionMnist, AShortRunOnASubsetLearnsFarAboveChance) {
  ASSERT_TRUE(std::filesystem::exists(kData / "train.txt")) << "the fashion_mnist_jpegs fixture did not run";
  constexpr int kBatch = 64, kEpochs = 3;
  constexpr std::size_t kTrain = 2048, kTest = 1024;
  const ImageShape shape{28, 28, 1};
  const auto decode_gray = ops::decode({.color = ops::ColorMode::gray});

  // Always the CPU reference: the same check everywhere, and the GPU has its own tests.
  const Placement cpu = resolve(DeviceSpec::parse("cpu"));
  train::TrainerOptions options;
  options.model = train::ModelKind::small_resnet;
  options.input = shape;
  options.batch = kBatch;
  options.width = 8;
  options.blocks_per_stage = 1;
  options.learning_rate = 0.05;
  options.mean = {72.94f, 72.94f, 72.94f};
  options.std = {90.02f, 90.02f, 90.02f};
  options.seed = 3;
  train::Trainer trainer(options);
  DeviceFeeder feeder(cpu, {.depth = 3});

  PipelineOptions pipeline;
  const Dataset train_files = Dataset::list_file(kData / "train.txt").shuffle(60'000, 11).take(kTrain);
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    pipeline.seed = combine_seeds(5, static_cast<std::uint64_t>(epoch));
    const auto batches = train_files.map(decode_gray)
                             .map(ops::random_crop(28, 28, /*padding=*/4))
                             .map(ops::flip_horizontal(0.5))
                             .with_options(PipelineOptionChanges::all(pipeline))
                             .batch(kBatch, shape, /*drop_remainder=*/true)
                             .prefetch(2);
    for (const DeviceBatch& batch : feeder.feed(batches)) trainer.step(batch);
  }

  const auto test_batches = Dataset::list_file(kData / "test.txt")
                                .take(kTest)
                                .map(decode_gray)
                                .with_options(PipelineOptionChanges::all(pipeline))
                                .batch(kBatch, shape)
                                .prefetch(2);
  std::size_t correct = 0, seen = 0;
  for (const DeviceBatch& batch : feeder.feed(test_batches)) {
    const train::EvalResult result = trainer.evaluate(batch);
    correct += result.correct;
    seen += result.count;
  }
  ASSERT_EQ(seen, kTest);
  const double accuracy = static_cast<double>(correct) / static_cast<double>(seen);
  RecordProperty("test_accuracy", std::to_string(accuracy));
  std::printf("Fashion-MNIST subset: %zu training images x %d epochs, test accuracy %.1f %% on %zu images\n",
              kTrain, kEpochs, 100 * accuracy, seen);
  EXPECT_GT(accuracy, 0.5) << "chance is 0.1";
}

}  // namespace
}  // namespace conveyor
