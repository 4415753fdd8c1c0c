// A training run the checkpoint tests start as a separate process: JPEGs from a folder through the whole
// stack (pipeline with a whole-epoch shuffle and random augmentation, feeder, CPU trainer), steps
// [from, to) where `from` comes from --resume's checkpoint (0 without), one loss per line on stdout, and a
// checkpoint with the data iterator's state at the end.
//
//   resume_tool DATA_DIR TO_STEP THREADS CHECKPOINT_OUT [RESUME_FROM]
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/train/trainer.h"

int main(int argc, char** argv) try {
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: resume_tool DATA_DIR TO_STEP THREADS CHECKPOINT_OUT [RESUME_FROM]\n");
    return 2;
  }
  const std::string data = argv[1], out = argv[4];
  const auto to_step = std::strtoull(argv[2], nullptr, 10);
  const int threads = std::atoi(argv[3]);
  namespace ops = conveyor::ops;
  const conveyor::BatchedDataset batches =
      conveyor::Dataset::image_folder(data)
          .shuffle()
          .repeat()
          .map(ops::decode_random_resized_crop(16))
          .map(ops::flip_horizontal(0.5))
          .with_options({.threads = threads, .seed = 21})
          .batch(8, conveyor::ImageShape{16, 16, 3}, /*drop_remainder=*/true);

  conveyor::train::TrainerOptions options;
  options.num_classes = 3;
  options.input = {16, 16, 3};
  options.batch = 8;
  options.width = 4;
  options.blocks_per_stage = 1;
  options.learning_rate = 0.05;
  options.seed = 5;
  conveyor::train::Trainer trainer(options);
  conveyor::train::TrainingProgress progress;
  if (argc == 6) progress = trainer.load_checkpoint(argv[5]);

  conveyor::DeviceFeeder feeder(conveyor::resolve(conveyor::DeviceSpec::parse("cpu")), {.depth = 2});
  conveyor::DeviceBatchIterator it = argc == 6 ? feeder.feed(batches, progress.data) : feeder.feed(batches);
  for (; progress.steps < to_step; ++progress.steps) {
    std::optional<conveyor::DeviceBatch> batch = it.next();
    if (!batch) throw std::runtime_error("the data ended early");
    // A schedule that depends on the step, as a real one does: resumed, it must go on where it was.
    trainer.set_learning_rate(0.05 / (1.0 + 0.1 * static_cast<double>(progress.steps)));
    trainer.step(*batch);
    std::printf("%.17g\n", trainer.last_step().loss);
  }
  progress.data = it.state();
  trainer.save_checkpoint(out, progress);
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "resume_tool: %s\n", error.what());
  return 1;
}
