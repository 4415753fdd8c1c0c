// The README's example, compiled so that it stays true: trains ResNet-18 for a few steps on an
// ImageFolder tree. usage: quickstart DIR [steps]
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "conveyor/conveyor.h"

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: quickstart DIR [steps]\n");
    return 2;
  }
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  const auto placement = conveyor::resolve(conveyor::DeviceSpec::parse("auto"));
  const int batch_size = placement.gpu ? 256 : 8;
  const int size = placement.gpu ? 224 : 64;  // the CPU reference is slow: a small input there

  auto train = conveyor::Dataset::image_folder(argv[1])  // (bytes, label) from class folders
                   .shuffle(10'000, /*seed=*/42)
                   .repeat()
                   .map(conveyor::ops::decode_random_resized_crop(size))  // decodes only the crop window
                   .map(conveyor::ops::flip_horizontal(0.5))
                   .map(conveyor::ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4}))
                   .with_options({.seed = 42})                   // threads: all cores by default
                   .batch(static_cast<std::size_t>(batch_size))  // straight into the batch's memory
                   .prefetch(4);
  conveyor::DeviceFeeder feeder(placement, {.depth = 3});  // copies overlap the steps
  conveyor::train::Trainer trainer({.model = conveyor::train::ModelKind::resnet18,
                                    .num_classes = static_cast<int>(train.class_names().size()),
                                    .input = {size, size, 3},
                                    .batch = batch_size,
                                    .device = placement.gpu ? placement.device : -1});
  trainer.warmup();  // first-step costs, up front
  std::printf("%s\n%s\n", placement.description.c_str(), trainer.placement().c_str());
  auto batches = feeder.feed(train);  // pinned buffers, copied ahead, each held until the step has read it
  for (int step = 0; step < steps; ++step) {
    std::optional<conveyor::DeviceBatch> batch = batches.next();
    trainer.step(*batch);
    if ((step + 1) % 10 == 0) std::printf("step %d: loss %.3f\n", step + 1, trainer.last_step().loss);
  }
  trainer.synchronize();
  std::printf("%s\n", conveyor::format_stats(batches.stats()).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "quickstart: %s\n", e.what());
  return 1;
}
