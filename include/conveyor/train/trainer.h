// Training a ResNet on batches from the pipeline: cuDNN + cuBLAS on a GPU (bf16/fp16 tensor-core math
// with fp32 master weights, or fp32), or the CPU reference of every layer when there is no GPU.
//
//   Trainer trainer({.model = ModelKind::small_resnet, .input = {28, 28, 1}, .device = 0});
//   trainer.warmup();                       // pays the first-step costs up front
//   for (DeviceBatch& batch : feeder.feed(dataset)) trainer.step(batch);   // asynchronous on a GPU
//   StepStats s = trainer.last_step();      // synchronises
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

namespace conveyor::train {

enum class Precision { fp32, bf16, fp16 };
// small_resnet: for 28x28 inputs (Fashion-MNIST): 3x3 stem, three stages of BasicBlocks (width, 2x, 4x
// channels), global average pooling, linear. resnet18: torchvision's ResNet-18 for 224x224 inputs.
enum class ModelKind { small_resnet, resnet18 };

const char* to_string(Precision precision) noexcept;
const char* to_string(ModelKind model) noexcept;
// "fp32" / "bf16" / "fp16" and "small_resnet" / "resnet18"; InvalidArgument otherwise.
Precision parse_precision(std::string_view text);
ModelKind parse_model(std::string_view text);

struct TrainerOptions {
  ModelKind model = ModelKind::small_resnet;
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
  bool cuda_graph = false;  // GPU: replay forward + backward + SGD as one CUDA graph captured at warm-up
  // GPU: convolution algorithms from cuDNN's heuristics, deterministic ones only, instead of the fastest
  // by timing (which can pick differently from one run to the next): the same options and batches give
  // the same numbers every run. Steps may be slower.
  bool deterministic = false;
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

  // One SGD step on a full batch (batch.size() == options.batch). On a GPU it only enqueues: the step's
  // stream becomes a reader of the batch (conveyor::cuda::read_on), normalizes its uint8 pixels on the GPU
  // and runs forward, loss, backward and SGD; the batch may be released as soon as step() returns. On the
  // CPU it runs the reference to completion (normalizing on the CPU).
  void step(const DeviceBatch& batch);
  void set_learning_rate(double learning_rate);
  // Loss and accuracy of the last step (synchronises). Throws InvalidArgument if a label was out of range.
  StepStats last_step();
  // Inference-mode batch norm on up to options.batch images; synchronises.
  EvalResult evaluate(const DeviceBatch& batch);
  void synchronize();

  // GPU: total time of the completed steps measured by CUDA events on the step's stream; CPU: the wall
  // time of the steps. For the GPU idle fraction.
  double gpu_busy_ms();
  // The same, step by step (completed steps only), for medians.
  std::vector<double> step_times_ms();
  std::size_t steps() const noexcept;

  // Checkpoint: a header with the model and every tensor's name and size, then weights, batch-norm
  // statistics and momentum buffers (float32). load() throws InvalidArgument when the checkpoint belongs
  // to another model, IoError when the file cannot be read or written.
  void save(const std::filesystem::path& path) const;
  void load(const std::filesystem::path& path);

  // "cuDNN on GPU 0 (NVIDIA H200), bf16 NHWC, ..." or "CPU reference, 16 threads, fp32 NHWC".
  std::string placement() const;
  // One line per layer with its shape and, on a GPU, the chosen algorithms and batch-norm path.
  std::string describe_layers() const;
  const TrainerOptions& options() const noexcept;

 private:
  friend class DataParallelTrainer;  // attaches its gradient all-reduce to the steps of its replicas
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conveyor::train
