// The models as wired from layers: ResNet-18 has torchvision's parameters, and the whole network's
// backward pass is the gradient of its loss (directional finite differences, tensor by tensor), which
// the per-layer checks alone cannot show (residual wiring, gradient accumulation).
#include "src/train/network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "conveyor/random.h"

namespace conveyor::train {
namespace {

std::size_t learnable_parameters(const ParameterLayout& layout) {
  std::size_t total = 0;
  for (const ParamEntry& e : layout.entries())
    if (e.ref.group != ParamGroup::statistics) total += e.ref.count;
  return total;
}

TEST(Network, ResNet18HasTorchvisionsParameters) {
  NetworkSpec spec;
  spec.kind = ModelKind::resnet18;
  spec.batch = 2;
  spec.input = {224, 224, 3};
  spec.classes = 1000;
  ParameterLayout layout;
  Network net(spec, layout);
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

TEST(NetworkGradient, EveryTensorsGradientIsTheDirectionalDerivativeOfTheLoss) {
  NetworkSpec spec;
  spec.kind = ModelKind::small_resnet;
  spec.batch = 4;
  spec.input = {6, 6, 2};
  spec.classes = 3;
  spec.width = 3;
  spec.blocks_per_stage = 1;
  ParameterLayout layout;
  Network net(spec, layout);
  ParameterStore params(layout, 5);
  nn::Context ctx;
  params.bind(ctx);
  params.set_hyper(ctx, {}, 1.f);
  net.prepare(ctx, params);
  Rng rng(9);
  float* input = net.input().as<float>();
  for (std::size_t i = 0; i < net.input().count(); ++i) input[i] = static_cast<float>(rng.uniform(-1, 1));
  for (int i = 0; i < spec.batch; ++i) net.labels()[i] = i % spec.classes;

  auto loss = [&] {
    net.forward(ctx, params, true);
    net.loss(ctx, spec.batch, 1.f, true);
    double sum = 0;
    for (int i = 0; i < spec.batch; ++i) sum += net.row_loss()[i];
    return sum / spec.batch;
  };
  loss();
  net.backward(ctx, params);
  for (const ParamEntry& e : layout.entries()) {
    if (e.ref.group == ParamGroup::statistics) continue;
    const bool weights = e.ref.group == ParamGroup::weights;
    const float* grad =
        weights ? static_cast<const float*>(params.weight_grad(e.ref)) : params.vector_grad(e.ref);
    float* value = weights ? static_cast<float*>(params.weight(e.ref)) : params.vector(e.ref);
    const std::vector<float> g(grad, grad + e.ref.count), keep(value, value + e.ref.count);
    const double norm2 = std::inner_product(g.begin(), g.end(), g.begin(), 0.0);
    if (norm2 < 1e-14) continue;
    // L(w + h g) - L(w - h g) ~ 2 h |g|^2, with a step of 2e-3 in weight space: small enough that few
    // ReLUs change sign, large enough for float32 losses.
    const double h = 2e-3 / std::sqrt(norm2);
    auto shifted = [&](double sign) {
      for (std::size_t i = 0; i < g.size(); ++i) value[i] = static_cast<float>(keep[i] + sign * h * g[i]);
      return loss();
    };
    const double slope = (shifted(+1) - shifted(-1)) / (2 * h);
    std::copy(keep.begin(), keep.end(), value);
    EXPECT_NEAR(slope / norm2, 1.0, 0.03) << e.name;
  }
}

}  // namespace
}  // namespace conveyor::train
