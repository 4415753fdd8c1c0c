// The one choice of backend (src/train/backend.h): device -1 makes the CPU reference, whose layers are the
// reference loops; a GPU that is not there (or a build without CUDA) is refused naming the device. The GPU
// half is in gpu_trainer_test.cpp (BackendFactory.*), which runs where there is a GPU.
#include "src/train/backend.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conveyor/cuda/device.h"
#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"

namespace conveyor::train {
namespace {

TEST(BackendFactory, DeviceMinusOneIsTheCpuReferenceInFloat32) {
  const Backend backend = make_backend({.device = -1, .dtype = nn::DType::bf16});
  ASSERT_TRUE(backend.context && backend.steps);
  EXPECT_EQ(backend.context->device(), -1);
  EXPECT_EQ(backend.context->dtype(), nn::DType::f32)
      << "the CPU reference computes in fp32 whatever was asked";
  EXPECT_NE(backend.context->describe().find("CPU reference"), std::string::npos);
  EXPECT_FALSE(backend.context->has_first_call_costs());
  EXPECT_FALSE(backend.steps->records_graphs());
  EXPECT_EQ(backend.context->algorithm_cache(), nullptr);
}

TEST(BackendFactory, TheCpuContextsLayersAreTheReferenceLoops) {
  const Backend backend = make_backend({.device = -1});
  nn::Context& ctx = *backend.context;
  const nn::ConvGeometry g{{2, 5, 5, 3}, 4, 3, 1, 1};
  std::vector<float> x(g.input.count()), w(g.weight_count()), y(g.output().count()), expected(y.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.f;
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) * 0.1f;
  EXPECT_TRUE(ctx.chooses_without_timing(g, true));
  const auto conv = ctx.make_conv2d("conv", g, true);
  conv->prepare({x.data(), g.input}, w.data(), {y.data(), g.output()}, {}, nullptr);
  conv->forward({x.data(), g.input}, w.data(), {y.data(), g.output()});
  nn::cpu::conv2d_forward(g, x.data(), w.data(), expected.data());
  EXPECT_EQ(y, expected);
  EXPECT_EQ(conv->describe(), "conv 3x3/1 3->4 on 5x5") << "the CPU chooses no algorithm";
}

TEST(BackendFactory, CpuMemoryIsZeroFilledAndCopiesInAndOut) {
  const Backend backend = make_backend({.device = -1});
  nn::Context& ctx = *backend.context;
  const nn::Buffer buffer = ctx.allocate(5 * sizeof(float), "test");
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(std::vector<float>(buffer.as<float>(), buffer.as<float>() + 5), std::vector<float>(5, 0.f));
  const std::vector<float> in = {1, 2, 3, 4, 5};
  std::vector<float> out(5);
  ctx.copy_in(buffer.data(), in.data(), in.size() * sizeof(float), "test");
  ctx.copy_out(out.data(), buffer.data(), out.size() * sizeof(float), "test");
  EXPECT_EQ(out, in);
  EXPECT_THROW(buffer.tensor({1, 1, 1, 6}, nn::DType::f32), InvalidArgument) << "6 floats do not fit 5";
}

TEST(BackendFactory, AGpuThatIsNotThereIsRefusedNamingIt) {
  if (!list_gpus().empty()) GTEST_SKIP() << "a GPU is visible: gpu_trainer_test.cpp covers the GPU backend";
  try {
    make_backend({.device = 0});
    FAIL() << "made a GPU backend without a GPU";
  } catch (const InvalidArgument& e) {
    // "none usable: ..." with CUDA built, "built without CUDA" without.
    EXPECT_NE(std::string(e.what()).find("GPU 0 requested"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace conveyor::train
