// The README's example, compiled so that it stays true: trains ResNet-18 for a few steps on an
// ImageFolder tree, in one process or data-parallel in several:
//   quickstart DIR [STEPS]                         one process: GPU 0, or the CPU
//   scripts/launch.sh N quickstart DIR [STEPS]     N processes on this host: a GPU each, or N on the CPU
//   torchrun / mpirun -np N / srun ... quickstart DIR [STEPS]   the same, on one host or many
// Each rank reads its share of the data (batches of 256 per GPU); the gradients are averaged over the ranks
// after every step. Ends with "final loss A -> B": the mean loss of the first and of the last ten steps,
// averaged over every rank, so every rank prints the same line.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include "conveyor/conveyor.h"
#include "rank_placement.h"

namespace {

int train(const std::string& dir, int steps) {
  const conveyor::Ranks ranks = conveyor::ranks_from_environment();  // the launcher's; rank 0 of 1 alone
  const conveyor::Placement placement = example_support::rank_placement("auto", ranks);
  const int batch_size = placement.gpu ? 256 : 8;
  const int size = placement.gpu ? 224 : 64;  // the CPU reference is slow: a small input there

  auto train =
      conveyor::Dataset::image_folder(dir)  // (bytes, label) from class folders
          .shuffle(10'000, /*seed=*/42)
          .repeat()
          .shard(ranks)  // this rank's share: every rank gets as many batches
          .map(conveyor::ops::decode_random_resized_crop(size))  // decodes only the crop window
          .map(conveyor::ops::flip_horizontal(0.5))
          .map(conveyor::ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4}))
          // this rank's share of the host's cores, a thread on each
          .with_options({.seed = 42, .cpus = conveyor::cpu_share(ranks.local_rank, ranks.local_world_size)})
          .batch(static_cast<std::size_t>(batch_size))  // straight into the batch's memory
          .prefetch(4);
  conveyor::DeviceFeeder feeder(placement, {.depth = 3});  // copies overlap the steps
  conveyor::train::DataParallelTrainer trainer({.model = conveyor::train::ModelKind::resnet18,
                                                .num_classes = static_cast<int>(train.class_names().size()),
                                                .input = {size, size, 3},
                                                .batch = batch_size,
                                                .device = placement.gpu ? placement.device : -1},
                                               ranks);  // alone: a plain Trainer's steps
  trainer.warmup();  // first-step costs, up front
  if (ranks.is_main()) std::printf("%s\n%s\n", placement.description.c_str(), trainer.placement().c_str());
  auto batches = feeder.feed(train);  // pinned buffers, copied ahead, each held until the step has read it
  std::vector<double> first, last;    // losses of the first and last ten steps
  for (int step = 0; step < steps; ++step) {
    std::optional<conveyor::DeviceBatch> batch = batches.next();
    trainer.step(*batch);
    // Reading the loss waits for the step, and averaging it over the ranks is a collective: every rank
    // asks at the same steps, and only where the loss is wanted.
    if (step < 10 || step >= steps - 10 || (step + 1) % 10 == 0) {
      const double loss = trainer.last_step().loss;
      if (step < 10) first.push_back(loss);
      if (step >= steps - 10) last.push_back(loss);
      if ((step + 1) % 10 == 0 && ranks.is_main()) std::printf("step %d: loss %.3f\n", step + 1, loss);
    }
  }
  trainer.synchronize();
  if (ranks.is_main()) std::printf("%s\n", conveyor::format_stats(batches.stats()).c_str());
  const auto mean = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  std::printf("final loss %.4f -> %.4f\n", mean(first), mean(last));
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string dir;
  int steps = 20;
  CLI::App app("quickstart: trains ResNet-18 for a few steps on an ImageFolder tree (the README's example)");
  app.add_option("dir", dir, "ImageFolder root: one folder of JPEGs per class (required)");
  app.add_option("steps", steps, "training steps")->capture_default_str()->check(CLI::Range(1, 1000000));
  try {
    app.parse(argc, argv);
    // Checked here rather than with required(): CLI11 would report it before an unknown flag.
    if (dir.empty()) throw CLI::RequiredError("dir");
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; a usage error: its message and 2
  }
  return train(dir, steps);
} catch (const std::exception& e) {
  std::fprintf(stderr, "quickstart: %s\n", e.what());
  return 1;
}
