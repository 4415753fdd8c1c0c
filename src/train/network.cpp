#include "src/train/network.h"

#include <chrono>
#include <exception>
#include <thread>

#include "conveyor/error.h"
#include "src/train/layers/mirror.h"

#ifdef CONVEYOR_HAVE_CUDA
#include "src/device/cuda_handles.h"
#include "src/train/layers/cuda_context.h"
#endif

namespace conveyor::train {

using nn::Shape4;
using nn::Tensor;

// A layer's output and the gradient flowing back into it.
struct Network::Activation {
  Shape4 shape;
  std::string name;
  nn::Buffer value, grad;
  Tensor x, dx;

  void allocate(nn::Context& ctx, bool with_grad) {
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
};

// A convolution followed by batch norm (and ReLU, and the residual add when it ends a block).
struct Network::ConvBn {
  nn::Conv2d conv;
  nn::BatchNorm bn;
  ParamRef weight, gamma, beta, running_mean, running_var;
  Activation conv_out, bn_out;

  ConvBn(const std::string& conv_name, const std::string& bn_name, const nn::ConvGeometry& g,
         nn::BatchNormOptions options, bool needs_input_grad, ParameterLayout& layout)
      : conv(conv_name, g, needs_input_grad), bn(bn_name, g.output(), options) {
    const int channels = g.out_channels;
    weight = layout.add(conv_name + ".weight", ParamGroup::weights, g.weight_count(),
                        ParamInit::kaiming_normal_fan_out, channels * g.kernel * g.kernel,
                        {channels, g.input.c, g.kernel, g.kernel}, /*krsc=*/true);
    gamma = layout.add(bn_name + ".weight", ParamGroup::vectors, channels, ParamInit::ones);
    beta = layout.add(bn_name + ".bias", ParamGroup::vectors, channels, ParamInit::zeros);
    running_mean = layout.add(bn_name + ".running_mean", ParamGroup::statistics, channels, ParamInit::zeros);
    running_var = layout.add(bn_name + ".running_var", ParamGroup::statistics, channels, ParamInit::ones);
    conv_out.shape = bn_out.shape = g.output();
    conv_out.name = conv_name + " output";
    bn_out.name = bn_name + " output";
  }

