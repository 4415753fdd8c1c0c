// A network the user describes, on a GPU: the backend factory makes the cuDNN context, and the Trainer
// runs the description as it runs the built-in ResNets: the same numbers as the CPU reference in fp32
// (every kind of layer: a ReLU and pools of their own, identity and projection blocks), learning in bf16
// with the step replayed as a CUDA graph, the timed convolution algorithms cached on disk, and checkpoints
// that cross backends. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "conveyor/train/network.h"
#include "conveyor/train/trainer.h"
#include "src/train/backend.h"
#include "support/temp_dir.h"
#include "tests/train/gpu_test_support.h"
#include "tests/train/synthetic_batches.h"

namespace conveyor::train {
namespace {

using namespace layers;

constexpr ImageShape kShape{16, 16, 1};

NetworkDescription user_network() {
  return {conv(8, 3),
          batch_norm(),
          relu(),
          max_pool(2, 2),
          conv(8, 3),
          relu(),
          residual({conv(8, 3), batch_norm(), relu(), conv(8, 3), batch_norm()}),
          residual({conv(16, 3, 2), batch_norm()}, {avg_pool(2, 2), conv(16, 1, 1, 0), batch_norm()}),
          global_avg_pool(),
          dense(4)};
}

TrainerOptions options(int device, Precision precision = Precision::fp32) {
  TrainerOptions o;
  o.network = user_network();
  o.num_classes = 4;
  o.input = kShape;
  o.batch = 32;
  o.learning_rate = 0.05;
  o.precision = precision;
  o.device = device;
  o.seed = 3;
  return o;
}

std::vector<double> losses(Trainer& trainer, int steps) {
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) {
    trainer.step(testing::quadrant_batch(32, kShape, 300 + static_cast<std::uint64_t>(s)).staged());
    out.push_back(trainer.last_step().loss);
  }
  return out;
}

TEST(BackendFactory, MakesTheCudnnBackendForAGpu) {
  CONVEYOR_REQUIRE_GPU();
  const Backend backend = make_backend({.device = 0, .dtype = nn::DType::bf16});
  nn::Context& ctx = *backend.context;
  EXPECT_EQ(ctx.device(), 0);
  EXPECT_EQ(ctx.dtype(), nn::DType::bf16);
  EXPECT_NE(ctx.describe().find("cuDNN on GPU 0"), std::string::npos) << ctx.describe();
  EXPECT_TRUE(ctx.has_first_call_costs());
  EXPECT_TRUE(backend.steps->records_graphs());
  EXPECT_NO_THROW(testing::cuda_of(ctx)) << "the GPU backend's context is the CUDA one";
  // Its convolution chooses an algorithm (timed, on these buffers) and says which.
  const nn::ConvGeometry g{{4, 8, 8, 8}, 8, 3, 1, 1};
  const nn::Buffer x = ctx.allocate(g.input.count() * 2, "x"), w = ctx.allocate(g.weight_count() * 2, "w"),
                   y = ctx.allocate(g.output().count() * 2, "y"),
                   dx = ctx.allocate(g.input.count() * 2, "dx"),
                   dw = ctx.allocate(g.weight_count() * 2, "dw");
  EXPECT_FALSE(ctx.chooses_without_timing(g, true));
  const auto conv_layer = ctx.make_conv2d("conv", g, true);
  conv_layer->prepare(x.tensor(g.input, nn::DType::bf16), w.data(), y.tensor(g.output(), nn::DType::bf16),
                      dx.tensor(g.input, nn::DType::bf16), dw.data());
  EXPECT_NE(conv_layer->describe().find("fwd algo"), std::string::npos) << conv_layer->describe();
  EXPECT_TRUE(ctx.chooses_without_timing(g, true)) << "a shape is timed once per context";
}

TEST(GpuUserNetwork, Fp32StepsComputeWhatTheCpuReferenceComputes) {
  CONVEYOR_REQUIRE_GPU();
  Trainer gpu(options(0)), cpu(options(-1));
  gpu.warmup();
  std::printf("[ placement] %s\n%s", gpu.placement().c_str(), gpu.describe_layers().c_str());
  const auto g = losses(gpu, 5), c = losses(cpu, 5);
  double worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    std::printf("[ loss     ] step %zu: GPU %.6f CPU %.6f\n", i, g[i], c[i]);
    worst = std::max(worst, std::abs(g[i] - c[i]) / std::abs(c[i]));
  }
  EXPECT_TRUE(testing::within("user network, fp32 training step, 5 steps", worst, 1e-3));
}

TEST(GpuUserNetwork, LearnsInBf16WithTheStepReplayedAsACudaGraph) {
  CONVEYOR_REQUIRE_GPU();
  Trainer trainer(options(0, Precision::bf16));
  trainer.warmup();
  std::printf("[ placement] %s\n", trainer.placement().c_str());
  EXPECT_TRUE(trainer.warmup_report().graph) << trainer.warmup_report().graph_fallback;
  const auto l = losses(trainer, 60);
  EXPECT_LT(l.back(), 0.25 * std::log(4.0));
  EXPECT_GE(trainer.evaluate(testing::quadrant_batch(32, kShape, 999).staged()).accuracy(), 0.9);
}

TEST(GpuUserNetwork, ASecondTrainerReusesTheCachedAlgorithms) {
  CONVEYOR_REQUIRE_GPU();
  testing::TempDir dir;
  TrainerOptions o = options(0, Precision::bf16);
  o.algorithm_cache_dir = dir.path();
  Trainer first(o);
  first.warmup();
  const auto& a = first.warmup_report().algorithm_cache;
  EXPECT_GT(a.searched, 0u);
  Trainer second(o);
  second.warmup();
  const auto& b = second.warmup_report().algorithm_cache;
  EXPECT_EQ(b.reused, a.searched);
  EXPECT_EQ(b.searched, 0u);
}

TEST(GpuUserNetwork, ACheckpointSavedOnTheGpuLoadsOnTheCpu) {
  CONVEYOR_REQUIRE_GPU();
  testing::TempDir dir;
  const auto path = dir.path() / "user.json";
  Trainer gpu(options(0));
  losses(gpu, 3);
  gpu.save_checkpoint(path, {.steps = 3});
  Trainer cpu(options(-1));
  EXPECT_EQ(cpu.load_checkpoint(path).steps, 3u);
  const auto probe = testing::quadrant_batch(32, kShape, 77);
  const EvalResult eg = gpu.evaluate(probe.staged()), ec = cpu.evaluate(probe.staged());
  EXPECT_TRUE(testing::within("user network evaluated on the GPU and, from its checkpoint, on the CPU",
                              std::abs(eg.loss_sum - ec.loss_sum) / ec.loss_sum, 1e-3));
}

}  // namespace
}  // namespace conveyor::train
