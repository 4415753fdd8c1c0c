#include "training_run.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "conveyor/random.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr conveyor::ImageShape kShape{28, 28, 1};
constexpr int kFeederDepth = 3;
constexpr std::size_t kSampleEvery = 20;  // reading a step's loss waits for the device: only every 20th

conveyor::train::TrainerOptions trainer_options(const Recipe& r, std::uint64_t seed, const RunSettings& s) {
  conveyor::train::TrainerOptions t;
  t.model = conveyor::train::ModelKind::small_resnet;
  t.num_classes = 10;
  t.input = kShape;
  t.batch = r.batch;
  t.width = r.width;
  t.precision = s.precision;
  t.learning_rate = r.peak_lr;
  t.momentum = r.momentum;
  t.weight_decay = r.weight_decay;
  t.nesterov = r.nesterov;
  t.label_smoothing = r.label_smoothing;
  t.evaluate_flipped = r.test_time_flip;
  t.cuda_graph = s.cuda_graph;
  t.mean = {72.94f, 72.94f, 72.94f};  // Fashion-MNIST's pixel mean and standard deviation, 0..255 scale
  t.std = {90.02f, 90.02f, 90.02f};
  t.device = s.placement.gpu ? s.placement.device : -1;
  t.seed = seed;
  t.deterministic = s.deterministic;
  return t;
}

void print_warmup(const conveyor::train::Trainer& trainer) {
  const conveyor::train::WarmupReport& w = trainer.warmup_report();
  std::printf(
      "warm-up %.2f s (context %.2f, allocations and algorithms %.2f, first step %.2f, graphs %.2f)\n",
      w.seconds, w.context_seconds, w.prepare_seconds, w.first_step_seconds, w.capture_seconds);
  const auto& c = w.algorithm_cache;
  if (!c.file.empty())
    std::printf("algorithm cache %s: %zu reused, %zu searched, %zu rejected, %zu warnings\n", c.file.c_str(),
                c.reused, c.searched, c.rejected, c.warnings);
  for (const std::string& m : c.messages) std::printf("  %s\n", m.c_str());
  if (!w.graph_fallback.empty()) std::printf("CUDA graphs not used: %s\n", w.graph_fallback.c_str());
}

// The epoch's training batches: shuffled with the epoch's seed, decoded, padded and cropped, flipped.
conveyor::BatchedDataset training_batches(const Recipe& recipe, const FashionData& data,
                                          const conveyor::PipelineOptions& pipeline) {
  // The whole-epoch shuffle: a resumed epoch's iterator restores in O(1) (a buffered one would replay).
  conveyor::Dataset images = data.train.shuffle(conveyor::Dataset::whole_epoch, pipeline.seed)
                                 .map(conveyor::ops::decode({.color = conveyor::ops::ColorMode::gray}));
  if (recipe.crop_padding > 0) images = images.map(conveyor::ops::random_crop(28, 28, recipe.crop_padding));
  if (recipe.train_flip) images = images.map(conveyor::ops::flip_horizontal(0.5));
  return images.with_options(conveyor::PipelineOptionChanges::all(pipeline))
      .batch(static_cast<std::size_t>(recipe.batch), kShape, /*drop_remainder=*/true)
      .prefetch(4);
}

conveyor::PipelineOptions pipeline_options(const RunSettings& settings) {
  conveyor::PipelineOptions pipeline;
  pipeline.threads = settings.threads;
  pipeline.held_batches = kFeederDepth;
  pipeline.host_memory = conveyor::host_memory_for(settings.placement);  // page-locked for a GPU
  return pipeline;
}

