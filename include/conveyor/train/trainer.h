// Training a network on batches from the pipeline: cuDNN + cuBLAS on a GPU (bf16/fp16 tensor-core math
// with fp32 master weights, or fp32), or the CPU reference of every layer when there is no GPU. The
// network is one of the built-in ResNets (ModelKind) or one the user describes (conveyor/train/network.h).
//
//   Trainer trainer({.model = ModelKind::small_resnet, .input = {28, 28, 1}, .device = 0});
//   trainer.warmup();                       // pays the first-step costs up front
//   for (DeviceBatch& batch : feeder.feed(dataset)) trainer.step(batch);   // asynchronous on a GPU
//   StepStats s = trainer.last_step();      // synchronises
//   for (DeviceBatch& batch : feeder.feed(test_set)) trainer.add_to_evaluation(batch);   // asynchronous
//   EvalResult r = trainer.take_evaluation();                                          // synchronises
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/image.h"
#include "conveyor/iterator_state.h"
#include "conveyor/ops/normalize.h"
#include "conveyor/train/network.h"

namespace conveyor::train {

enum class Precision { fp32, bf16, fp16 };
// The built-in networks, a shorthand for their descriptions (conveyor/train/network.h): small_resnet() for
// 28x28 inputs (Fashion-MNIST): 3x3 stem, three stages of BasicBlocks (width, 2x, 4x channels), global
// average pooling, linear; resnet18(): torchvision's ResNet-18 for 224x224 inputs.
enum class ModelKind { small_resnet, resnet18 };

const char* to_string(Precision precision) noexcept;
const char* to_string(ModelKind model) noexcept;
// "fp32" / "bf16" / "fp16" and "small_resnet" / "resnet18"; InvalidArgument otherwise.
Precision parse_precision(std::string_view text);
ModelKind parse_model(std::string_view text);

struct TrainerOptions {
  ModelKind model = ModelKind::small_resnet;
  // The network to train; empty: the `model` shorthand (with width and blocks_per_stage for small_resnet).
  // A description's dense layer must give num_classes outputs.
  NetworkDescription network{};
  int num_classes = 10;
  ImageShape input{28, 28, 1};            // HWC of one uint8 image as the batches carry it
  int batch = 256;                        // every step() gets exactly this many images
  Precision precision = Precision::bf16;  // GPU only; the CPU reference computes in fp32
  bool fused_batch_norm = true;           // false: separate mean/variance/normalize/ReLU kernels
  double learning_rate = 0.1, momentum = 0.9, weight_decay = 5e-4;
  bool nesterov = false;
  // Per channel, on the 0..255 scale of the pixels: the step feeds (pixel - mean) / std to the model.
  std::array<float, 3> mean{127.5f, 127.5f, 127.5f};
  std::array<float, 3> std{127.5f, 127.5f, 127.5f};
  int device = -1;                     // CUDA device index; -1 = CPU reference
  std::size_t memory_limit_bytes = 0;  // device memory cap (0 = none); exceeding it throws DeviceMemoryError
  double memory_fraction = 0;          // or a cap as a fraction of the card (used when the bytes are 0)
  std::uint64_t seed = 0;              // Kaiming initialisation
  int width = 32;                      // small_resnet: channels of the first stage
  int blocks_per_stage = 2;            // small_resnet: BasicBlocks per stage
  double bn_momentum = 0.1, bn_epsilon = 1e-5;
  // GPU: the step (forward, loss, backward, SGD) is captured at warm-up as one CUDA graph and replayed
  // with one launch, and so is evaluation's forward pass (for full batches). Staging a batch (wait, labels,
  // normalize) stays outside, since every batch sits in other memory. When capture fails, the trainer runs
  // eagerly and warmup_report() says why. false: always eager. Beside a DeviceFeeder whose nvJPEG decodes on
  // the same GPU, false fed ResNet-18 1.2 % faster (median of six pairs): nvJPEG's hardware decoding seems
  // to wait for a replayed graph to end, and with kernels launched one by one the GPU idled 1.3-2.5 % of
  // the time instead of 4.1-5.5 % (bench/results/2026-11-27-h100-run19-step-graph/ and -run20-...).
  // feed_vs_prefetch runs prefetch so.
  bool cuda_graph = true;
  // GPU: the trainer's stream at the device's most urgent priority, so that kernels of other streams (a
  // DeviceFeeder's decoding, crop-resize and augmentation, at the default priority, which is the least
  // urgent) yield the multiprocessors they free to the step's kernels first. Priority orders which waiting
  // blocks start; it preempts nothing already running. Issue 41 measures it beside the hybrid decoder
  // (feed_vs_prefetch --step-priority urgent).
  bool urgent_stream = false;
  // GPU: convolution algorithms from cuDNN's heuristics, deterministic ones only, instead of the fastest
  // by timing (which can pick differently from one run to the next): the same options and batches give
  // the same numbers every run. Steps may be slower.
  bool deterministic = false;
  // GPU: the timed choice of convolution algorithms is kept on disk and reused by the next trainer of the
  // same shapes on the same GPU, driver, CUDA and cuDNN (cuDNN is asked again whether each entry is
  // valid). Not used with `deterministic`, whose choice needs no timing.
  bool algorithm_cache = true;
  // Where: empty means $CONVEYOR_ALGORITHM_CACHE ("off" turns the cache off), else
  // $XDG_CACHE_HOME/conveyor, else $HOME/.cache/conveyor.
  std::filesystem::path algorithm_cache_dir{};
  // Training loss against (1 - s) x one-hot + s / classes (PyTorch's label_smoothing); evaluation's loss
  // is plain cross-entropy.
  double label_smoothing = 0;
  // Evaluation classifies each image by the mean of its logits and those of its mirror image (test-time
  // flip: one more forward pass per evaluated batch).
  bool evaluate_flipped = false;
};

// One tensor of the model as checkpoints store it: its name (PyTorch's state_dict key) and PyTorch's shape.
struct ParameterInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  bool learnable = true;  // false for batch norm's running statistics
};

