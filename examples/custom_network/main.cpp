// custom_network: a network defined here, in the program, trained by conveyor's Trainer on the
// Fashion-MNIST JPEGs. The Trainer builds it on the CPU reference or on a GPU, where it gets what the
// built-in ResNets get: cuDNN with cached algorithms, the step replayed as a CUDA graph, safetensors
// checkpoints under PyTorch's names. Started by a launcher it trains data-parallel: each rank on its share
// of the data, the gradients averaged after every step (N CPU processes through MPI, or a GPU each).
//
//   custom_network --data DIR --steps N [--device cpu|gpu] [--batch B] [--lr LR] [--checkpoint FILE]
//   scripts/launch.sh 2 custom_network --data DIR --device cpu      (mpirun -np 2, torchrun, srun alike)
//
// Prints the network, its parameters' names, one line per step, and at the end "final loss A -> B": the
// mean loss of the first and of the last ten steps, averaged over all ranks (every rank prints it; rank 0
// prints the rest and saves the checkpoint).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "conveyor/conveyor.h"
#include "device_option.h"
#include "rank_placement.h"

namespace {

using conveyor::train::NetworkDescription;

// The network, as data: a small residual network for 28x28 gray images. Names are optional; the ones
// given here become the parameters' names (the others are indices, as in PyTorch's nn.Sequential).
NetworkDescription fashion_network() {
  using namespace conveyor::train::layers;
  return {conv(16, 3).named("stem"), batch_norm().named("stem_bn"), relu(),  // 28x28x16
          max_pool(2, 2),                                                    // 14x14
          residual({conv(16, 3), batch_norm(), relu(), conv(16, 3), batch_norm()}).named("block1"),
          // 7x7x32; the shortcut averages 2x2 windows before its 1x1 convolution (ResNet-D's downsampling)
          residual({conv(32, 3, 2), batch_norm(), relu(), conv(32, 3), batch_norm()},
                   {avg_pool(2, 2), conv(32, 1, 1, 0), batch_norm()})
              .named("block2"),
          conv(64, 3, 2), batch_norm(), relu(),  // 4x4x64
          global_avg_pool(), dense(10).named("classifier")};
}

struct Options {
  std::string data = "data/generated/fashion-mnist";
  int steps = 60, batch = 32, threads = 0;
  double lr = 0.05;
  std::uint64_t seed = 1;
  std::string device = "auto", checkpoint;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app(
      "custom_network: trains a network defined in this program on the Fashion-MNIST JPEGs and\n"
      "prints the loss of every step, then \"final loss A -> B\" (the mean of the first and of the\n"
      "last ten steps).");
  app.add_option("--data", o.data,
                 "folder with train.txt (\"path label\" lines), as ./conveyor.sh data makes it")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "training steps")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--device", o.device, "where the network trains")
      ->capture_default_str()
      ->check(example_support::device_spec());
  app.add_option("--batch", o.batch, "images per step (per rank)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--lr", o.lr, "SGD learning rate (momentum 0.9)")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 100.0));
  app.add_option("--seed", o.seed, "weights and data order")->capture_default_str();
  app.add_option("--threads", o.threads, "pipeline threads (0: all cores)")->check(CLI::Range(0, 4096));
  app.add_option("--checkpoint", o.checkpoint,
                 "save the trained network to FILE (and its safetensors beside)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    std::exit(app.exit(error) == 0 ? 0 : 2);  // --help: 0; a usage error: its message and 2
  }
  return o;
}

double mean(const std::vector<double>& v, std::size_t first, std::size_t count) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(first),
                         v.begin() + static_cast<std::ptrdiff_t>(first + count), 0.0) /
         static_cast<double>(count);
}

int run(const Options& o) {
  const std::filesystem::path list = std::filesystem::path(o.data) / "train.txt";
  if (!std::filesystem::exists(list))
    throw conveyor::IoError("no " + list.string() + ": make the Fashion-MNIST JPEGs with ./conveyor.sh data");
  const conveyor::Ranks ranks = conveyor::ranks_from_environment();  // the launcher's; rank 0 of 1 alone
  const conveyor::Placement placement = example_support::rank_placement(o.device, ranks);
  constexpr conveyor::ImageShape kShape{28, 28, 1};

  const auto train =
      conveyor::Dataset::list_file(list)
          .shuffle(conveyor::Dataset::whole_epoch, o.seed)
          .repeat()
          .shard(ranks)  // this rank's share of every epoch
          .map(conveyor::ops::decode({.color = conveyor::ops::ColorMode::gray}))
          .map(conveyor::ops::flip_horizontal(0.5))
          .with_options({.threads = o.threads,
                         .seed = o.seed,
                         .cpus = conveyor::cpu_share(ranks.local_rank, ranks.local_world_size)})
          .batch(static_cast<std::size_t>(o.batch), kShape)
          .prefetch(4);
  conveyor::train::DataParallelTrainer trainer(
      {.network = fashion_network(),
       .num_classes = 10,
       .input = kShape,
       .batch = o.batch,
       .learning_rate = o.lr,
       .weight_decay = 5e-4,
       .mean = {72.94f, 72.94f, 72.94f},  // Fashion-MNIST's pixels, 0..255
       .std = {90.02f, 90.02f, 90.02f},
       .device = placement.gpu ? placement.device : -1,
       .seed = o.seed},
      ranks);
  const bool main = ranks.is_main();
  if (main) {
    std::printf("network:\n%s", trainer.trainer().network().describe().c_str());
    std::printf("parameters:");
    for (const conveyor::train::ParameterInfo& p : trainer.trainer().parameters())
      if (p.learnable) std::printf(" %s", p.name.c_str());
    std::printf("\n");
  }
  trainer.warmup();
  if (main) std::printf("%s\nwarm-up %.2f s\n", trainer.placement().c_str(), trainer.warmup_seconds());

  conveyor::DeviceFeeder feeder(placement, {.depth = 3});
  auto batches = feeder.feed(train);
  std::vector<double> losses;
  for (int step = 1; step <= o.steps; ++step) {
    std::optional<conveyor::DeviceBatch> batch = batches.next();
    if (!batch) throw conveyor::Error("the training data ended");
    trainer.step(*batch);
    // Synchronises (fine for a demonstration), and averages over the ranks: every rank asks.
    const conveyor::train::StepStats s = trainer.last_step();
    losses.push_back(s.loss);
    if (main)
      std::printf("step %d/%d: loss %.4f, accuracy %.1f%%\n", step, o.steps, s.loss, 100 * s.accuracy);
    std::fflush(stdout);
  }
  if (!o.checkpoint.empty() && main) {  // the ranks' weights are identical: one copy is enough
    trainer.trainer().save_checkpoint(o.checkpoint, {.steps = static_cast<std::uint64_t>(o.steps)});
    std::printf("saved %s\n", o.checkpoint.c_str());
  }
  const std::size_t ten = std::min<std::size_t>(10, losses.size());
  std::printf("final loss %.4f -> %.4f\n", mean(losses, 0, ten), mean(losses, losses.size() - ten, ten));
  return 0;
}

}  // namespace

int main(int argc, char** argv) try { return run(parse(argc, argv)); } catch (const std::exception& e) {
  std::fprintf(stderr, "custom_network: %s\n", e.what());
  return 1;
}