// Where the run starts: the checkpoint's progress with settings.resume, the beginning otherwise.
conveyor::train::TrainingProgress starting_point(const RunSettings& settings,
                                                 conveyor::train::Trainer& trainer) {
  if (!settings.resume.empty()) {
    conveyor::train::TrainingProgress progress = trainer.load_checkpoint(settings.resume);
    std::printf("resuming from %s: epoch %llu, step %llu of it (%llu steps done)\n", settings.resume.c_str(),
                static_cast<unsigned long long>(progress.epoch + 1),
                static_cast<unsigned long long>(progress.step_in_epoch),
                static_cast<unsigned long long>(progress.steps));
    return progress;
  }
  if (!settings.checkpoint.empty() && std::filesystem::exists(settings.checkpoint))
    throw conveyor::InvalidArgument("checkpoint " + settings.checkpoint + " exists: pass --resume " +
                                    settings.checkpoint + " to go on from it, or remove it to start over");
  return {};
}

}  // namespace

std::vector<double> input_images_per_s(const Recipe& recipe, std::uint64_t seed, const FashionData& data,
                                       const RunSettings& settings, int epochs) {
  conveyor::PipelineOptions pipeline = pipeline_options(settings);
  conveyor::DeviceFeeder feeder(settings.placement, {.depth = kFeederDepth, .normalize = std::nullopt});
  std::vector<double> rates;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    pipeline.seed = conveyor::combine_seeds(seed, static_cast<std::uint64_t>(epoch));
    const auto batches = training_batches(recipe, data, pipeline);
    const auto start = Clock::now();
    std::size_t images = 0;
    for (const conveyor::DeviceBatch& batch : feeder.feed(batches)) images += batch.size();
    rates.push_back(static_cast<double>(images) / seconds_since(start));
    std::printf("input only, epoch %d: %zu images, %.0f images/s (%d threads)\n", epoch + 1, images,
                rates.back(), settings.threads);
  }
  return rates;
}

