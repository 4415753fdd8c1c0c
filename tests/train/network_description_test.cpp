// Networks a user describes (conveyor/train/network.h): the Trainer trains them on the CPU reference,
// checkpoints them under names built from the description (nn.Sequential's indices, or the names given),
// and refuses a description that breaks a rule with InvalidArgument naming the layer and the rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/train/network.h"
#include "conveyor/train/trainer.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"
#include "tests/train/synthetic_batches.h"

namespace conveyor::train {
namespace {

using namespace std::chrono_literals;
using namespace layers;

constexpr ImageShape kShape{8, 8, 1};

// Every kind of layer: a ReLU and pools of their own, an identity block, a block with a shortcut.
NetworkDescription user_network() {
  return {conv(8, 3).named("stem"),
          batch_norm(),
          relu(),
          max_pool(2, 2),
          conv(8, 3),
          relu(),
          residual({conv(8, 3), batch_norm(), relu(), conv(8, 3), batch_norm()}),
          residual({conv(16, 3, 2), batch_norm()}, {avg_pool(2, 2), conv(16, 1, 1, 0), batch_norm()})
              .named("down"),
          global_avg_pool(),
          dense(4).named("classifier")};
}

TrainerOptions options_for(NetworkDescription network, std::uint64_t seed = 1) {
  TrainerOptions o;
  o.network = std::move(network);
  o.num_classes = 4;
  o.input = kShape;
  o.batch = 16;
  o.learning_rate = 0.05;
  o.weight_decay = 1e-4;
  o.seed = seed;
  return o;
}

std::vector<std::string> names_of(const Trainer& trainer) {
  std::vector<std::string> names;
  for (const ParameterInfo& p : trainer.parameters()) names.push_back(p.name);
  return names;
}

// The InvalidArgument Trainer's constructor throws for `network`, or "" when it throws none.
std::string refusal(NetworkDescription network, int classes = 4) {
  TrainerOptions o = options_for(std::move(network));
  o.num_classes = classes;
  try {
    Trainer trainer(o);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

bool says(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

TEST(UserNetwork, TrainsOnTheCpuWellBelowChanceLoss) {
  testing::Watchdog watchdog(60s, "UserNetwork.Trains");
  Trainer trainer(options_for(user_network()));
  for (int step = 0; step < 60; ++step)
    trainer.step(testing::quadrant_batch(16, kShape, 100 + static_cast<std::uint64_t>(step)).staged());
  EXPECT_LT(trainer.last_step().loss, 0.25 * std::log(4.0));
  EXPECT_GE(trainer.evaluate(testing::quadrant_batch(16, kShape, 999).staged()).accuracy(), 0.9);
  EXPECT_NE(trainer.describe_layers().find("stem 3x3/1 1->8 on 8x8"), std::string::npos)
      << trainer.describe_layers();
}

TEST(UserNetwork, ParametersAreNamedAsPyTorchNamesTheEquivalentModule) {
  const Trainer trainer(options_for(user_network()));
  const std::vector<std::string> expected = {
      "stem.weight",  // named
      "1.weight",
      "1.bias",
      "1.running_mean",
      "1.running_var",  // nn.Sequential's index
      "4.weight",
      "6.0.weight",
      "6.1.weight",
      "6.1.bias",
      "6.1.running_mean",
      "6.1.running_var",  // a block's main branch
      "6.3.weight",
      "6.4.weight",
      "6.4.bias",
      "6.4.running_mean",
      "6.4.running_var",
      "down.0.weight",
      "down.1.weight",
      "down.1.bias",
      "down.1.running_mean",
      "down.1.running_var",
      "down.shortcut.1.weight",  // the shortcut's layers, under "shortcut"
      "down.shortcut.2.weight",
      "down.shortcut.2.bias",
      "down.shortcut.2.running_mean",
      "down.shortcut.2.running_var",
      "classifier.weight",
      "classifier.bias"};
  EXPECT_EQ(names_of(trainer), expected);
  const std::vector<ParameterInfo> list = trainer.parameters();
  EXPECT_EQ(list.front().shape, (std::vector<std::int64_t>{8, 1, 3, 3}));  // PyTorch's (out, in, k, k)
  EXPECT_EQ(list.back().shape, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(list[list.size() - 2].shape, (std::vector<std::int64_t>{4, 16}));
  EXPECT_TRUE(list[1].learnable) << list[1].name;
  EXPECT_FALSE(list[3].learnable) << list[3].name << " is a running statistic";
}

TEST(UserNetwork, AShortcutCanBeRenamed) {
  const Trainer trainer(options_for(
      {conv(4, 3),
       residual({conv(8, 3, 2), batch_norm()}, {conv(8, 1, 2, 0)}).named("block").shortcut_named("proj"),
       global_avg_pool(), dense(4)}));
  const std::vector<std::string> names = names_of(trainer);
  EXPECT_NE(std::find(names.begin(), names.end(), "block.proj.0.weight"), names.end());
}

TEST(UserNetwork, CheckpointRoundTripRestoresTheSameModel) {
  testing::TempDir dir;
  const auto path = dir.path() / "user.json";
  Trainer a(options_for(user_network(), 1));
  for (int step = 0; step < 3; ++step)
    a.step(testing::quadrant_batch(16, kShape, static_cast<std::uint64_t>(step)).staged());
  a.save_checkpoint(path, {.steps = 3});

  Trainer b(options_for(user_network(), 2));  // other initial weights
  EXPECT_EQ(b.load_checkpoint(path).steps, 3u);
  const auto probe = testing::quadrant_batch(16, kShape, 50);
  const EvalResult ea = a.evaluate(probe.staged()), eb = b.evaluate(probe.staged());
  EXPECT_EQ(ea.correct, eb.correct);
  EXPECT_DOUBLE_EQ(ea.loss_sum, eb.loss_sum);
  a.step(probe.staged());
  b.step(probe.staged());
  EXPECT_DOUBLE_EQ(a.last_step().loss, b.last_step().loss) << "the momentum came back too";
}

TEST(UserNetwork, ACheckpointOfAnotherNetworkIsRefused) {
  testing::TempDir dir;
  const auto path = dir.path() / "user.json";
  Trainer(options_for(user_network())).save_checkpoint(path);
  NetworkDescription wider = user_network();
  wider.layers[0] = conv(12, 3).named("stem");
  Trainer other(options_for(wider));
  try {
    other.load_checkpoint(path);
    FAIL() << "loaded a checkpoint of another network";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(says(e.what(), "another model")) << e.what();
  }
}

TEST(UserNetwork, TheBuiltInNetworksAreDescriptionsToo) {
  // A description made by a builder trains like any other.
  TrainerOptions o = options_for(small_resnet(4, 1, 4));
  Trainer trainer(o);
  trainer.step(testing::quadrant_batch(16, kShape, 1).staged());
  EXPECT_TRUE(std::isfinite(trainer.last_step().loss));
  EXPECT_NE(trainer.network().describe().find("residual (layer3.0)"), std::string::npos)
      << trainer.network().describe();
}

// ---- descriptions that break a rule --------------------------------------------------------------

TEST(InvalidNetwork, AnEmptyDescriptionFallsBackToTheModelShorthandButNoLayersIsRefused) {
  EXPECT_EQ(refusal({}), "");  // empty: TrainerOptions::model
  EXPECT_TRUE(says(refusal({conv(4, 3)}), "the last layer must be a dense layer")) << refusal({conv(4, 3)});
}

TEST(InvalidNetwork, TheDenseLayerMustGiveTheClassesAndComeLast) {
  const std::string wrong_outputs = refusal({global_avg_pool(), dense(7).named("head")});
  EXPECT_TRUE(says(wrong_outputs, "dense 'head'") && says(wrong_outputs, "gives 7 outputs") &&
              says(wrong_outputs, "4 classes"))
      << wrong_outputs;
  const std::string not_last = refusal({global_avg_pool(), dense(4), relu()});
  EXPECT_TRUE(says(not_last, "must be the network's last layer")) << not_last;
}

TEST(InvalidNetwork, TheDenseLayerTakesOneFeatureVectorPerImage) {
  const std::string message = refusal({conv(4, 3), dense(4)});
  EXPECT_TRUE(says(message, "its input is 8x8x4") && says(message, "global_avg_pool")) << message;
}

TEST(InvalidNetwork, AConvolutionThatMakesNoOutputIsNamed) {
  const std::string message = refusal({conv(4, 3), conv(4, 3, 1, 0), conv(4, 3, 1, 0), conv(4, 3, 1, 0),
                                       conv(4, 3, 1, 0).named("too_far"), global_avg_pool(), dense(4)});
  EXPECT_TRUE(says(message, "conv 'too_far'") && says(message, "makes no output from 2x2")) << message;
}

TEST(InvalidNetwork, APoolingWindowWithPaddingAsLargeAsItselfIsRefused) {
  const std::string message = refusal({conv(4, 3), max_pool(2, 2, 2), global_avg_pool(), dense(4)});
  EXPECT_TRUE(says(message, "max_pool '1'") && says(message, "padding must be smaller than the window"))
      << message;
}

TEST(InvalidNetwork, AResidualMainBranchStartsWithAConvolutionAndEndsWithBatchNorm) {
  const std::string start =
      refusal({conv(4, 3), residual({batch_norm(), conv(4, 3), batch_norm()}), global_avg_pool(), dense(4)});
  EXPECT_TRUE(says(start, "residual '1'") && says(start, "must start with a conv")) << start;
  const std::string end =
      refusal({conv(4, 3), residual({conv(4, 3), batch_norm(), relu()}), global_avg_pool(), dense(4)});
  EXPECT_TRUE(says(end, "must end with a batch_norm") && says(end, "ends with relu")) << end;
}

TEST(InvalidNetwork, AnIdentityShortcutMustKeepTheShape) {
  const std::string message =
      refusal({conv(4, 3), residual({conv(8, 3, 2), batch_norm()}), global_avg_pool(), dense(4)});
  EXPECT_TRUE(says(message, "main branch gives 4x4x8") && says(message, "(the identity) gives 8x8x4"))
      << message;
}

TEST(InvalidNetwork, ResidualBlocksDoNotNest) {
  const std::string message =
      refusal({conv(4, 3), residual({conv(4, 3), residual({conv(4, 3), batch_norm()}), batch_norm()}),
               global_avg_pool(), dense(4)});
  EXPECT_TRUE(says(message, "residual blocks do not nest")) << message;
}

TEST(InvalidNetwork, TwoLayersWithOneNameAreRefused) {
  const std::string message =
      refusal({conv(4, 3).named("a"), batch_norm().named("a"), global_avg_pool(), dense(4)});
  EXPECT_TRUE(says(message, "two layers are named 'a'")) << message;
}

TEST(InvalidNetwork, ANameMustBeAStateDictKey) {
  EXPECT_THROW(conv(4, 3).named("has space"), InvalidArgument);
  EXPECT_THROW(conv(4, 3).named(""), InvalidArgument);
  EXPECT_THROW(conv(4, 3).named("trailing."), InvalidArgument);
  EXPECT_NO_THROW(conv(4, 3).named("layer1.0.conv1"));
  EXPECT_THROW(conv(4, 3).shortcut_named("proj"), InvalidArgument) << "only a residual block has a shortcut";
}

}  // namespace
}  // namespace conveyor::train