  nn::BatchNormParams params(const ParameterStore& p) const {
    return {p.vector(gamma),          p.vector(beta),       p.statistic(running_mean),
            p.statistic(running_var), p.vector_grad(gamma), p.vector_grad(beta)};
  }
  void allocate(nn::Context& ctx) {
    conv_out.allocate(ctx, true);
    bn_out.allocate(ctx, true);
  }
};

struct Network::Block {
  ConvBn a, b;
  std::optional<ConvBn> shortcut;
};

struct Network::Layers {
  Activation input;
  std::optional<ConvBn> stem;
  std::optional<nn::Pool2d> maxpool;
  Activation pool_out;
  std::vector<Block> blocks;
  std::optional<nn::Pool2d> pool;
  Activation features;
  std::optional<nn::Linear> fc;
  ParamRef fc_weight, fc_bias;
  std::optional<nn::SoftmaxCrossEntropy> loss;
  nn::Buffer logits, dlogits, row_loss, row_correct, labels;
  nn::Buffer first_logits;  // evaluation with the mirror image: the first pass's logits
};

Network::Network(const NetworkSpec& spec, ParameterLayout& layout)
    : spec_(spec), layers_(build(spec, layout)) {}

void Network::release() noexcept {
  // Rebuilding declares the same parameters in the same order, so a scratch layout takes them.
  ParameterLayout scratch;
  layers_ = build(spec_, scratch);
}

std::unique_ptr<Network::Layers> Network::build(const NetworkSpec& spec, ParameterLayout& layout) {
  auto layers = std::make_unique<Layers>();
  Layers& L = *layers;
  const bool resnet18 = spec.kind == ModelKind::resnet18;
  if (spec.batch < 1 || spec.input.empty() || spec.classes < 2 || spec.width < 1 || spec.blocks_per_stage < 1)
    throw InvalidArgument("network: batch, input shape, classes, width and blocks must be positive");
  nn::BatchNormOptions plain = spec.batch_norm, with_relu = spec.batch_norm, ends_block = spec.batch_norm;
  plain.relu = plain.residual = false;
  with_relu.relu = true, with_relu.residual = false;
  ends_block.relu = ends_block.residual = true;

  L.input.shape = {spec.batch, spec.input.height, spec.input.width, spec.input.channels};
  L.input.name = "normalized input";
  const int stem_channels = resnet18 ? 64 : spec.width;
  const nn::ConvGeometry stem{L.input.shape, stem_channels, resnet18 ? 7 : 3, resnet18 ? 2 : 1,
                              resnet18 ? 3 : 1};
  L.stem.emplace("conv1", "bn1", stem, with_relu, /*needs_input_grad=*/false, layout);
  Shape4 shape = stem.output();
  if (resnet18) {
    L.maxpool.emplace("maxpool", nn::PoolGeometry{shape, 3, 2, 1}, nn::PoolMode::max);
    shape = L.maxpool->output_shape();
    L.pool_out.shape = shape;
    L.pool_out.name = "maxpool output";
  }
  const std::vector<int> widths = resnet18 ? std::vector<int>{64, 128, 256, 512}
                                           : std::vector<int>{spec.width, 2 * spec.width, 4 * spec.width};
  const int blocks = resnet18 ? 2 : spec.blocks_per_stage;
  for (std::size_t stage = 0; stage < widths.size(); ++stage)
    for (int b = 0; b < blocks; ++b) {
      const std::string prefix = "layer" + std::to_string(stage + 1) + "." + std::to_string(b) + ".";
      const int stride = stage > 0 && b == 0 ? 2 : 1, out = widths[stage];
      const nn::ConvGeometry g1{shape, out, 3, stride, 1};
      const nn::ConvGeometry g2{g1.output(), out, 3, 1, 1};
      Block block{ConvBn(prefix + "conv1", prefix + "bn1", g1, with_relu, true, layout),
                  ConvBn(prefix + "conv2", prefix + "bn2", g2, ends_block, true, layout), std::nullopt};
      if (stride != 1 || shape.c != out)
        block.shortcut.emplace(prefix + "downsample.0", prefix + "downsample.1",
                               nn::ConvGeometry{shape, out, 1, stride, 0}, plain, true, layout);
      L.blocks.push_back(std::move(block));
      shape = g2.output();
    }
  L.pool.emplace(nn::Pool2d::global_average("avgpool", shape));
  L.features.shape = L.pool->output_shape();
  L.features.name = "avgpool output";
  L.fc.emplace("fc", spec.batch, shape.c, spec.classes);
  L.fc_weight = layout.add("fc.weight", ParamGroup::weights, L.fc->weight_count(), ParamInit::uniform_fan_in,
                           shape.c, {spec.classes, shape.c});
  L.fc_bias = layout.add("fc.bias", ParamGroup::vectors, spec.classes, ParamInit::uniform_fan_in, shape.c);
  L.loss.emplace("loss", spec.batch, spec.classes);
  return layers;
}

Network::~Network() = default;
Network::Network(Network&&) noexcept = default;

Network::Activation& Network::block_input(std::size_t i) const {
  Layers& L = *layers_;
  if (i > 0) return L.blocks[i - 1].b.bn_out;
  return L.maxpool ? L.pool_out : L.stem->bn_out;
}

void Network::prepare(nn::Context& ctx, ParameterStore& p) {
  Layers& L = *layers_;
  L.input.allocate(ctx, false);
  L.stem->allocate(ctx);
  if (L.maxpool) L.pool_out.allocate(ctx, true);
  for (Block& b : L.blocks) {
    b.a.allocate(ctx);
    b.b.allocate(ctx);
    if (b.shortcut) b.shortcut->allocate(ctx);
  }
  L.features.allocate(ctx, true);
  const auto rows = static_cast<std::size_t>(spec_.batch), classes = static_cast<std::size_t>(spec_.classes);
  L.logits = ctx.allocate(rows * classes * sizeof(float), "fc output (logits)");
  L.first_logits = ctx.allocate(rows * classes * sizeof(float), "logits of the unmirrored pass (evaluation)");
  L.dlogits = ctx.allocate(rows * classes * nn::element_size(ctx.dtype()), "logits gradient");
  L.row_loss = ctx.allocate(rows * sizeof(float), "per-image loss");
  L.row_correct = ctx.allocate(rows * sizeof(int), "per-image correctness");
  L.labels = ctx.allocate(rows * sizeof(std::int64_t), "labels");

  auto prepare_conv_bn = [&](ConvBn& u, const Activation& in, const Tensor* z, const Tensor* dz) {
    u.conv.prepare(ctx, in.x, p.weight(u.weight), u.conv_out.x, in.dx, p.weight_grad(u.weight));
    u.bn.prepare(ctx, u.conv_out.x, z, u.bn_out.x, u.bn_out.dx, u.conv_out.dx, dz, u.params(p));
  };
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
  const auto classifier_products = [this, &ctx, &p, &L, &classifier_failure] {
#ifdef CONVEYOR_HAVE_CUDA
    const auto start = std::chrono::steady_clock::now();
    try {
      cuda::DeviceGuard guard(ctx.cuda().device());  // the current device is the calling thread's
      L.fc->forward(ctx, L.features.x, p.weight(L.fc_weight), p.vector(L.fc_bias), L.logits.as<float>());
      L.fc->backward_weights(ctx, L.features.x, L.dlogits.data(), p.weight_grad(L.fc_weight),
                             p.vector_grad(L.fc_bias));
      L.fc->backward_data(ctx, L.dlogits.data(), p.weight(L.fc_weight), L.features.dx);
    } catch (...) {
      classifier_failure = std::current_exception();
    }
    classifier_warmup_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
#endif
  };
  bool timed_search = false;
  const auto times = [&](const ConvBn& u) {
    timed_search = timed_search || !u.conv.prepares_without_timing(ctx);
  };
  times(*L.stem);
  for (const Block& b : L.blocks) {
    times(b.a);
    times(b.b);
    if (b.shortcut) times(*b.shortcut);
  }
  std::jthread classifier;
  if (ctx.on_gpu() && !timed_search) classifier = std::jthread(classifier_products);

  prepare_conv_bn(*L.stem, L.input, nullptr, nullptr);
  if (L.maxpool) L.maxpool->prepare(ctx);
  for (std::size_t i = 0; i < L.blocks.size(); ++i) {
    Block& b = L.blocks[i];
    const Activation& in = block_input(i);
    prepare_conv_bn(b.a, in, nullptr, nullptr);
    if (b.shortcut) prepare_conv_bn(*b.shortcut, in, nullptr, nullptr);
    const Activation& residual = b.shortcut ? b.shortcut->bn_out : in;
    prepare_conv_bn(b.b, b.a.bn_out, &residual.x, &residual.dx);
  }
  L.pool->prepare(ctx);
  if (classifier.joinable())
    classifier.join();
  else if (ctx.on_gpu())
    classifier_products();
  if (classifier_failure) std::rethrow_exception(classifier_failure);
  ctx.allocate_workspace();
}

Tensor Network::input() const { return layers_->input.x; }
std::int64_t* Network::labels() const { return layers_->labels.as<std::int64_t>(); }
const float* Network::row_loss() const { return layers_->row_loss.as<const float>(); }
const int* Network::row_correct() const { return layers_->row_correct.as<const int>(); }

void Network::forward(nn::Context& ctx, const ParameterStore& p, bool training) {
  Layers& L = *layers_;
  auto conv_bn = [&](ConvBn& u, const Tensor& x, const Tensor* z) {
    u.conv.forward(ctx, x, p.weight(u.weight), u.conv_out.x);
    if (training)
      u.bn.forward_training(ctx, u.conv_out.x, z, u.bn_out.x, u.params(p));
    else
      u.bn.forward_inference(ctx, u.conv_out.x, z, u.bn_out.x, u.params(p));
  };
  conv_bn(*L.stem, L.input.x, nullptr);
  if (L.maxpool) L.maxpool->forward(ctx, L.stem->bn_out.x, L.pool_out.x);
  for (std::size_t i = 0; i < L.blocks.size(); ++i) {
    Block& b = L.blocks[i];
    const Tensor& x = block_input(i).x;
    conv_bn(b.a, x, nullptr);
    if (b.shortcut) conv_bn(*b.shortcut, x, nullptr);
    conv_bn(b.b, b.a.bn_out.x, b.shortcut ? &b.shortcut->bn_out.x : &x);
  }
  L.pool->forward(ctx, L.blocks.back().b.bn_out.x, L.features.x);
  L.fc->forward(ctx, L.features.x, p.weight(L.fc_weight), p.vector(L.fc_bias), L.logits.as<float>());
}

void Network::forward_evaluation(nn::Context& ctx, const ParameterStore& p, bool mirrored_too) {
  Layers& L = *layers_;
  forward(ctx, p, false);
  if (!mirrored_too) return;
  const std::size_t count = static_cast<std::size_t>(spec_.batch) * static_cast<std::size_t>(spec_.classes);
  nn::copy_floats(ctx, L.logits.as<const float>(), L.first_logits.as<float>(), count);
  nn::mirror_width(ctx, L.input.x);
  forward(ctx, p, false);
  nn::average_into(ctx, L.logits.as<float>(), L.first_logits.as<const float>(), count);
}

void Network::loss(nn::Context& ctx, int valid_rows, float grad_scale, bool with_gradient,
                   float label_smoothing) {
  Layers& L = *layers_;
  L.loss->forward_backward(ctx, L.logits.as<const float>(), L.labels.as<const std::int64_t>(), valid_rows,
                           grad_scale / static_cast<float>(spec_.batch),
                           with_gradient ? L.dlogits.data() : nullptr, L.row_loss.as<float>(),
                           L.row_correct.as<int>(), label_smoothing);
}

void Network::backward(nn::Context& ctx, ParameterStore& p, const GradientReady& ready) {
  Layers& L = *layers_;
  auto made = [&ready](const ParamRef& ref) {
    if (ready) ready(ref);
  };
  auto bn_made = [&made](const ConvBn& u) {
    made(u.gamma);
    made(u.beta);
  };
  L.fc->backward_weights(ctx, L.features.x, L.dlogits.data(), p.weight_grad(L.fc_weight),
                         p.vector_grad(L.fc_bias));
  made(L.fc_weight);
  made(L.fc_bias);
  L.fc->backward_data(ctx, L.dlogits.data(), p.weight(L.fc_weight), L.features.dx);
  const Activation& last = L.blocks.back().b.bn_out;
  L.pool->backward(ctx, last.x, L.features.x, L.features.dx, last.dx);
  for (std::size_t i = L.blocks.size(); i-- > 0;) {
    Block& b = L.blocks[i];
    const Activation& in = block_input(i);
    // The block's end: the gradient behind its ReLU goes both into bn2 and, as dz, into the shortcut
    // (straight into the block input's gradient when the shortcut is the identity).
    const Tensor& dz = b.shortcut ? b.shortcut->bn_out.dx : in.dx;
    b.b.bn.backward(ctx, b.b.conv_out.x, b.b.bn_out.x, b.b.bn_out.dx, b.b.conv_out.dx, &dz, b.b.params(p));
    bn_made(b.b);
    b.b.conv.backward_filter(ctx, b.a.bn_out.x, b.b.conv_out.dx, p.weight_grad(b.b.weight));
    made(b.b.weight);
    b.b.conv.backward_data(ctx, b.b.conv_out.dx, p.weight(b.b.weight), b.a.bn_out.dx, false);
    b.a.bn.backward(ctx, b.a.conv_out.x, b.a.bn_out.x, b.a.bn_out.dx, b.a.conv_out.dx, nullptr,
                    b.a.params(p));
    bn_made(b.a);
    b.a.conv.backward_filter(ctx, in.x, b.a.conv_out.dx, p.weight_grad(b.a.weight));
    made(b.a.weight);
    if (b.shortcut) {
      ConvBn& s = *b.shortcut;
      s.bn.backward(ctx, s.conv_out.x, s.bn_out.x, s.bn_out.dx, s.conv_out.dx, nullptr, s.params(p));
      bn_made(s);
      s.conv.backward_filter(ctx, in.x, s.conv_out.dx, p.weight_grad(s.weight));
      made(s.weight);
      s.conv.backward_data(ctx, s.conv_out.dx, p.weight(s.weight), in.dx, false);
    }
    // The main branch adds its gradient to the shortcut's.
    b.a.conv.backward_data(ctx, b.a.conv_out.dx, p.weight(b.a.weight), in.dx, true);
  }
  ConvBn& stem = *L.stem;
  if (L.maxpool) L.maxpool->backward(ctx, stem.bn_out.x, L.pool_out.x, L.pool_out.dx, stem.bn_out.dx);
  stem.bn.backward(ctx, stem.conv_out.x, stem.bn_out.x, stem.bn_out.dx, stem.conv_out.dx, nullptr,
                   stem.params(p));
  bn_made(stem);
  stem.conv.backward_filter(ctx, L.input.x, stem.conv_out.dx, p.weight_grad(stem.weight));
  made(stem.weight);
}

std::string Network::describe() const {
  const Layers& L = *layers_;
  std::string text;
  auto add = [&text](const std::string& line) { text += line + "\n"; };
  add(L.stem->conv.describe());
  add(L.stem->bn.describe());
  if (L.maxpool) add("maxpool 3x3/2");
  for (const Block& b : L.blocks) {
    add(b.a.conv.describe());
    add(b.a.bn.describe());
    add(b.b.conv.describe());
    add(b.b.bn.describe());
    if (b.shortcut) {
      add(b.shortcut->conv.describe());
      add(b.shortcut->bn.describe());
    }
  }
  add("avgpool (global), fc " + std::to_string(L.fc->in_features()) + "->" +
      std::to_string(L.fc->out_features()));
  return text;
}

}  // namespace conveyor::train

namespace conveyor::train {

std::string Network::batch_norm_paths() const {
  const Layers& L = *layers_;
  std::map<std::string, int> counts;
  ++counts[L.stem->bn.path()];
  for (const Block& b : L.blocks) {
    ++counts[b.a.bn.path()];
    ++counts[b.b.bn.path()];
    if (b.shortcut) ++counts[b.shortcut->bn.path()];
  }
  std::string text;
  for (const auto& [path, count] : counts)
    text += (text.empty() ? "" : "; ") + std::to_string(count) + " x " + path;
  return text;
}

}  // namespace conveyor::train