RunResult train_once(const Recipe& recipe, std::uint64_t seed, const FashionData& data,
                     const RunSettings& settings) {
  const std::size_t batch = static_cast<std::size_t>(recipe.batch);
  const std::size_t steps_per_epoch = data.train_size / batch;
  if (steps_per_epoch == 0) throw conveyor::InvalidArgument("the batch is larger than the training set");

  conveyor::train::Trainer trainer(trainer_options(recipe, seed, settings));
  conveyor::train::TrainingProgress progress = starting_point(settings, trainer);
  trainer.warmup();
  RunResult result;
  result.recipe = recipe.name;
  result.seed = seed;
  result.warmup = trainer.warmup_report();
  result.warmup_seconds = trainer.warmup_seconds();
  result.placement = trainer.placement();
  std::printf("\n[%s, seed %llu] %s\n", recipe.name.c_str(), static_cast<unsigned long long>(seed),
              result.placement.c_str());
  print_warmup(trainer);

  conveyor::PipelineOptions pipeline = pipeline_options(settings);
  conveyor::DeviceFeeder feeder(settings.placement, {.depth = kFeederDepth, .normalize = std::nullopt});
  const auto decode_gray = conveyor::ops::decode({.color = conveyor::ops::ColorMode::gray});

  std::printf("%5s %8s %9s %9s %10s %9s %7s\n", "epoch", "loss", "train acc", "test acc", "images/s",
              "data wait", "s");
  const auto run_start = Clock::now();
  for (int epoch = static_cast<int>(progress.epoch); epoch < recipe.epochs; ++epoch) {
    // A new order and new augmentations every epoch: the seed of the epoch's pipeline changes.
    pipeline.seed = conveyor::combine_seeds(seed, static_cast<std::uint64_t>(epoch));
    const auto batches = training_batches(recipe, data, pipeline);

    const auto epoch_start = Clock::now();
    EpochRecord record;
    record.epoch = epoch + 1;
    double loss_sum = 0, correct = 0, seen = 0, wait_s = 0;
    // A resumed epoch starts where its iterator stood (its figures cover the steps taken since).
    const bool resumed = static_cast<std::uint64_t>(epoch) == progress.epoch && progress.step_in_epoch > 0;
    std::size_t epoch_steps = resumed ? static_cast<std::size_t>(progress.step_in_epoch) : 0;
    const std::size_t first_step = epoch_steps;
    auto it = resumed ? batches.begin(progress.data) : batches.begin();
    auto save = [&](std::uint64_t next_epoch, std::uint64_t step_in_epoch) {
      progress.epoch = next_epoch;
      progress.step_in_epoch = step_in_epoch;
      progress.data = step_in_epoch > 0 ? it.state() : conveyor::IteratorState{};
      trainer.save_checkpoint(settings.checkpoint, progress);
    };
    for (;;) {
      const auto wait_start = Clock::now();
      std::optional<conveyor::Batch> next = it.next();
      wait_s += seconds_since(wait_start);
      if (!next) break;
      trainer.set_learning_rate(
          learning_rate(recipe, static_cast<std::size_t>(progress.steps), steps_per_epoch));
      trainer.step(feeder.stage(std::move(*next)));
      ++epoch_steps, ++progress.steps;
      if (settings.stop_after > 0 && progress.steps == settings.stop_after) {
        save(static_cast<std::uint64_t>(epoch), epoch_steps);
        std::printf("stopped after %llu steps; go on with --resume %s\n",
                    static_cast<unsigned long long>(progress.steps), settings.checkpoint.c_str());
        result.stopped = true;
        return result;
      }
      if (!settings.checkpoint.empty() && settings.checkpoint_every > 0 &&
          progress.steps % settings.checkpoint_every == 0 && epoch_steps < steps_per_epoch)
        save(static_cast<std::uint64_t>(epoch), epoch_steps);
      if (epoch_steps % kSampleEvery == 0 || epoch_steps == steps_per_epoch) {
        const auto s = trainer.last_step();
        loss_sum += s.loss * static_cast<double>(s.images);
        correct += s.accuracy * static_cast<double>(s.images);
        seen += static_cast<double>(s.images);
      }
    }
    trainer.synchronize();
    const double train_s = seconds_since(epoch_start);
    record.loss = seen ? loss_sum / seen : 0;
    record.train_accuracy = seen ? correct / seen : 0;
    record.images_per_s = static_cast<double>((epoch_steps - first_step) * batch) / train_s;
    record.data_wait_fraction = wait_s / train_s;

    const bool last = epoch + 1 == recipe.epochs;
    if (last || (settings.eval_every > 0 && (epoch + 1) % settings.eval_every == 0)) {
      // Inference-mode batch norm on the whole test split (the remainder kept); sums stay on the device
      // until the end, so the GPU is never waited for batch by batch.
      const auto test_batches = data.test.map(decode_gray)
                                    .with_options(conveyor::PipelineOptionChanges::all(pipeline))
                                    .batch(batch, kShape)
                                    .prefetch(4);
      auto test_it = test_batches.begin();
      while (std::optional<conveyor::Batch> next = test_it.next())
        trainer.add_to_evaluation(feeder.stage(std::move(*next)));
      const conveyor::train::EvalResult r = trainer.take_evaluation();
      record.test_accuracy = r.accuracy();
      result.final_test_accuracy = r.accuracy();
    }
    record.seconds = seconds_since(run_start);
    char test[16] = "        -";
    if (record.test_accuracy) std::snprintf(test, sizeof test, "%8.2f%%", 100 * *record.test_accuracy);
    std::printf("%5d %8.4f %8.2f%% %s %10.0f %8.1f%% %7.2f\n", record.epoch, record.loss,
                100 * record.train_accuracy, test, record.images_per_s, 100 * record.data_wait_fraction,
                record.seconds);
    std::fflush(stdout);
    result.epochs.push_back(record);
    if (!settings.checkpoint.empty()) save(static_cast<std::uint64_t>(epoch) + 1, 0);
  }
  result.seconds = seconds_since(run_start);
  std::printf(
      "final test accuracy %.2f%% after %d epochs, %.2f s of training and evaluation [%s, seed %llu]\n",
      100 * result.final_test_accuracy, recipe.epochs, result.seconds, recipe.name.c_str(),
      static_cast<unsigned long long>(seed));
  return result;
}
