// train_fashion_mnist: trains the small ResNet on Fashion-MNIST for real, through the whole stack: JPEG
// files on disk, the pipeline (decode, pad 4 + random crop 28, flip), pinned batches, the device feeder
// and the training step (cuDNN on a GPU, the CPU reference otherwise). Prints loss, train and test
// accuracy, images/s and the data-wait fraction per epoch; writes a CSV and a PNG of the curves.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "conveyor/cuda/device.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "conveyor/random.h"
#include "conveyor/train/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: train_fashion_mnist [--data DIR] [--epochs E] [--batch B] [--lr LR] [--device auto|cpu|gpu:N]\n"
    "                           [--threads N] [--train-subset N] [--test-subset N] [--precision "
    "bf16|fp16|fp32]\n"
    "                           [--width 16|32] [--csv FILE] [--plot FILE.png] [--checkpoint FILE] [--resume "
    "FILE]\n"
    "                           [--seed K]\n"
    "DIR holds train.txt and test.txt (\"path label\" lines), as ./conveyor.sh demo makes them under\n"
    "data/generated/fashion-mnist.\n";

struct Options {
  std::string data = "data/generated/fashion-mnist";
  int epochs = 15, batch = 256, threads = 0, width = 0;
  double lr = 0.1;
  std::string device = "auto", precision = "bf16", csv, plot, checkpoint, resume;
  std::size_t train_subset = 0, test_subset = 0;
  std::uint64_t seed = 1;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "train_fashion_mnist: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) usage_error(std::string(flag) + " needs a value");
    const std::string value = argv[++i];
    auto number = [&](double lo, double hi) {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || v < lo || v > hi)
        usage_error(std::string(flag) + ": bad value " + value);
      return v;
    };
    if (flag == "--data")
      o.data = value;
    else if (flag == "--epochs")
      o.epochs = static_cast<int>(number(0, 1000));
    else if (flag == "--batch")
      o.batch = static_cast<int>(number(1, 65536));
    else if (flag == "--lr")
      o.lr = number(0, 100);
    else if (flag == "--device")
      o.device = value;
    else if (flag == "--threads")
      o.threads = static_cast<int>(number(0, 4096));
    else if (flag == "--train-subset")
      o.train_subset = static_cast<std::size_t>(number(0, 1e9));
    else if (flag == "--test-subset")
      o.test_subset = static_cast<std::size_t>(number(0, 1e9));
    else if (flag == "--precision")
      o.precision = value;
    else if (flag == "--width")
      o.width = static_cast<int>(number(1, 1024));
    else if (flag == "--csv")
      o.csv = value;
    else if (flag == "--plot")
      o.plot = value;
    else if (flag == "--checkpoint")
      o.checkpoint = value;
    else if (flag == "--resume")
      o.resume = value;
    else if (flag == "--seed")
      o.seed = static_cast<std::uint64_t>(number(0, 1e18));
    else
      usage_error("unknown option " + std::string(flag));
  }
  return o;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  const conveyor::Placement placement = conveyor::resolve(conveyor::DeviceSpec::parse(o.device));
  const int threads = o.threads ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  const std::filesystem::path root(o.data);
  if (!std::filesystem::exists(root / "train.txt"))
    throw conveyor::IoError("no " + (root / "train.txt").string() +
                            " (./conveyor.sh data makes it from Debian's dataset-fashion-mnist)");

  const conveyor::ImageShape shape{28, 28, 1};
  const auto decode_gray = conveyor::ops::decode({.color = conveyor::ops::ColorMode::gray});
  conveyor::Dataset train_files = conveyor::Dataset::list_file(root / "train.txt");
  conveyor::Dataset test_files = conveyor::Dataset::list_file(root / "test.txt");
  if (o.train_subset)
    train_files = train_files.shuffle(train_files.source_size(), o.seed).take(o.train_subset);
  if (o.test_subset) test_files = test_files.take(o.test_subset);
  const std::size_t train_size =
      o.train_subset ? std::min(o.train_subset, train_files.source_size()) : train_files.source_size();
  const std::size_t steps_per_epoch = train_size / static_cast<std::size_t>(o.batch);
  if (steps_per_epoch == 0) throw conveyor::InvalidArgument("--batch is larger than the training set");

  conveyor::train::TrainerOptions t;
  t.model = conveyor::train::ModelKind::small_resnet;
  t.num_classes = 10;
  t.input = shape;
  t.batch = o.batch;
  t.precision = o.precision == "fp32"   ? conveyor::train::Precision::fp32
                : o.precision == "fp16" ? conveyor::train::Precision::fp16
                                        : conveyor::train::Precision::bf16;
  t.learning_rate = o.lr;
  t.momentum = 0.9;
  t.weight_decay = 5e-4;
  t.nesterov = true;
  t.mean = {72.94f, 72.94f, 72.94f};  // Fashion-MNIST's pixel mean and standard deviation, 0..255 scale
  t.std = {90.02f, 90.02f, 90.02f};
  t.device = placement.gpu ? placement.device : -1;
  t.seed = o.seed;
  if (o.width) t.width = o.width;
  conveyor::train::Trainer trainer(t);
  if (!o.resume.empty()) trainer.load(o.resume);
  std::printf("%s\ntrainer: %s\ndata: %zu training images (%zu steps of %d per epoch), %s\n",
              placement.description.c_str(), trainer.placement().c_str(), train_size, steps_per_epoch,
              o.batch, o.data.c_str());
  const auto warm_start = Clock::now();
  trainer.warmup();
  std::printf("warm-up (context, algorithm search, allocations): %.2f s\n", seconds_since(warm_start));

  constexpr int kFeederDepth = 3;
  conveyor::PipelineOptions pipeline;
  pipeline.threads = threads;
  pipeline.held_batches = kFeederDepth;
  pipeline.host_memory = conveyor::host_memory_for(placement);  // page-locked for a GPU: asynchronous copies
  conveyor::DeviceFeeder feeder(placement, {.depth = kFeederDepth});

  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    csv << "epoch,loss,train_accuracy,test_accuracy,images_per_s,data_wait_fraction,seconds\n";
  }
  std::printf("%5s %8s %9s %9s %10s %9s %7s\n", "epoch", "loss", "train acc", "test acc", "images/s",
              "data wait", "s");
  const auto run_start = Clock::now();
  const double total_steps = static_cast<double>(steps_per_epoch) * o.epochs;
  double final_test = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    // A new order and new augmentations every epoch: the seed of the epoch's pipeline changes.
    pipeline.seed = conveyor::combine_seeds(o.seed, static_cast<std::uint64_t>(epoch));
    const auto batches = train_files.shuffle(train_size, pipeline.seed)
                             .map(decode_gray)
                             .map(conveyor::ops::random_crop(28, 28, /*padding=*/4))
                             .map(conveyor::ops::flip_horizontal(0.5))
                             .with_options(pipeline)
                             .batch(static_cast<std::size_t>(o.batch), shape, /*drop_remainder=*/true)
                             .prefetch(4);
    const auto epoch_start = Clock::now();
    double loss_sum = 0, correct = 0, seen = 0, wait_s = 0;
    std::size_t step = 0;
    auto it = batches.begin();
    for (;;) {
      const auto wait_start = Clock::now();
      std::optional<conveyor::Batch> batch = it.next();
      wait_s += seconds_since(wait_start);
      if (!batch) break;
      // Cosine decay from the base rate to zero over the whole run.
      const double progress = (static_cast<double>(epoch) * steps_per_epoch + step) / total_steps;
      trainer.set_learning_rate(0.5 * o.lr * (1 + std::cos(progress * 3.141592653589793)));
      trainer.step(feeder.stage(std::move(*batch)));
      ++step;
      // Reading a step's loss waits for the device, so only every 20th step is read.
      if (step % 20 == 0 || step == steps_per_epoch) {
        const auto s = trainer.last_step();
        loss_sum += s.loss * static_cast<double>(s.images);
        correct += s.accuracy * static_cast<double>(s.images);
        seen += static_cast<double>(s.images);
      }
    }
    trainer.synchronize();
    const double epoch_s = seconds_since(epoch_start);
    const double images_per_s = static_cast<double>(step) * o.batch / epoch_s;

    // Evaluation: inference-mode batch norm on the whole test split (kept remainder).
    const auto test_batches = test_files.map(decode_gray)
                                  .with_options(pipeline)
                                  .batch(static_cast<std::size_t>(o.batch), shape)
                                  .prefetch(4);
    double test_correct = 0, test_seen = 0;
    for (auto test_it = test_batches.begin();;) {
      std::optional<conveyor::Batch> batch = test_it.next();
      if (!batch) break;
      const std::size_t n = batch->size();
      const auto result = trainer.evaluate(feeder.stage(std::move(*batch)));
      test_correct += static_cast<double>(result.correct);
      test_seen += static_cast<double>(n);
    }
    final_test = test_seen ? test_correct / test_seen : 0;
    const double loss = seen ? loss_sum / seen : 0, train_acc = seen ? correct / seen : 0;
    std::printf("%5d %8.4f %8.2f%% %8.2f%% %10.0f %8.1f%% %7.1f\n", epoch + 1, loss, 100 * train_acc,
                100 * final_test, images_per_s, 100 * wait_s / epoch_s, seconds_since(epoch_start));
    std::fflush(stdout);
    if (csv.is_open())
      csv << epoch + 1 << ',' << loss << ',' << train_acc << ',' << final_test << ',' << images_per_s << ','
          << wait_s / epoch_s << ',' << seconds_since(run_start) << '\n';
    if (!o.checkpoint.empty()) trainer.save(o.checkpoint);
  }
  std::printf("final test accuracy %.2f%% after %d epochs, %.1f s of training and evaluation\n",
              100 * final_test, o.epochs, seconds_since(run_start));
  if (!o.plot.empty()) {
    if (o.csv.empty()) throw conveyor::InvalidArgument("--plot needs --csv (the plot is drawn from it)");
    csv.close();
    const std::string command = "'" + std::string(CONVEYOR_SOURCE_DIR) + "/bench/plot.sh' '" +
                                std::string(CONVEYOR_SOURCE_DIR) + "/bench/plot_training.py' '" + o.csv +
                                "' '" + o.plot + "'";
    if (std::system(command.c_str()) != 0) throw conveyor::Error("plotting failed: " + command);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
  return 1;
}