// What warmup() did and how long each part took.
struct WarmupReport {
  double seconds = 0;          // all of warmup()
  double context_seconds = 0;  // GPU context, stream, cuDNN and cuBLAS handles (CPU: the thread pool)
  double prepare_seconds = 0;  // every allocation and the choice of convolution algorithms
  // Within prepare: cuBLAS's first classifier products, on a thread beside the convolutions' preparation
  // when that times nothing (warm algorithm cache, deterministic), else after it.
  double classifier_seconds = 0;
  double first_step_seconds = 0;  // a throwaway step and evaluation (kernel loading, first-call costs)
  double capture_seconds = 0;     // recording and instantiating the CUDA graphs
  bool graph = false;             // steps and evaluation replay CUDA graphs
  std::string graph_fallback;     // why not, when options.cuda_graph asked for them on a GPU
  // The algorithm cache on disk (GPU, not deterministic). file is empty when no cache was used.
  struct AlgorithmCache {
    std::string file;
    std::size_t loaded = 0;    // entries the file held for this GPU, driver, CUDA and cuDNN
    std::size_t reused = 0;    // convolution shapes whose algorithms came from it
    std::size_t searched = 0;  // shapes timed by cuDNN in this warm-up
    std::size_t rejected = 0;  // entries cuDNN did not accept any more (searched again)
    std::size_t warnings = 0;  // the file was unreadable, corrupt, written for another GPU/driver/cuDNN, or
                               // could not be written; the trainer went on without it
    std::vector<std::string> messages;  // the reason for each warning and rejection (the first 16)
  } algorithm_cache;
};

// Where a training run stands besides its model: what a checkpoint keeps next to the weights so that a
// resumed run takes exactly the steps the uninterrupted one would have taken.
struct TrainingProgress {
  std::uint64_t steps = 0;          // SGD steps taken since the run began
  std::uint64_t epoch = 0;          // the epoch of the next step
  std::uint64_t step_in_epoch = 0;  // steps of that epoch already taken
  double learning_rate = 0;         // the trainer's, at the checkpoint (save fills it in)
  IteratorState data = {};          // the training data's iterator after the batch of the last step
};

struct StepStats {
  double loss = 0;      // mean over the batch
  double accuracy = 0;  // fraction of the batch whose top class is the label
  std::size_t images = 0;
};

struct EvalResult {
  std::size_t correct = 0;
  double loss_sum = 0;
  std::size_t count = 0;
  double accuracy() const noexcept {
    return count ? static_cast<double>(correct) / static_cast<double>(count) : 0;
  }
  double mean_loss() const noexcept { return count ? loss_sum / static_cast<double>(count) : 0; }
};

