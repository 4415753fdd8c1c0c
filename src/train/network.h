// A network description (conveyor/train/network.h) compiled for one batch size and input shape: its
// parameters declared in a ParameterLayout (PyTorch's names, shapes and order), its layers as nodes
// (network_nodes.h) that run on any backend's context, and the classifier and loss at its end. The two
// built-in ResNets are descriptions like any other (resnet18(), small_resnet()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "conveyor/image.h"
#include "conveyor/train/network.h"
#include "src/train/layers/batch_norm.h"
#include "src/train/layers/context.h"
#include "src/train/network_compiler.h"
#include "src/train/network_nodes.h"
#include "src/train/parameters.h"

namespace conveyor::train {

class Network {
 public:
  // Checks the description (InvalidArgument naming the layer and the rule it breaks) and declares every
  // parameter (in `layout`); allocates nothing.
  Network(const NetworkDescription& description, const NetworkShape& shape, ParameterLayout& layout);
  ~Network();
  Network(Network&&) noexcept;

  // Drops every buffer and layer (the network is as constructed again).
  void release() noexcept;

  // Allocates activations and gradients, makes every layer on `ctx` and prepares it (algorithm search,
  // batch-norm path checks): the running statistics are changed and must be restored afterwards. The
  // network runs on `ctx` from then on.
  void prepare(nn::Context& ctx, ParameterStore& params);

  // The normalized input (n x h x w x c in the context's type) the forward pass reads.
  nn::Tensor input() const;
  // Labels the loss reads (int64, context memory).
  std::int64_t* labels() const;

  void forward(const ParameterStore& params, bool training);
  // Inference logits of the input; with `mirrored_too`, the mean of those and the logits of the input's
  // mirror image (the input is left mirrored).
  void forward_evaluation(const ParameterStore& params, bool mirrored_too);
  // Loss of the first valid_rows rows into row_loss() / row_correct(), against label-smoothed targets
  // when label_smoothing > 0; with_gradient also writes the gradient of the mean loss times grad_scale
  // for backward().
  void loss(int valid_rows, float grad_scale, bool with_gradient, float label_smoothing = 0.f);
  // Calls `ready` (when given) for every weight and vector parameter, in the order their gradients are
  // made: from the classifier back to the first layer.
  void backward(ParameterStore& params, const GradientReady& ready = {});

  const float* row_loss() const;  // context memory, batch entries
  const int* row_correct() const;
  const NetworkShape& shape() const noexcept { return shape_; }
  // How long the last prepare()'s first run of the classifier's products took, on the thread that ran them
  // beside the convolutions' preparation (0 where first calls cost nothing extra).
  double classifier_warmup_seconds() const noexcept { return classifier_warmup_seconds_; }
  // One line per layer with its shape and, once prepared on a GPU, the chosen algorithms and batch-norm path.
  std::string describe() const;
  // How many batch-norm layers run on which path, e.g. "20 x cuDNN fused (...)".
  std::string batch_norm_paths() const;

 private:
  NetworkDescription description_;
  NetworkShape shape_;
  std::unique_ptr<CompiledNetwork> net_;
  const nn::Elementwise* elementwise_ = nullptr;  // the prepared context's
  double classifier_warmup_seconds_ = 0;
};

}  // namespace conveyor::train
