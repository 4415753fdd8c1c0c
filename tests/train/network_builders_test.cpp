// The built-in networks as builder functions over the network description: they declare exactly the
// parameters (names, shapes, order, offsets, initialisers) of the ResNets written by hand before networks
// were data, so a seed gives the same weights, and training takes the same steps. The golden values below
// were printed by that hand-written code (ffb459c) on the build machine; the layout hash covers every
// entry's name, group, offset, count, initialiser, fan, shape and layout.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "conveyor/train/network.h"
#include "conveyor/train/trainer.h"
#include "src/train/network.h"
#include "tests/train/synthetic_batches.h"

namespace conveyor::train {
namespace {

std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t hash = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    hash ^= p[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

std::uint64_t layout_hash(const ParameterLayout& layout) {
  std::string text;
  for (const ParamEntry& e : layout.entries()) {
    text += e.name + "|" + std::to_string(static_cast<int>(e.ref.group)) + "|" +
            std::to_string(e.ref.offset) + "|" + std::to_string(e.ref.count) + "|" +
            std::to_string(static_cast<int>(e.init)) + "|" + std::to_string(e.fan) + "|";
    for (const std::int64_t d : e.shape) text += std::to_string(d) + ",";
    text += e.krsc ? "|k\n" : "|\n";
  }
  return fnv1a(text.data(), text.size());
}

std::uint64_t weights_hash(const ParameterLayout& layout, std::uint64_t seed) {
  ParameterStore params(layout, seed);
  std::uint64_t hash = 1469598103934665603ull;
  for (int g = 0; g < 3; ++g) {
    const std::vector<float>& values = params.host(static_cast<ParamGroup>(g));
    hash = fnv1a(values.data(), values.size() * sizeof(float), hash);
  }
  return hash;
}

struct Golden {
  const char* what;
  NetworkDescription network;
  NetworkShape shape;
  std::size_t entries, weights, vectors, statistics;
  std::uint64_t layout, seed0, seed7;
};

NetworkShape shape_of(int batch, ImageShape input, int classes) {
  NetworkShape s;
  s.batch = batch;
  s.input = input;
  s.classes = classes;
  return s;
}

class BuiltInNetworks : public ::testing::TestWithParam<int> {
 protected:
  static Golden golden(int i) {
    switch (i) {
      case 0:
        return {"resnet18",
                resnet18(1000),
                shape_of(2, {224, 224, 3}, 1000),
                102,
                11678912,
                10624,
                9600,
                0x272047259c80a779ull,
                0x0a449279ae93e239ull,
                0x3baafe1135877e58ull};
      case 1:
        return {"small_resnet",
                small_resnet(32, 2, 10),
                shape_of(256, {28, 28, 1}, 10),
                77,
                693824,
                2624,
                2560,
                0xafcf96ddb8002a02ull,
                0x821047369d59f4b3ull,
                0x4d62171a36923cc7ull};
      default:
        return {"small_resnet width 4, 1 block",
                small_resnet(4, 1, 4),
                shape_of(16, {8, 8, 1}, 4),
                47,
                5056,
                1216,
                1152,
                0x3c44dc9c3e8d38b6ull,
                0x243a0c0b11cdf762ull,
                0x6965ea2ca96cdc3cull};
    }
  }
};

TEST_P(BuiltInNetworks, DeclareTheHandWrittenNetworksParametersInTheirOrder) {
  const Golden g = golden(GetParam());
  ParameterLayout layout;
  const Network net(g.network, g.shape, layout);
  EXPECT_EQ(layout.entries().size(), g.entries) << g.what;
  EXPECT_EQ(layout.size(ParamGroup::weights), g.weights) << g.what;
  EXPECT_EQ(layout.size(ParamGroup::vectors), g.vectors) << g.what;
  EXPECT_EQ(layout.size(ParamGroup::statistics), g.statistics) << g.what;
  EXPECT_EQ(layout_hash(layout), g.layout)
      << g.what << ": names, order, offsets, shapes or initialisers differ";
}

TEST_P(BuiltInNetworks, GiveTheHandWrittenNetworksWeightsForTheSameSeed) {
  const Golden g = golden(GetParam());
  ParameterLayout layout;
  const Network net(g.network, g.shape, layout);
  EXPECT_EQ(weights_hash(layout, 0), g.seed0) << g.what;
  // ResNet-18 draws 11.7 M weights a seed: one seed is enough for it (the tests run under sanitizers too).
  if (GetParam() != 0) {
    EXPECT_EQ(weights_hash(layout, 7), g.seed7) << g.what;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, BuiltInNetworks, ::testing::Values(0, 1, 2));

TEST(BuiltInNetworks, ResNet18sParametersAreTorchvisionsNamesAndShapes) {
  ParameterLayout layout;
  const Network net(resnet18(1000), shape_of(2, {224, 224, 3}, 1000), layout);
  ASSERT_EQ(layout.entries().size(), 102u);
  auto find = [&](const std::string& name) -> const ParamEntry* {
    for (const ParamEntry& e : layout.entries())
      if (e.name == name) return &e;
    return nullptr;
  };
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected = {
      {"conv1.weight", {64, 3, 7, 7}},
      {"bn1.running_var", {64}},
      {"layer1.0.conv1.weight", {64, 64, 3, 3}},
      {"layer2.0.downsample.0.weight", {128, 64, 1, 1}},
      {"layer2.0.downsample.1.bias", {128}},
      {"layer4.1.bn2.weight", {512}},
      {"fc.weight", {1000, 512}},
      {"fc.bias", {1000}}};
  for (const auto& [name, shape] : expected) {
    const ParamEntry* e = find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->shape, shape) << name;
  }
  EXPECT_EQ(find("layer1.0.downsample.0.weight"), nullptr) << "the first stage keeps its shape: no shortcut";
}

TEST(BuiltInNetworks, TheModelShorthandAndTheBuilderAreOneNetwork) {
  TrainerOptions shorthand;
  shorthand.width = 8;
  shorthand.blocks_per_stage = 1;
  TrainerOptions described = shorthand;
  described.network = small_resnet(8, 1, 10);
  EXPECT_EQ(Trainer(shorthand).network().describe(), Trainer(described).network().describe());
  EXPECT_EQ(Trainer(shorthand).describe_layers(), Trainer(described).describe_layers());
}

// The CPU reference's losses of the hand-written networks, bit for bit: the same layers in the same order.
TEST(BuiltInNetworks, TrainLikeTheHandWrittenNetworksOnTheCpu) {
  TrainerOptions o;
  o.num_classes = 4;
  o.input = {8, 8, 1};
  o.batch = 16;
  o.width = 4;
  o.blocks_per_stage = 1;
  o.learning_rate = 0.05;
  o.weight_decay = 1e-4;
  o.seed = 7;
  Trainer small(o);
  const double small_losses[] = {1.448630228638649, 1.2219493612647057, 1.4158589877188206};
  for (int step = 0; step < 3; ++step) {
    small.step(testing::quadrant_batch(16, {8, 8, 1}, static_cast<std::uint64_t>(step)).staged());
    EXPECT_EQ(small.last_step().loss, small_losses[step]) << "step " << step;
  }
  const EvalResult e = small.evaluate(testing::quadrant_batch(16, {8, 8, 1}, 50).staged());
  EXPECT_EQ(e.loss_sum, 22.52210545539856);
  EXPECT_EQ(e.correct, 2u);

  TrainerOptions b;
  b.model = ModelKind::resnet18;
  b.num_classes = 5;
  b.input = {32, 32, 3};
  b.batch = 2;
  b.seed = 3;
  Trainer big(b);
  const double big_losses[] = {1.5455146431922913, 13.467894703149796};
  for (int step = 0; step < 2; ++step) {
    big.step(testing::quadrant_batch(2, {32, 32, 3}, static_cast<std::uint64_t>(step)).staged());
    EXPECT_EQ(big.last_step().loss, big_losses[step]) << "ResNet-18 step " << step;
  }
}

}  // namespace
}  // namespace conveyor::train
