// The pieces a Network is compiled into (network.cpp): an Activation per layer output, and a Node per layer
// that runs on the context's layers. A node makes its backend layer at prepare(), from the context it is
// given (nn::Context::make_*), so the same nodes run on the CPU reference and on a GPU. A residual block is
// a node of nodes; it fixes the order of its branches' work (see ResidualNode).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/train/layers/context.h"
#include "src/train/parameters.h"

namespace conveyor::train {

// Told once per parameter during the backward pass, right after the work that makes its gradient final
// was enqueued on the context (nothing later in the pass writes it). Data-parallel training starts
// reducing a bucket of gradients there while the rest of the backward pass runs.
using GradientReady = std::function<void(const ParamRef&)>;

// A layer's output and the gradient flowing back into it.
struct Activation {
  nn::Shape4 shape;
  std::string name;
  bool with_grad = true;  // only the network's input may go without one
  nn::Buffer value, grad;
  nn::Tensor x, dx;

  void allocate(nn::Context& ctx);
};

class ConvNode;

class Node {
 public:
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const noexcept { return name_; }
  virtual Activation& output() noexcept = 0;

  // Allocates the node's outputs (and their gradients) on `ctx`.
  virtual void allocate(nn::Context& ctx) = 0;
  // Makes the node's layer on `ctx` and prepares it (GPU: algorithm choice, batch-norm path).
  virtual void prepare(nn::Context& ctx, const ParameterStore& params) = 0;
  virtual void forward(const ParameterStore& params, bool training) = 0;
  // The node's input gradient from its output gradient, and its parameters' gradients (each told to
  // `ready` as soon as it is final).
  virtual void backward(const ParameterStore& params, const GradientReady& ready) = 0;

  // The convolutions the node holds, for the warm-up's choice of what runs beside what.
  virtual void convolutions(std::vector<const ConvNode*>& out) const { (void)out; }
  // One line per layer: its shape and, once prepared, what its backend chose.
  virtual void describe(std::string& out) const = 0;
  // Counts the batch-norm layers per path ("cuDNN fused (...)": 20).
  virtual void count_batch_norm_paths(std::map<std::string, int>& counts) const { (void)counts; }

 protected:
  explicit Node(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// A node of one layer: it reads one activation, its input's, and writes its own.
class LayerNode : public Node {
 public:
  Activation& output() noexcept final { return output_; }
  void allocate(nn::Context& ctx) final { output_.allocate(ctx); }

 protected:
  LayerNode(std::string name, Activation& input, const nn::Shape4& output_shape);

  Activation& input_;
  Activation output_;
};

class ConvNode final : public LayerNode {
 public:
  ConvNode(std::string name, const nn::ConvGeometry& geometry, Activation& input, ParameterLayout& layout);
  const nn::ConvGeometry& geometry() const noexcept { return geometry_; }
  bool needs_input_grad() const noexcept { return input_.with_grad; }
  // The input gradient is left to backward_input() (a residual block's first convolution adds it last).
  void defer_input_grad() noexcept { defer_input_grad_ = true; }
  // dx += conv^T(dy, w): the deferred input gradient.
  void backward_input(const ParameterStore& params);

  void prepare(nn::Context& ctx, const ParameterStore& params) override;
  void forward(const ParameterStore& params, bool training) override;
  void backward(const ParameterStore& params, const GradientReady& ready) override;
  void convolutions(std::vector<const ConvNode*>& out) const override { out.push_back(this); }
  void describe(std::string& out) const override;

 private:
  nn::ConvGeometry geometry_;
  ParamRef weight_;
  bool defer_input_grad_ = false;
  std::unique_ptr<nn::Conv2d> layer_;
};

class BatchNormNode final : public LayerNode {
 public:
  BatchNormNode(std::string name, nn::BatchNormOptions options, Activation& input, ParameterLayout& layout);
  // The end of a residual block: z is added before the ReLU, and z's gradient is written there.
  void add_before_relu(Activation& z) noexcept { residual_ = &z; }

  void prepare(nn::Context& ctx, const ParameterStore& params) override;
  void forward(const ParameterStore& params, bool training) override;
  void backward(const ParameterStore& params, const GradientReady& ready) override;
  void describe(std::string& out) const override;
  void count_batch_norm_paths(std::map<std::string, int>& counts) const override;

 private:
  nn::BatchNormParams params_of(const ParameterStore& p) const;
  nn::BatchNormOptions options_;
  Activation* residual_ = nullptr;
  ParamRef gamma_, beta_, running_mean_, running_var_;
  std::unique_ptr<nn::BatchNorm> layer_;
};

class PoolNode final : public LayerNode {
 public:
  // global: the mean over the whole image (geometry's window ignored).
  PoolNode(std::string name, const nn::PoolGeometry& geometry, nn::PoolMode mode, bool global,
           Activation& input);

  void prepare(nn::Context& ctx, const ParameterStore& params) override;
  void forward(const ParameterStore& params, bool training) override;
  void backward(const ParameterStore& params, const GradientReady& ready) override;
  void describe(std::string& out) const override;

 private:
  nn::PoolGeometry geometry_;
  nn::PoolMode mode_;
  bool global_;
  std::unique_ptr<nn::Pool2d> layer_;
};

// A ReLU that does not follow a batch norm (one that does is folded into it).
class ReluNode final : public LayerNode {
 public:
  ReluNode(std::string name, Activation& input);

  void prepare(nn::Context& ctx, const ParameterStore& params) override;
  void forward(const ParameterStore& params, bool training) override;
  void backward(const ParameterStore& params, const GradientReady& ready) override;
  void describe(std::string& out) const override;

 private:
  const nn::Elementwise* elementwise_ = nullptr;
};

// relu(main(x) + shortcut(x)): the main branch starts with a convolution and ends with a batch norm that adds
// the shortcut's output (or x) before its ReLU. The order of the work is ResNet's as it was written by hand
// (and so are the kernels of a step): outputs are allocated main branch first; prepare and forward run the
// main branch up to its last convolution, then the shortcut, then the rest; backward runs the main branch
// from its end (its batch norm writes the shortcut's gradient), the filter gradient of its first
// convolution, the shortcut, and last the first convolution's input gradient, added to the shortcut's.
class ResidualNode final : public Node {
 public:
  ResidualNode(std::string name, std::vector<std::unique_ptr<Node>> main,
               std::vector<std::unique_ptr<Node>> shortcut);
  Activation& output() noexcept override { return main_.back()->output(); }

  void allocate(nn::Context& ctx) override;
  void prepare(nn::Context& ctx, const ParameterStore& params) override;
  void forward(const ParameterStore& params, bool training) override;
  void backward(const ParameterStore& params, const GradientReady& ready) override;
  void convolutions(std::vector<const ConvNode*>& out) const override;
  void describe(std::string& out) const override;
  void count_batch_norm_paths(std::map<std::string, int>& counts) const override;

 private:
  std::vector<std::unique_ptr<Node>> main_, shortcut_;
  ConvNode* first_;        // main_[0]
  std::size_t last_conv_;  // where the shortcut runs: before main_[last_conv_]
};

}  // namespace conveyor::train
