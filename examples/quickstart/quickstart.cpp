// The README's example, compiled so that it stays true: trains ResNet-18 for a few steps on an
// ImageFolder tree.
//   quickstart DIR [STEPS] [--gpus N]           one GPU (or the CPU), or N GPUs of this process
//   scripts/launch.sh N quickstart DIR [STEPS]  one process per GPU (torchrun and mpirun work too)
// With several GPUs the model is data-parallel over NCCL: each replica reads its share of the data,
// batches of 256 per GPU, gradients averaged after every step.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/conveyor.h"

namespace {

int train_one(const char* dir, int steps) {
  const auto placement = conveyor::resolve(conveyor::DeviceSpec::parse("auto"));
  const int batch_size = placement.gpu ? 256 : 8;
  const int size = placement.gpu ? 224 : 64;  // the CPU reference is slow: a small input there

  auto train = conveyor::Dataset::image_folder(dir)  // (bytes, label) from class folders
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
}

// Data parallel: `gpus` GPUs in this process, or this process's GPU among the launcher's ranks.
int train_data_parallel(const char* dir, int steps, int gpus, const conveyor::Ranks& ranks) {
  std::vector<int> devices;
  if (ranks.world_size > 1)
    devices.push_back(ranks.local_rank);  // one process per GPU
  else
    for (int d = 0; d < gpus; ++d) devices.push_back(d);
  const std::size_t replicas = static_cast<std::size_t>(ranks.world_size) * devices.size();
  const auto folder = conveyor::Dataset::image_folder(dir);
  const conveyor::train::TrainerOptions options{.model = conveyor::train::ModelKind::resnet18,
                                                .num_classes = static_cast<int>(folder.class_names().size()),
                                                .input = {224, 224, 3},
                                                .batch = 256,  // per GPU
                                                .device = devices[0]};
  std::unique_ptr<conveyor::train::Rendezvous> rendezvous;
  std::unique_ptr<conveyor::train::DataParallelTrainer> trainer;
  if (ranks.world_size > 1) {
    rendezvous = conveyor::train::connect_rendezvous(ranks);  // MASTER_ADDR:MASTER_PORT
    trainer = std::make_unique<conveyor::train::DataParallelTrainer>(options, *rendezvous);
  } else {
    trainer = std::make_unique<conveyor::train::DataParallelTrainer>(options, devices);
  }
  trainer->warmup();
  if (ranks.is_main()) std::printf("%s\n", trainer->placement().c_str());

  // The host's cores shared out between the pipelines running on it.
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int threads = std::max(1, cores / (ranks.local_world_size * static_cast<int>(devices.size())));
  std::vector<std::unique_ptr<conveyor::DeviceFeeder>> feeders;
  std::vector<conveyor::DeviceBatchIterator> batches;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    // Every replica shards the same shuffled order: element q of an epoch goes to replica q % replicas,
    // and padding gives all of them the same number of batches.
    const std::size_t replica = static_cast<std::size_t>(ranks.rank) * devices.size() + i;
    auto train = folder.shuffle(10'000, /*seed=*/42)
                     .repeat()
                     .shard(replicas, replica, conveyor::ShardRemainder::pad)
                     .map(conveyor::ops::decode_random_resized_crop(224))
                     .map(conveyor::ops::flip_horizontal(0.5))
                     .map(conveyor::ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4}))
                     .with_options({.threads = threads, .seed = 42})
                     .batch(256)
                     .prefetch(4);
    const auto placement =
        conveyor::resolve(conveyor::DeviceSpec::parse("gpu:" + std::to_string(devices[i])));
    feeders.push_back(
        std::make_unique<conveyor::DeviceFeeder>(placement, conveyor::FeederOptions{.depth = 3}));
    batches.push_back(feeders.back()->feed(train));
  }
  for (int step = 0; step < steps; ++step) {
    std::vector<conveyor::DeviceBatch> step_batches;
    for (auto& it : batches) step_batches.push_back(*it.next());
    trainer->step(step_batches);
    if ((step + 1) % 10 == 0) {
      const double loss = trainer->last_step().loss;  // every rank calls it: the average is a collective
      if (ranks.is_main()) std::printf("step %d: loss %.3f (all %zu replicas)\n", step + 1, loss, replicas);
    }
  }
  trainer->synchronize();
  if (ranks.is_main()) std::printf("%s\n", conveyor::format_stats(batches[0].stats()).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string dir;
  int steps = 20;
  int gpus = 1;
  CLI::App app("quickstart: trains ResNet-18 for a few steps on an ImageFolder tree (the README's example)");
  app.add_option("dir", dir, "ImageFolder root: one folder of JPEGs per class (required)");
  app.add_option("steps", steps, "training steps")->capture_default_str()->check(CLI::Range(0, 1000000));
  app.add_option("--gpus", gpus, "GPUs of this process, data-parallel (under a launcher: one per process)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  try {
    app.parse(argc, argv);
    // Checked here rather than with required(): CLI11 would report it before an unknown flag.
    if (dir.empty()) throw CLI::RequiredError("dir");
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; a usage error: its message and 2
  }
  const conveyor::Ranks ranks = conveyor::ranks_from_environment();  // set by a launcher
  if (ranks.world_size > 1 && gpus > 1) {
    std::fprintf(stderr, "quickstart: under a launcher each process trains on one GPU; drop --gpus\n");
    return 2;
  }
  if (ranks.world_size > 1 || gpus > 1) return train_data_parallel(dir.c_str(), steps, gpus, ranks);
  return train_one(dir.c_str(), steps);
} catch (const std::exception& e) {
  std::fprintf(stderr, "quickstart: %s\n", e.what());
  return 1;
}
