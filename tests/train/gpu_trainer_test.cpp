// The whole training step on a GPU: it computes what the CPU reference computes (fp32), learns in bf16
// and fp16, the unfused batch norm and the CUDA graph give the same training, batches on the device are
// waited for and released through their events, checkpoints cross backends, and a memory limit gives a
// DeviceMemoryError naming the buffer. Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/train/trainer.h"
#include "support/temp_dir.h"
#include "tests/train/gpu_test_support.h"
#include "tests/train/synthetic_batches.h"

namespace conveyor::train {
namespace {

constexpr ImageShape kShape{16, 16, 1};

TrainerOptions small(int device, Precision precision = Precision::fp32) {
  TrainerOptions o;
  o.model = ModelKind::small_resnet;
  o.num_classes = 4;
  o.input = kShape;
  o.batch = 32;
  o.width = 8;
  o.blocks_per_stage = 1;
  o.learning_rate = 0.05;
  o.precision = precision;
  o.device = device;
  o.seed = 3;
  return o;
}

std::vector<double> losses(Trainer& trainer, int steps, ImageShape shape = kShape, std::size_t batch = 32) {
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) {
    trainer.step(testing::quadrant_batch(batch, shape, 200 + s).staged());
    out.push_back(trainer.last_step().loss);
  }
  return out;
}

double worst_relative(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  return worst;
}

TEST(GpuTrainer, Fp32StepsComputeWhatTheCpuReferenceComputes) {
  CONVEYOR_REQUIRE_GPU();
  Trainer gpu(small(0)), cpu(small(-1));
  gpu.warmup();
  std::printf("[ placement] %s\n%s", gpu.placement().c_str(), gpu.describe_layers().c_str());
  const auto g = losses(gpu, 5), c = losses(cpu, 5);
  for (std::size_t i = 0; i < g.size(); ++i)
    std::printf("[ loss     ] step %zu: GPU %.6f CPU %.6f\n", i, g[i], c[i]);
  EXPECT_TRUE(testing::within("fp32 training step, first loss", std::abs(g[0] - c[0]) / c[0], 1e-4));
  EXPECT_TRUE(testing::within("fp32 training step, 5 steps", worst_relative(g, c), 1e-3));
  const auto probe = testing::quadrant_batch(32, kShape, 77);
  const EvalResult eg = gpu.evaluate(probe.staged()), ec = cpu.evaluate(probe.staged());
  EXPECT_TRUE(
      testing::within("fp32 evaluation loss", std::abs(eg.loss_sum - ec.loss_sum) / ec.loss_sum, 1e-3));
}

TEST(GpuTrainer, ResNet18Fp32StepMatchesTheCpuReference) {
  CONVEYOR_REQUIRE_GPU();
  TrainerOptions o = small(0);
  o.model = ModelKind::resnet18;
  o.input = {32, 32, 3};
  o.batch = 4;
  o.num_classes = 10;
  Trainer gpu(o);
  o.device = -1;
  Trainer cpu(o);
  const auto g = losses(gpu, 2, o.input, 4), c = losses(cpu, 2, o.input, 4);
  EXPECT_TRUE(testing::within("ResNet-18 fp32 training step (2 steps)", worst_relative(g, c), 1e-3));
}

class GpuTrainerLearns : public ::testing::TestWithParam<std::tuple<Precision, bool>> {};

TEST_P(GpuTrainerLearns, LossFallsWellBelowChance) {
  CONVEYOR_REQUIRE_GPU();
  TrainerOptions o = small(0, std::get<0>(GetParam()));
  o.fused_batch_norm = std::get<1>(GetParam());
  Trainer trainer(o);
  trainer.warmup();
  std::printf("[ placement] %s\n", trainer.placement().c_str());
  const auto l = losses(trainer, 60);
  EXPECT_LT(l.back(), 0.25 * std::log(4.0));
  EXPECT_GE(trainer.evaluate(testing::quadrant_batch(32, kShape, 999).staged()).accuracy(), 0.9);
}

INSTANTIATE_TEST_SUITE_P(Precisions, GpuTrainerLearns,
                         ::testing::Combine(::testing::Values(Precision::fp32, Precision::bf16,
                                                              Precision::fp16),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_fused" : "_unfused");
                         });

TEST(GpuTrainer, UnfusedBatchNormTrainsLikeTheFusedOne) {
  CONVEYOR_REQUIRE_GPU();
  TrainerOptions o = small(0);
  Trainer fused(o);
  o.fused_batch_norm = false;
  Trainer unfused(o);
  EXPECT_TRUE(testing::within("fp32 fused vs unfused batch norm, 5 steps",
                              worst_relative(losses(unfused, 5), losses(fused, 5)), 1e-3));
}

TEST(GpuTrainer, DeterministicAlgorithmsGiveTheSameLossesEveryRun) {
  CONVEYOR_REQUIRE_GPU();
  TrainerOptions o = small(0);
  o.deterministic = true;
  Trainer first(o), second(o);
  const auto a = losses(first, 8), b = losses(second, 8);
  EXPECT_EQ(a, b) << "two trainers with the same options and batches";
  EXPECT_EQ(first.describe_layers(), second.describe_layers());
  EXPECT_NE(first.describe_layers().find("heuristic, deterministic"), std::string::npos)
      << first.describe_layers();
}

std::string joined(const std::vector<double>& values) {
  std::string text;
  for (const double v : values) text += (text.empty() ? "" : " ") + std::to_string(v);
  return text;
}

TEST(GpuTrainer, CudaGraphReplayGivesTheLossesOfEagerStepsAndFollowsTheLearningRate) {
  CONVEYOR_REQUIRE_GPU();
  for (const Precision p : {Precision::fp32, Precision::bf16}) {
    SCOPED_TRACE(to_string(p));
    TrainerOptions o = small(0, p);
    // The same algorithms in both (a timed search can choose differently in each trainer), so that the
    // same kernels run in the same order: replaying them must give the same numbers, bit for bit.
    o.deterministic = true;
    o.label_smoothing = 0.1;
    o.evaluate_flipped = true;
    o.cuda_graph = false;
    Trainer eager(o);
    o.cuda_graph = true;
    Trainer graph(o), constant(o);
    graph.warmup();
    eager.warmup();
    ASSERT_TRUE(graph.warmup_report().graph) << graph.warmup_report().graph_fallback;
    EXPECT_NE(graph.placement().find("CUDA graphs"), std::string::npos) << graph.placement();
    EXPECT_FALSE(eager.warmup_report().graph);
    EXPECT_EQ(eager.warmup_report().graph_fallback, "");
    std::vector<double> e, g, c;
    for (int s = 0; s < 8; ++s) {
      // A schedule that changes the rate every step (and stops it once): the replayed SGD must read it.
      const double rate = s == 5 ? 0.0 : 0.05 * (1 + std::cos(s * 0.4));
      eager.set_learning_rate(rate);
      graph.set_learning_rate(rate);
      const auto batch = testing::quadrant_batch(32, kShape, 200 + s);
      eager.step(batch.staged());
      graph.step(batch.staged());
      constant.step(batch.staged());
      e.push_back(eager.last_step().loss);
      g.push_back(graph.last_step().loss);
      c.push_back(constant.last_step().loss);
    }
    EXPECT_EQ(g, e) << "graph: " << joined(g) << "\neager: " << joined(e) << "\nlayers:\n"
                    << graph.describe_layers();
    EXPECT_NE(c, e) << "the schedule made no difference: the test could not see an ignored learning rate";
    // Evaluation: a full batch replays the evaluation graph, a short one runs eagerly in both.
    for (const std::size_t n : {std::size_t{32}, std::size_t{7}}) {
      const auto probe = testing::quadrant_batch(n, kShape, 5);
      const EvalResult ge = graph.evaluate(probe.staged()), ee = eager.evaluate(probe.staged());
      EXPECT_EQ(ge.loss_sum, ee.loss_sum) << n << " images";
      EXPECT_EQ(ge.correct, ee.correct) << n << " images";
      EXPECT_EQ(ge.count, n);
    }
  }
}

TEST(GpuTrainer, WithCudaGraphsOffTheTrainerSaysItRunsEagerly) {
  CONVEYOR_REQUIRE_GPU();
  TrainerOptions o = small(0);
  o.cuda_graph = false;
  Trainer trainer(o);
  trainer.warmup();
  EXPECT_FALSE(trainer.warmup_report().graph);
  EXPECT_NE(trainer.placement().find("CUDA graphs off"), std::string::npos) << trainer.placement();
  const auto l = losses(trainer, 3);
  EXPECT_TRUE(std::isfinite(l.back()));
}

TEST(GpuTrainer, EvaluationSumsStayOnTheDeviceUntilTaken) {
  CONVEYOR_REQUIRE_GPU();
  Trainer trainer(small(0));
  losses(trainer, 3);
  const auto a = testing::quadrant_batch(32, kShape, 31), b = testing::quadrant_batch(9, kShape, 32);
  const EvalResult ra = trainer.evaluate(a.staged()), rb = trainer.evaluate(b.staged());
  trainer.add_to_evaluation(a.staged());
  trainer.add_to_evaluation(b.staged());
  const EvalResult all = trainer.take_evaluation();
  EXPECT_EQ(all.count, 41u);
  EXPECT_EQ(all.correct, ra.correct + rb.correct);
  EXPECT_NEAR(all.loss_sum, ra.loss_sum + rb.loss_sum, 1e-9 * all.loss_sum);
  EXPECT_EQ(trainer.take_evaluation().count, 0u);
  auto bad = testing::quadrant_batch(32, kShape, 33);
  bad.labels()[4] = 7;
  trainer.add_to_evaluation(bad.staged());
  EXPECT_THROW(trainer.take_evaluation(), InvalidArgument);
}

TEST(GpuTrainer, TrainsOnADeviceBatchAsOnTheSameBatchInHostMemory) {
  CONVEYOR_REQUIRE_GPU();
  Trainer trainer(small(0));
  trainer.warmup();
  const auto host = testing::quadrant_batch(32, kShape, 9);
  {
    DeviceBatch on_gpu = host.on_gpu(0);
    trainer.step(on_gpu);
  }  // released right after the step was enqueued: the trainer's stream read it first
  const StepStats on_device = trainer.last_step();
  Trainer twin(small(0));
  twin.step(host.staged());  // the same batch from host memory
  EXPECT_DOUBLE_EQ(on_device.loss, twin.last_step().loss);
}

TEST(GpuTrainer, CheckpointsMoveBetweenGpuAndCpu) {
  CONVEYOR_REQUIRE_GPU();
  testing::TempDir dir;
  Trainer gpu(small(0));
  losses(gpu, 3);
  gpu.save_checkpoint(dir.path() / "gpu.json");
  TrainerOptions o = small(-1);
  o.seed = 99;
  Trainer cpu(o);
  cpu.load_checkpoint(dir.path() / "gpu.json");
  const auto probe = testing::quadrant_batch(32, kShape, 6);
  const double g = gpu.evaluate(probe.staged()).loss_sum, c = cpu.evaluate(probe.staged()).loss_sum;
  EXPECT_TRUE(testing::within("checkpoint GPU -> CPU, evaluation loss", std::abs(g - c) / c, 1e-3));
}

TEST(GpuTrainer, ADeterministicRunResumedFromACheckpointTakesTheSameSteps) {
  CONVEYOR_REQUIRE_GPU();
  testing::TempDir dir;
  TrainerOptions o = small(0, Precision::bf16);
  o.deterministic = true;
  // Steps 0..5 in one go, and 0..2 then 3..5 in a new trainer restored from a checkpoint.
  auto step_losses = [](Trainer& t, int from, int to) {
    std::vector<double> out;
    for (int s = from; s < to; ++s) {
      t.step(testing::quadrant_batch(32, kShape, 200 + static_cast<std::uint64_t>(s)).staged());
      out.push_back(t.last_step().loss);
    }
    return out;
  };
  Trainer whole(o);
  const std::vector<double> expected = step_losses(whole, 0, 6);
  whole.save_checkpoint(dir.path() / "whole.json", {.steps = 6});
  std::vector<double> got;
  {
    Trainer first(o);
    got = step_losses(first, 0, 3);
    first.save_checkpoint(dir.path() / "half.json", {.steps = 3});
  }
  Trainer second(o);
  EXPECT_EQ(second.load_checkpoint(dir.path() / "half.json").steps, 3u);
  const std::vector<double> rest = step_losses(second, 3, 6);
  got.insert(got.end(), rest.begin(), rest.end());
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "step " << i;
  second.save_checkpoint(dir.path() / "resumed.json", {.steps = 6});
  auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  ASSERT_TRUE(std::filesystem::exists(dir.path() / "whole.step-000000000006.safetensors"));
  ASSERT_TRUE(std::filesystem::exists(dir.path() / "resumed.step-000000000006.safetensors"));
  EXPECT_TRUE(bytes(dir.path() / "whole.step-000000000006.safetensors") ==
              bytes(dir.path() / "resumed.step-000000000006.safetensors"))
      << "the weights after 6 steps differ between the uninterrupted and the resumed run";
}

TEST(GpuTrainer, AMemoryLimitNamesTheBufferThatDoesNotFit) {
  CONVEYOR_REQUIRE_GPU();
  TrainerOptions o = small(0, Precision::bf16);
  o.batch = 256;
  o.input = {28, 28, 1};
  o.width = 32;
  // 44 MiB: the 32 MiB cuBLAS workspace and the parameters (about 8.3 MB with their gradients and
  // momentum) fit; the first convolution's output (12.8 MB) does not.
  o.memory_limit_bytes = 44u << 20;
  Trainer trainer(o);
  try {
    trainer.warmup();
    FAIL() << "warm-up fitted in 44 MiB";
  } catch (const DeviceMemoryError& e) {
    std::printf("[ message  ] %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("conv1 output"), std::string::npos) << e.what();
    EXPECT_GT(e.requested(), e.available());
  }
}

}  // namespace
}  // namespace conveyor::train