class Trainer {
 public:
  // Builds the model and initialises its weights from the seed; allocates nothing on a device yet.
  explicit Trainer(TrainerOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Context, handles, every allocation, the convolution algorithm search and one throwaway forward and
  // backward pass (weights and statistics restored afterwards): everything that makes a first step slow.
  // step() calls it when it was not called. Idempotent.
  void warmup();
  // How long warmup() took, in seconds (0 before).
  double warmup_seconds() const noexcept;
  // Its parts, the CUDA graphs and the algorithm cache.
  const WarmupReport& warmup_report() const noexcept;

  // What the model takes as input: (pixel - mean) / std with the options' mean and std, in the precision's
  // element type (float32 for the CPU reference), NHWC. Give it to FeederOptions::normalize and the step
  // takes the feeder's images() as they are (a device-to-device copy) instead of normalizing pixels().
  ops::NormalizeParams input_normalization() const;

  // One SGD step on a full batch (batch.size() == options.batch). On a GPU it only enqueues: the step's
  // stream becomes a reader of the batch (conveyor::cuda::read_on), takes its images() when they are the
  // model's input (input_normalization()) or else normalizes its uint8 pixels on the GPU, and runs forward,
  // loss, backward and SGD; the batch may be released as soon as step() returns, and must be released
  // before the trainer is destroyed (its release joins the trainer's stream). On the CPU it runs the
  // reference to completion (normalizing on the CPU, or copying images()). Throws InvalidArgument when
  // images() carry the feeder's augmentation in another form than the model's input.
  void step(const DeviceBatch& batch);
  void set_learning_rate(double learning_rate);
  // Loss and accuracy of the last step (synchronises). Throws InvalidArgument if a label was out of range.
  StepStats last_step();
  // Inference (batch norm on its running statistics) on up to options.batch images, counted into sums
  // kept on the device: on a GPU it only enqueues, and the batch may be released when it returns.
  void add_to_evaluation(const DeviceBatch& batch);
  // The sums since the last take (synchronises), which start again from zero. Throws InvalidArgument if
  // a label of those batches was out of range.
  EvalResult take_evaluation();
  // One batch on its own: add_to_evaluation(batch), then take_evaluation().
  EvalResult evaluate(const DeviceBatch& batch);
  void synchronize();

  // GPU: total time of the completed steps measured by CUDA events on the step's stream; CPU: the wall
  // time of the steps. For the GPU idle fraction.
  double gpu_busy_ms();
  // The same, step by step (completed steps only), for medians.
  std::vector<double> step_times_ms();
  std::size_t steps() const noexcept;

  // Checkpoint (src/train/checkpoint.h): `file` is JSON (model, options, progress, the data iterator's
  // state, checksums) beside two safetensors files of the same stem: the weights and running statistics in
  // PyTorch's names, shapes and layouts (torch's load_state_dict takes them), and the momentum buffers.
  // Every file is written atomically, the JSON last. Saving on a GPU synchronises.
  void save_checkpoint(const std::filesystem::path& file, const TrainingProgress& progress = {}) const;
  // Restores weights, statistics, momentum and learning rate and returns the progress to go on from: the
  // same steps as an uninterrupted run follow (bit for bit in deterministic mode). Throws IoError when a
  // file is missing, InvalidArgument naming the file and the problem when one is truncated, damaged
  // (checksum) or belongs to another model; the trainer is unchanged then.
  TrainingProgress load_checkpoint(const std::filesystem::path& file);

  // "cuDNN on GPU 0 (NVIDIA H200), bf16 NHWC, ..." or "CPU reference, 16 threads, fp32 NHWC".
  std::string placement() const;
  // One line per layer with its shape and, on a GPU, the chosen algorithms and batch-norm path.
  std::string describe_layers() const;
  // Every tensor of the model in the checkpoint's order, under the names its safetensors file uses (which
  // adds PyTorch's num_batches_tracked for each batch norm).
  std::vector<ParameterInfo> parameters() const;
  // The network trained: options().network, or the description `model` stands for.
  const NetworkDescription& network() const noexcept;
  const TrainerOptions& options() const noexcept;

 private:
  friend class DataParallelTrainer;  // attaches its gradient all-reduce to the steps of its replicas
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conveyor::train
