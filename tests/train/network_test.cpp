// The models as wired from layers: ResNet-18 has torchvision's parameters, and the whole network's
// backward pass is the gradient of its loss (directional finite differences, tensor by tensor), which
// the per-layer checks alone cannot show (residual wiring, gradient accumulation).
#include "src/train/network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "conveyor/random.h"
#include "src/train/layers/cpu_context.h"

namespace conveyor::train {
namespace {

std::size_t learnable_parameters(const ParameterLayout& layout) {
  std::size_t total = 0;
  for (const ParamEntry& e : layout.entries())
    if (e.ref.group != ParamGroup::statistics) total += e.ref.count;
  return total;
}

TEST(Network, ResNet18HasTorchvisionsParameters) {
  NetworkShape shape;
  shape.batch = 2;
  shape.input = {224, 224, 3};
  shape.classes = 1000;
  ParameterLayout layout;
  Network net(resnet18(1000), shape, layout);
  EXPECT_EQ(learnable_parameters(layout), 11'689'512u);  // sum(p.numel() for p in resnet18().parameters())
  const auto& e = layout.entries();
  EXPECT_EQ(e.front().name, "conv1.weight");
  EXPECT_EQ(e.back().name, "fc.bias");
  EXPECT_TRUE(std::any_of(e.begin(), e.end(),
                          [](const ParamEntry& p) { return p.name == "layer4.0.downsample.1.running_var"; }));
  EXPECT_EQ(
      std::count_if(e.begin(), e.end(),
                    [](const ParamEntry& p) { return p.name.find("downsample.0") != std::string::npos; }),
      3);
}

// L(w + h g) - L(w - h g) ~ 2 h |g|^2 for every parameter tensor of `description` (on the CPU reference),
// with a step of `step` in weight space and the slope within `tolerance` of 1.
void check_gradients(const NetworkDescription& description, NetworkShape shape, double step = 2e-3,
                     double tolerance = 0.03) {
  ParameterLayout layout;
  Network net(description, shape, layout);
  ParameterStore params(layout, 5);
  nn::CpuContext ctx;
  params.bind(ctx);
  params.set_hyper({}, 1.f);
  net.prepare(ctx, params);
  Rng rng(9);
  float* input = net.input().as<float>();
  for (std::size_t i = 0; i < net.input().count(); ++i) input[i] = static_cast<float>(rng.uniform(-1, 1));
  for (int i = 0; i < shape.batch; ++i) net.labels()[i] = i % shape.classes;

  auto loss = [&] {
    net.forward(params, true);
    net.loss(shape.batch, 1.f, true);
    double sum = 0;
    for (int i = 0; i < shape.batch; ++i) sum += net.row_loss()[i];
    return sum / shape.batch;
  };
  loss();
  net.backward(params);
  for (const ParamEntry& e : layout.entries()) {
    if (e.ref.group == ParamGroup::statistics) continue;
    const bool weights = e.ref.group == ParamGroup::weights;
    const float* grad =
        weights ? static_cast<const float*>(params.weight_grad(e.ref)) : params.vector_grad(e.ref);
    float* value = weights ? static_cast<float*>(params.weight(e.ref)) : params.vector(e.ref);
    const std::vector<float> g(grad, grad + e.ref.count), keep(value, value + e.ref.count);
    const double norm2 = std::inner_product(g.begin(), g.end(), g.begin(), 0.0);
    if (norm2 < 1e-14) continue;
    // The default step, 2e-3 in weight space: small enough that few ReLUs change sign, large enough for
    // float32 losses.
    const double h = step / std::sqrt(norm2);
    auto shifted = [&](double sign) {
      for (std::size_t i = 0; i < g.size(); ++i) value[i] = static_cast<float>(keep[i] + sign * h * g[i]);
      return loss();
    };
    const double slope = (shifted(+1) - shifted(-1)) / (2 * h);
    std::copy(keep.begin(), keep.end(), value);
    EXPECT_NEAR(slope / norm2, 1.0, tolerance) << e.name;
  }
}

TEST(NetworkGradient, EveryTensorsGradientIsTheDirectionalDerivativeOfTheLoss) {
  NetworkShape shape;
  shape.batch = 4;
  shape.input = {6, 6, 2};
  shape.classes = 3;
  check_gradients(small_resnet(3, 1, 3), shape);
}

TEST(NetworkGradient, HoldsForEveryKindOfLayerAUserCanDescribe) {
  // A batch norm first (it reads the network's input, whose gradient is then made too), a ReLU and pools
  // of their own, a batch norm after a pool, an identity block and a block whose shortcut starts with a pool.
  using namespace layers;
  const NetworkDescription net{
      batch_norm(),
      conv(4, 3),
      relu(),
      max_pool(2, 2),
      batch_norm(),
      relu(),
      residual({conv(4, 3), batch_norm(), relu(), conv(4, 3), batch_norm()}),
      residual({conv(6, 3, 2), batch_norm()}, {avg_pool(2, 2), conv(6, 1, 1, 0), batch_norm()}),
      global_avg_pool(),
      dense(3)};
  NetworkShape shape;
  shape.batch = 4;
  shape.input = {8, 8, 2};
  shape.classes = 3;
  // More kinks than the ResNet's (a ReLU and pools of their own): a smaller step, within 5 % (all within
  // 2 % at this step on 2026-11-27; a wrongly wired gradient is off by far more).
  check_gradients(net, shape, 5e-4, 0.05);
}

}  // namespace
}  // namespace conveyor::train
