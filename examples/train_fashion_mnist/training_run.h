// One training run of the small ResNet on the Fashion-MNIST JPEG files: a fresh trainer for a recipe and a
// seed, warmed up, then epochs of pipeline -> feeder -> trainer, and evaluations on the test split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/cuda/device.h"
#include "conveyor/dataset.h"
#include "conveyor/train/trainer.h"
#include "recipes.h"

struct RunSettings {
  conveyor::Placement placement;
  conveyor::train::Precision precision = conveyor::train::Precision::bf16;
  int threads = 16;
  int eval_every = 0;  // evaluate after every N-th epoch; 0: after the last one only
  bool cuda_graph = true;
  std::string resume, checkpoint;      // checkpoint files (optional)
  std::uint64_t checkpoint_every = 0;  // also save every N steps (0: at the end of each epoch only)
  std::uint64_t stop_after = 0;  // end after N steps with a checkpoint, as a preemption would (0: never)
  bool deterministic = false;    // deterministic convolution algorithms (a run repeats bit for bit)
};

struct EpochRecord {
  int epoch = 0;
  double loss = 0, train_accuracy = 0;  // sampled every 20th step
  std::optional<double> test_accuracy;  // when this epoch was evaluated
  double images_per_s = 0;              // training images over the epoch's training time
  double data_wait_fraction = 0;        // of the epoch's training time spent waiting for batches
  double seconds = 0;                   // since the run's clock started (training and evaluation)
};

struct RunResult {
  std::string recipe;
  std::uint64_t seed = 0;
  double warmup_seconds = 0;
  conveyor::train::WarmupReport warmup;
  std::string placement;
  std::vector<EpochRecord> epochs;
  double final_test_accuracy = 0;
  double seconds = 0;    // first epoch's start to the last evaluation's end (warm-up excluded)
  bool stopped = false;  // ended early by RunSettings::stop_after
};

// The data of a run: the list files read once, shared by every run of the process.
struct FashionData {
  conveyor::Dataset train, test;
  std::size_t train_size = 0;
};

// The input path alone, for `epochs` epochs of the recipe's pipeline: files read, decoded, cropped and
// flipped into batches, staged by the feeder (copied to the GPU on a GPU), nothing trained. Prints and
// returns images per second per epoch: what the training loop can be fed at most.
std::vector<double> input_images_per_s(const Recipe& recipe, std::uint64_t seed, const FashionData& data,
                                       const RunSettings& settings, int epochs);

// Prints the warm-up and a line per epoch on stdout as it goes. With settings.resume it goes on from that
// checkpoint (its epoch, its position in the epoch's data, its schedule and model); with
// settings.checkpoint it saves there after every epoch (and every checkpoint_every steps). An existing
// checkpoint without resume is an error: a run never silently starts over on top of one.
RunResult train_once(const Recipe& recipe, std::uint64_t seed, const FashionData& data,
                     const RunSettings& settings);
