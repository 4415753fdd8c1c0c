// The two ResNets, built from the same layer objects on either backend: a stem (convolution, batch
// norm + ReLU, and for ResNet-18 a max pool), stages of BasicBlocks (conv-BN-ReLU, conv-BN, + shortcut,
// ReLU; a 1x1/2 convolution + BN on the shortcut where the shape changes), global average pooling and a
// linear classifier with softmax cross-entropy. Layer and parameter names follow torchvision.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/train/trainer.h"
#include "src/train/layers/batch_norm.h"
#include "src/train/layers/conv2d.h"
#include "src/train/layers/linear.h"
#include "src/train/layers/pooling.h"
#include "src/train/parameters.h"

namespace conveyor::train {

struct NetworkSpec {
  ModelKind kind = ModelKind::small_resnet;
  int batch = 256;
  ImageShape input{28, 28, 1};
  int classes = 10;
  int width = 32;                   // small_resnet only
  int blocks_per_stage = 2;         // small_resnet only
  nn::BatchNormOptions batch_norm;  // relu/residual are set per layer
};

// Told once per parameter during Network::backward, right after the work that makes its gradient final
// was enqueued on the context's stream (nothing later in the pass writes it). Data-parallel training
// starts reducing a bucket of gradients there while the rest of the backward pass runs.
using GradientReady = std::function<void(const ParamRef&)>;

class Network {
 public:
  // Declares every layer and parameter (in `layout`); allocates nothing.
  Network(const NetworkSpec& spec, ParameterLayout& layout);
  ~Network();
  Network(Network&&) noexcept;

  // Drops every buffer and all GPU state of the layers (the network is as constructed again).
  void release() noexcept;

  // Allocates activations and gradients, and prepares every layer on `ctx` (algorithm search, batch-norm
  // path checks): the running statistics are changed and must be restored afterwards.
  void prepare(nn::Context& ctx, ParameterStore& params);

  // The normalized input (n x h x w x c in the context's type) the forward pass reads.
  nn::Tensor input() const;
  // Labels the loss reads (int64, context memory).
  std::int64_t* labels() const;

  void forward(nn::Context& ctx, const ParameterStore& params, bool training);
  // Inference logits of the input; with `mirrored_too`, the mean of those and the logits of the input's
  // mirror image (the input is left mirrored).
  void forward_evaluation(nn::Context& ctx, const ParameterStore& params, bool mirrored_too);
  // Loss of the first valid_rows rows into row_loss() / row_correct(), against label-smoothed targets
  // when label_smoothing > 0; with_gradient also writes the gradient of the mean loss times grad_scale
  // for backward().
  void loss(nn::Context& ctx, int valid_rows, float grad_scale, bool with_gradient,
            float label_smoothing = 0.f);
  // Calls `ready` (when given) for every weight and vector parameter, in the order their gradients are
  // made: from the classifier back to the stem.
  void backward(nn::Context& ctx, ParameterStore& params, const GradientReady& ready = {});

  const float* row_loss() const;  // context memory, batch entries
  const int* row_correct() const;
  const NetworkSpec& spec() const noexcept { return spec_; }
  // How long the last prepare()'s first run of the classifier's products took, on the thread that ran them
  // beside the convolutions' preparation (0 on the CPU).
  double classifier_warmup_seconds() const noexcept { return classifier_warmup_seconds_; }
  std::string describe() const;
  // How many batch-norm layers run on which path, e.g. "20 x cuDNN fused (...)".
  std::string batch_norm_paths() const;

 private:
  struct Activation;
  struct ConvBn;
  struct Block;
  struct Layers;
  Activation& block_input(std::size_t i) const;
  static std::unique_ptr<Layers> build(const NetworkSpec& spec, ParameterLayout& layout);

  NetworkSpec spec_;
  std::unique_ptr<Layers> layers_;
  double classifier_warmup_seconds_ = 0;
};

}  // namespace conveyor::train
