#include "src/train/network_nodes.h"

#include <algorithm>

namespace conveyor::train {

void Activation::allocate(nn::Context& ctx) {
  const std::size_t bytes = shape.count() * nn::element_size(ctx.dtype());
  const std::string dims = std::string(" (") + nn::to_string(ctx.dtype()) + " " + std::to_string(shape.n) +
                           "x" + std::to_string(shape.h) + "x" + std::to_string(shape.w) + "x" +
                           std::to_string(shape.c) + ")";
  value = ctx.allocate(bytes, name + dims);
  x = value.tensor(shape, ctx.dtype());
  if (with_grad) {
    grad = ctx.allocate(bytes, name + " gradient" + dims);
    dx = grad.tensor(shape, ctx.dtype());
  }
}

// ---- a node of one layer ---------------------------------------------------------------------------

LayerNode::LayerNode(std::string name, Activation& input, const nn::Shape4& output_shape)
    : Node(std::move(name)), input_(input) {
  output_.shape = output_shape;
  output_.name = this->name() + " output";
}

// ---- convolution -----------------------------------------------------------------------------------

ConvNode::ConvNode(std::string name, const nn::ConvGeometry& geometry, Activation& input,
                   ParameterLayout& layout)
    : LayerNode(std::move(name), input, geometry.output()), geometry_(geometry) {
  const int channels = geometry.out_channels;
  weight_ = layout.add(this->name() + ".weight", ParamGroup::weights, geometry.weight_count(),
                       ParamInit::kaiming_normal_fan_out, channels * geometry.kernel * geometry.kernel,
                       {channels, geometry.input.c, geometry.kernel, geometry.kernel}, /*krsc=*/true);
}

void ConvNode::prepare(nn::Context& ctx, const ParameterStore& p) {
  layer_ = ctx.make_conv2d(name(), geometry_, needs_input_grad());
  layer_->prepare(input_.x, p.weight(weight_), output_.x, input_.dx, p.weight_grad(weight_));
}

void ConvNode::forward(const ParameterStore& p, bool) {
  layer_->forward(input_.x, p.weight(weight_), output_.x);
}

void ConvNode::backward(const ParameterStore& p, const GradientReady& ready) {
  layer_->backward_filter(input_.x, output_.dx, p.weight_grad(weight_));
  if (ready) ready(weight_);
  if (needs_input_grad() && !defer_input_grad_)
    layer_->backward_data(output_.dx, p.weight(weight_), input_.dx, false);
}

void ConvNode::backward_input(const ParameterStore& p) {
  if (needs_input_grad()) layer_->backward_data(output_.dx, p.weight(weight_), input_.dx, true);
}

void ConvNode::describe(std::string& out) const {
  out += (layer_ ? layer_->describe() : nn::describe_geometry(name(), geometry_)) + "\n";
}

// ---- batch norm ------------------------------------------------------------------------------------

BatchNormNode::BatchNormNode(std::string name, nn::BatchNormOptions options, Activation& input,
                             ParameterLayout& layout)
    : LayerNode(std::move(name), input, input.shape), options_(options) {
  const int channels = input.shape.c;
  gamma_ = layout.add(this->name() + ".weight", ParamGroup::vectors, channels, ParamInit::ones);
  beta_ = layout.add(this->name() + ".bias", ParamGroup::vectors, channels, ParamInit::zeros);
  running_mean_ =
      layout.add(this->name() + ".running_mean", ParamGroup::statistics, channels, ParamInit::zeros);
  running_var_ = layout.add(this->name() + ".running_var", ParamGroup::statistics, channels, ParamInit::ones);
}

nn::BatchNormParams BatchNormNode::params_of(const ParameterStore& p) const {
  return {p.vector(gamma_),          p.vector(beta_),       p.statistic(running_mean_),
          p.statistic(running_var_), p.vector_grad(gamma_), p.vector_grad(beta_)};
}

void BatchNormNode::prepare(nn::Context& ctx, const ParameterStore& p) {
  layer_ = ctx.make_batch_norm(name(), input_.shape, options_);
  layer_->prepare(input_.x, residual_ ? &residual_->x : nullptr, output_.x, output_.dx, input_.dx,
                  residual_ ? &residual_->dx : nullptr, params_of(p));
}

void BatchNormNode::forward(const ParameterStore& p, bool training) {
  const nn::Tensor* z = residual_ ? &residual_->x : nullptr;
  if (training)
    layer_->forward_training(input_.x, z, output_.x, params_of(p));
  else
    layer_->forward_inference(input_.x, z, output_.x, params_of(p));
}

void BatchNormNode::backward(const ParameterStore& p, const GradientReady& ready) {
  layer_->backward(input_.x, output_.x, output_.dx, input_.dx, residual_ ? &residual_->dx : nullptr,
                   params_of(p));
  if (ready) {
    ready(gamma_);
    ready(beta_);
  }
}

void BatchNormNode::describe(std::string& out) const {
  out += layer_ ? layer_->describe()
                : name() + " batch norm" + (options_.residual ? " + add" : "") +
                      (options_.relu ? " + ReLU" : "");
  out += "\n";
}

void BatchNormNode::count_batch_norm_paths(std::map<std::string, int>& counts) const {
  ++counts[layer_ ? layer_->path() : "not prepared"];
}

// ---- pooling ---------------------------------------------------------------------------------------

PoolNode::PoolNode(std::string name, const nn::PoolGeometry& geometry, nn::PoolMode mode, bool global,
                   Activation& input)
    : LayerNode(std::move(name), input,
                global ? nn::Shape4{input.shape.n, 1, 1, input.shape.c} : geometry.output()),
      geometry_(geometry),
      mode_(mode),
      global_(global) {}

void PoolNode::prepare(nn::Context& ctx, const ParameterStore&) {
  layer_ = global_ ? ctx.make_global_average_pool(name(), input_.shape)
                   : ctx.make_pool2d(name(), geometry_, mode_);
}

void PoolNode::forward(const ParameterStore&, bool) { layer_->forward(input_.x, output_.x); }

void PoolNode::backward(const ParameterStore&, const GradientReady&) {
  layer_->backward(input_.x, output_.x, output_.dx, input_.dx);
}

void PoolNode::describe(std::string& out) const {
  const std::string window = std::to_string(geometry_.window);
  out += global_
             ? name() + " global average pool"
             : name() + (mode_ == nn::PoolMode::max ? " max pool " : " average pool ") + window + "x" +
                   window + "/" + std::to_string(geometry_.stride) + " pad " + std::to_string(geometry_.pad);
  out += " on " + std::to_string(input_.shape.h) + "x" + std::to_string(input_.shape.w) + "\n";
}

// ---- ReLU ------------------------------------------------------------------------------------------

ReluNode::ReluNode(std::string name, Activation& input) : LayerNode(std::move(name), input, input.shape) {}

void ReluNode::prepare(nn::Context& ctx, const ParameterStore&) { elementwise_ = &ctx.elementwise(); }

void ReluNode::forward(const ParameterStore&, bool) { elementwise_->relu_forward(input_.x, output_.x); }

void ReluNode::backward(const ParameterStore&, const GradientReady&) {
  elementwise_->relu_backward(output_.x, output_.dx, input_.dx);
}

void ReluNode::describe(std::string& out) const { out += name() + " ReLU\n"; }

// ---- residual block --------------------------------------------------------------------------------

ResidualNode::ResidualNode(std::string name, std::vector<std::unique_ptr<Node>> main,
                           std::vector<std::unique_ptr<Node>> shortcut)
    : Node(std::move(name)), main_(std::move(main)), shortcut_(std::move(shortcut)) {
  // The network's compiler checked the form: a convolution first, a batch norm with the add last.
  first_ = static_cast<ConvNode*>(main_.front().get());
  first_->defer_input_grad();
  last_conv_ = 0;
  for (std::size_t i = 0; i < main_.size(); ++i)
    if (dynamic_cast<const ConvNode*>(main_[i].get())) last_conv_ = i;
}

void ResidualNode::allocate(nn::Context& ctx) {
  for (auto& node : main_) node->allocate(ctx);
  for (auto& node : shortcut_) node->allocate(ctx);
}

void ResidualNode::prepare(nn::Context& ctx, const ParameterStore& p) {
  for (std::size_t i = 0; i < last_conv_; ++i) main_[i]->prepare(ctx, p);
  for (auto& node : shortcut_) node->prepare(ctx, p);
  for (std::size_t i = last_conv_; i < main_.size(); ++i) main_[i]->prepare(ctx, p);
}

void ResidualNode::forward(const ParameterStore& p, bool training) {
  for (std::size_t i = 0; i < last_conv_; ++i) main_[i]->forward(p, training);
  for (auto& node : shortcut_) node->forward(p, training);
  for (std::size_t i = last_conv_; i < main_.size(); ++i) main_[i]->forward(p, training);
}

void ResidualNode::backward(const ParameterStore& p, const GradientReady& ready) {
  for (std::size_t i = main_.size(); i-- > 0;) main_[i]->backward(p, ready);
  for (std::size_t i = shortcut_.size(); i-- > 0;) shortcut_[i]->backward(p, ready);
  // The main branch adds its gradient to the shortcut's (or, for the identity, to the one its batch norm
  // wrote into the block input's gradient).
  first_->backward_input(p);
}

void ResidualNode::convolutions(std::vector<const ConvNode*>& out) const {
  for (const auto& node : main_) node->convolutions(out);
  for (const auto& node : shortcut_) node->convolutions(out);
}

void ResidualNode::describe(std::string& out) const {
  for (const auto& node : main_) node->describe(out);
  for (const auto& node : shortcut_) node->describe(out);
}

void ResidualNode::count_batch_norm_paths(std::map<std::string, int>& counts) const {
  for (const auto& node : main_) node->count_batch_norm_paths(counts);
  for (const auto& node : shortcut_) node->count_batch_norm_paths(counts);
}

}  // namespace conveyor::train
