#include "src/train/network.h"

#include <chrono>
#include <exception>
#include <map>
#include <thread>
#include <vector>

#include "conveyor/error.h"
#include "src/train/backend.h"

namespace conveyor::train {

Network::Network(const NetworkDescription& description, const NetworkShape& shape, ParameterLayout& layout)
    : description_(description), shape_(shape), net_(compile_network(description, shape, layout)) {}

Network::~Network() = default;
Network::Network(Network&&) noexcept = default;

void Network::release() noexcept {
  // Compiling again declares the same parameters in the same order, so a scratch layout takes them (and
  // a description compiled once compiles again).
  ParameterLayout scratch;
  net_ = compile_network(description_, shape_, scratch);
  elementwise_ = nullptr;
}

void Network::prepare(nn::Context& ctx, ParameterStore& p) {
  CompiledNetwork& net = *net_;
  net.input.allocate(ctx);
  for (auto& node : net.nodes) node->allocate(ctx);
  const auto rows = static_cast<std::size_t>(shape_.batch),
             classes = static_cast<std::size_t>(shape_.classes);
  net.logits = ctx.allocate(rows * classes * sizeof(float), net.classifier + " output (logits)");
  net.first_logits =
      ctx.allocate(rows * classes * sizeof(float), "logits of the unmirrored pass (evaluation)");
  net.dlogits = ctx.allocate(rows * classes * nn::element_size(ctx.dtype()), "logits gradient");
  net.row_loss = ctx.allocate(rows * sizeof(float), "per-image loss");
  net.row_correct = ctx.allocate(rows * sizeof(int), "per-image correctness");
  net.labels = ctx.allocate(rows * sizeof(std::int64_t), "labels");
  net.dense = ctx.make_dense(net.classifier, shape_.batch, net.features->shape.c, shape_.classes);
  net.loss = ctx.make_loss("loss", shape_.batch, shape_.classes);

  // On a GPU, cuBLAS's first products of the classifier's shapes take about 0.2 s of host time, which
  // fell into the trainer's first step (bench/results/2026-11-24-h100-run1/). They run once here, on a
  // thread of their own while this one prepares the convolutions (cuDNN's host work), so that both costs
  // are paid side by side; but only when that preparation times nothing (a warm algorithm cache, or
  // deterministic algorithms): cuDNN's timed search must not share the GPU and the driver with them, so
  // after a cold start they run when the convolutions are ready. They write only the classifier's outputs
  // and gradients, which every step overwrites, and take no memory from the pool (cuBLAS has its
  // workspace). The thread is joined below, or when prepare() throws.
  classifier_warmup_seconds_ = 0;
  std::exception_ptr classifier_failure;
  const auto classifier_products = [this, &ctx, &p, &net, &classifier_failure] {
    const auto start = std::chrono::steady_clock::now();
    try {
      DeviceScope scope(ctx.device());  // the current device is the calling thread's
      const Activation& features = *net.features;
      net.dense->forward(features.x, p.weight(net.classifier_weight), p.vector(net.classifier_bias),
                         net.logits.as<float>());
      net.dense->backward_weights(features.x, net.dlogits.data(), p.weight_grad(net.classifier_weight),
                                  p.vector_grad(net.classifier_bias));
      net.dense->backward_data(net.dlogits.data(), p.weight(net.classifier_weight), features.dx);
    } catch (...) {
      classifier_failure = std::current_exception();
    }
    classifier_warmup_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  bool timed_search = false;
  std::vector<const ConvNode*> convolutions;
  for (const auto& node : net.nodes) node->convolutions(convolutions);
  for (const ConvNode* conv : convolutions)
    timed_search = timed_search || !ctx.chooses_without_timing(conv->geometry(), conv->needs_input_grad());
  const bool first_calls_cost = ctx.has_first_call_costs();
  std::jthread classifier;
  if (first_calls_cost && !timed_search) classifier = std::jthread(classifier_products);

  for (auto& node : net.nodes) node->prepare(ctx, p);
  if (classifier.joinable())
    classifier.join();
  else if (first_calls_cost)
    classifier_products();
  if (classifier_failure) std::rethrow_exception(classifier_failure);
  ctx.allocate_workspace();
  elementwise_ = &ctx.elementwise();
}

nn::Tensor Network::input() const { return net_->input.x; }
std::int64_t* Network::labels() const { return net_->labels.as<std::int64_t>(); }
const float* Network::row_loss() const { return net_->row_loss.as<const float>(); }
const int* Network::row_correct() const { return net_->row_correct.as<const int>(); }

void Network::forward(const ParameterStore& p, bool training) {
  CompiledNetwork& net = *net_;
  for (auto& node : net.nodes) node->forward(p, training);
  net.dense->forward(net.features->x, p.weight(net.classifier_weight), p.vector(net.classifier_bias),
                     net.logits.as<float>());
}

void Network::forward_evaluation(const ParameterStore& p, bool mirrored_too) {
  CompiledNetwork& net = *net_;
  forward(p, false);
  if (!mirrored_too) return;
  const std::size_t count = static_cast<std::size_t>(shape_.batch) * static_cast<std::size_t>(shape_.classes);
  elementwise_->copy_floats(net.logits.as<const float>(), net.first_logits.as<float>(), count);
  elementwise_->mirror_width(net.input.x);
  forward(p, false);
  elementwise_->average_into(net.logits.as<float>(), net.first_logits.as<const float>(), count);
}

void Network::loss(int valid_rows, float grad_scale, bool with_gradient, float label_smoothing) {
  CompiledNetwork& net = *net_;
  net.loss->forward_backward(net.logits.as<const float>(), net.labels.as<const std::int64_t>(), valid_rows,
                             grad_scale / static_cast<float>(shape_.batch),
                             with_gradient ? net.dlogits.data() : nullptr, net.row_loss.as<float>(),
                             net.row_correct.as<int>(), label_smoothing);
}

void Network::backward(ParameterStore& p, const GradientReady& ready) {
  CompiledNetwork& net = *net_;
  net.dense->backward_weights(net.features->x, net.dlogits.data(), p.weight_grad(net.classifier_weight),
                              p.vector_grad(net.classifier_bias));
  if (ready) {
    ready(net.classifier_weight);
    ready(net.classifier_bias);
  }
  net.dense->backward_data(net.dlogits.data(), p.weight(net.classifier_weight), net.features->dx);
  for (std::size_t i = net.nodes.size(); i-- > 0;) net.nodes[i]->backward(p, ready);
}

std::string Network::describe() const {
  std::string text;
  for (const auto& node : net_->nodes) node->describe(text);
  return text + net_->classifier + " dense " + std::to_string(net_->features->shape.c) + "->" +
         std::to_string(shape_.classes) + "\n";
}

std::string Network::batch_norm_paths() const {
  std::map<std::string, int> counts;
  for (const auto& node : net_->nodes) node->count_batch_norm_paths(counts);
  std::string text;
  for (const auto& [path, count] : counts)
    text += (text.empty() ? "" : "; ") + std::to_string(count) + " x " + path;
  return text;
}

}  // namespace conveyor::train
