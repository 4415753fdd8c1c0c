// The classifier (cuBLAS), our CUDA kernels (ReLU, loss, SGD, mirror image, evaluation sums) and the GPU
// normalize, against the CPU reference. Tolerances as in gpu_layers_test.cpp; element-wise kernels and
// normalize must match exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "conveyor/ops/normalize.h"
#include "conveyor/train/nn/reference.h"
#include "src/device/normalize.h"
#include "src/train/layers/cpu_context.h"
#include "src/train/layers/kernels.h"
#include "tests/train/gpu_test_support.h"

namespace conveyor::nn {
namespace {

using testing::cuda_of;
using testing::download;
using testing::quantize;
using testing::random_floats;
using testing::relative_error;
using testing::upload;
using testing::within;

class GpuKernels : public testing::GpuTypedTest {
 protected:
  double tolerance() const { return type() == DType::f32 ? 1e-4 : type() == DType::bf16 ? 2e-2 : 5e-3; }
};

TEST_P(GpuKernels, LinearOnCublas) {
  const int n = 32, in = 64, out = 10;
  const DType t = type();
  const auto x = quantize(random_floats(n * in, 40), t),
             w = quantize(random_floats(out * in, 41, -0.2f, 0.2f), t);
  const auto bias = random_floats(out, 42), dy = quantize(random_floats(n * out, 43), t);
  std::vector<float> y_ref(n * out), dx_ref(n * in), dw_ref(out * in), db_ref(out);
  cpu::linear_forward(n, in, out, x.data(), w.data(), bias.data(), y_ref.data());
  cpu::linear_backward_data(n, in, out, dy.data(), w.data(), dx_ref.data());
  cpu::linear_backward_weights(n, in, out, x.data(), dy.data(), dw_ref.data(), db_ref.data());
  const Buffer X = upload(*gpu, x, t), W = upload(*gpu, w, t), B = upload(*gpu, bias, DType::f32),
               DY = upload(*gpu, dy, t);
  const Buffer Y = gpu->allocate(n * out * 4, "y"), DX = gpu->allocate(n * in * 4, "dx"),
               DW = gpu->allocate(out * in * 4, "dw"), DB = gpu->allocate(out * 4, "db");
  const std::unique_ptr<Dense> fc = gpu->make_dense("fc", n, in, out);
  const Shape4 xs{n, 1, 1, in};
  fc->forward(X.tensor(xs, t), W.data(), B.as<float>(), Y.as<float>());
  EXPECT_TRUE(within(tag("linear forward (+ bias)"),
                     relative_error(download(*gpu, Y, n * out, DType::f32), y_ref), tolerance()));
  fc->backward_data(DY.data(), W.data(), DX.tensor(xs, t));
  EXPECT_TRUE(within(tag("linear backward data"), relative_error(download(*gpu, DX, n * in, t), dx_ref),
                     tolerance()));
  fc->backward_weights(X.tensor(xs, t), DY.data(), DW.data(), DB.as<float>());
  EXPECT_TRUE(within(tag("linear backward weights"), relative_error(download(*gpu, DW, out * in, t), dw_ref),
                     tolerance()));
  EXPECT_TRUE(within(tag("linear backward bias"), relative_error(download(*gpu, DB, out, DType::f32), db_ref),
                     tolerance()));
}

TEST_P(GpuKernels, SoftmaxCrossEntropy) {
  for (const float smoothing : {0.f, 0.1f})
    for (const int classes : {10, 1000}) {
      const int n = 64, valid = 60;
      const DType t = type();
      const auto logits = random_floats(static_cast<std::size_t>(n) * classes, 44, -5.f, 5.f);
      std::vector<std::int64_t> labels(n);
      for (int i = 0; i < n; ++i) labels[i] = (i * 7) % classes;
      labels[5] = classes;  // out of range: reported, not trained on
      CpuContext cpu;
      std::vector<float> grad_ref(logits.size()), loss_ref(n);
      std::vector<int> correct_ref(n);
      cpu.make_loss("loss", n, classes)
          ->forward_backward(logits.data(), labels.data(), valid, 1.f / n, grad_ref.data(), loss_ref.data(),
                             correct_ref.data(), smoothing);
      const Buffer L = upload(*gpu, logits, DType::f32), G = gpu->allocate(logits.size() * 4, "grad"),
                   RL = gpu->allocate(n * 4, "loss"), RC = gpu->allocate(n * 4, "correct"),
                   LB = gpu->allocate(n * 8, "labels");
      ASSERT_EQ(cudaMemcpy(LB.data(), labels.data(), n * 8, cudaMemcpyHostToDevice), cudaSuccess);
      gpu->make_loss("loss", n, classes)
          ->forward_backward(L.as<float>(), LB.as<std::int64_t>(), valid, 1.f / n, G.data(), RL.as<float>(),
                             RC.as<int>(), smoothing);
      const std::string what = "softmax cross-entropy, " + std::to_string(classes) + " classes, smoothing " +
                               std::to_string(smoothing);
      EXPECT_TRUE(within(tag(what + ", gradient"),
                         relative_error(download(*gpu, G, logits.size(), t), grad_ref), tolerance()));
      auto loss_gpu = download(*gpu, RL, valid, DType::f32);
      std::vector<int> correct_gpu(n);
      ASSERT_EQ(cudaMemcpy(correct_gpu.data(), RC.data(), n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(correct_gpu[5], -1);
      EXPECT_TRUE(std::isnan(loss_gpu[5]));
      loss_gpu[5] = loss_ref[5] = 0;
      EXPECT_TRUE(within(
          tag(what + ", loss"),
          relative_error(loss_gpu, std::vector<float>(loss_ref.begin(), loss_ref.begin() + valid)), 1e-5));
      for (int i = 0; i < valid; ++i) EXPECT_EQ(correct_gpu[i], correct_ref[i]) << i;
    }
}

TEST_P(GpuKernels, MirroringImagesMatchesTheCpuReference) {
  const DType t = type();
  const Shape4 s{3, 5, 7, 3};  // odd width: the middle column stays
  const auto values = quantize(random_floats(s.count(), 61), t);
  CpuContext cpu;
  std::vector<float> expected = values;
  cpu.elementwise().mirror_width(Tensor{expected.data(), s, DType::f32});
  const Buffer X = upload(*gpu, values, t);
  gpu->elementwise().mirror_width(X.tensor(s, t));
  EXPECT_EQ(download(*gpu, X, s.count(), t), expected) << "mirror image [" << to_string(t) << "]";
  // Twice is the identity.
  gpu->elementwise().mirror_width(X.tensor(s, t));
  EXPECT_EQ(download(*gpu, X, s.count(), t), values);
}

TEST_P(GpuKernels, AveragingTwoPassesAndSummingRowsMatchTheHost) {
  const std::size_t count = 1001;
  const auto a = random_floats(count, 62), b = random_floats(count, 63);
  const Buffer A = upload(*gpu, a, DType::f32), B = upload(*gpu, b, DType::f32);
  gpu->elementwise().average_into(A.as<float>(), B.as<const float>(), count);
  const auto mean = download(*gpu, A, count, DType::f32);
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(mean[i], 0.5f * (a[i] + b[i])) << i;

  const int rows = 300;  // more rows than the summing block has threads
  std::vector<float> loss(rows);
  std::vector<int> correct(rows);
  double loss_sum = 0;
  unsigned long long right = 0;
  for (int i = 0; i < rows; ++i) {
    loss[i] = 0.01f * static_cast<float>(i % 17);
    correct[i] = i % 11 == 0 ? -1 : i % 3 == 0;
    if (correct[i] >= 0) loss_sum += loss[i], right += static_cast<unsigned long long>(correct[i]);
  }
  const Buffer RL = upload(*gpu, loss, DType::f32), RC = gpu->allocate(rows * sizeof(int), "correct"),
               S = gpu->allocate(sizeof(kernels::RowSums), "sums");
  ASSERT_EQ(cudaMemcpy(RC.data(), correct.data(), rows * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  for (int pass = 0; pass < 2; ++pass)  // sums accumulate
    kernels::accumulate_rows(rows, RL.as<float>(), RC.as<int>(), S.as<kernels::RowSums>(),
                             cuda_of(*gpu).stream(), "test");
  kernels::RowSums sums{};
  ASSERT_EQ(cudaMemcpy(&sums, S.data(), sizeof sums, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(sums.rows, 2u * rows);
  EXPECT_EQ(sums.correct, 2 * right);
  EXPECT_EQ(sums.bad_labels, 2u * ((rows + 10) / 11));
  EXPECT_NEAR(sums.loss, 2 * loss_sum, 1e-9 * loss_sum);
}

TEST_P(GpuKernels, SgdUpdatesMasterWeightsAndTheWorkingCopy) {
  const std::size_t count = 1003;
  const DType t = type();
  for (const bool nesterov : {false, true}) {
    const float loss_scale = t == DType::f16 ? 1024.f : 1.f;
    const auto grad = quantize(random_floats(count, 45, -loss_scale, loss_scale), t);
    auto master = random_floats(count, 46), velocity = random_floats(count, 47, -0.1f, 0.1f);
    const Buffer G = upload(*gpu, grad, t), M = upload(*gpu, master, DType::f32),
                 V = upload(*gpu, velocity, DType::f32);
    const Buffer W = gpu->allocate(count * element_size(t), "working");
    // The GPU backend's optimizer: its settings in device memory, one kernel per array.
    const std::unique_ptr<Sgd> sgd = gpu->make_sgd();
    sgd->set_hyper(cpu::SgdHyper{0.1, 0.9, 5e-4, nesterov}, loss_scale);
    sgd->update(t, count, G.data(), M.as<float>(), V.as<float>(), W.data(), "test");
    std::vector<float> unscaled(grad);
    for (float& g : unscaled) g /= loss_scale;
    cpu::sgd_update(count, unscaled.data(), master.data(), velocity.data(),
                    cpu::SgdHyper{0.1, 0.9, 5e-4, nesterov});
    const std::string what = std::string("SGD") + (nesterov ? " (Nesterov)" : "");
    const auto m = download(*gpu, M, count, DType::f32);
    EXPECT_TRUE(within(tag(what + ", master weights"), relative_error(m, master), 1e-6));
    EXPECT_TRUE(within(tag(what + ", velocity"),
                       relative_error(download(*gpu, V, count, DType::f32), velocity), 1e-6));
    EXPECT_EQ(download(*gpu, W, count, t), quantize(m, t)) << "the working copy is the rounded master copy";
  }
}

TEST_P(GpuKernels, ReluAndResidualAddMatchExactly) {
  const std::size_t count = 4099;  // not a whole number of 16-byte packs
  const DType t = type();
  const auto a = quantize(random_floats(count, 48), t), b = quantize(random_floats(count, 49), t);
  const auto dy = quantize(random_floats(count, 50), t);
  std::vector<float> y(count), sum(count), dx(count);
  cpu::relu_forward(count, a.data(), y.data());
  cpu::add_relu_forward(count, a.data(), b.data(), sum.data());
  cpu::relu_backward(count, sum.data(), dy.data(), dx.data());
  const Buffer A = upload(*gpu, a, t), B = upload(*gpu, b, t), DY = upload(*gpu, dy, t);
  const Buffer Y = gpu->allocate(count * 4, "y"), S = gpu->allocate(count * 4, "s"),
               DX = gpu->allocate(count * 4, "dx");
  const Shape4 s{1, 1, 1, static_cast<int>(count)};
  gpu->elementwise().relu_forward(A.tensor(s, t), Y.tensor(s, t));  // the backend's ReLU of its own
  kernels::add_relu_forward(t, count, A.data(), B.data(), S.data(), cuda_of(*gpu).stream(), "test");
  gpu->elementwise().relu_backward(S.tensor(s, t), DY.tensor(s, t), DX.tensor(s, t));
  EXPECT_EQ(download(*gpu, Y, count, t), y);
  EXPECT_EQ(download(*gpu, S, count, t), quantize(sum, t));
  EXPECT_EQ(download(*gpu, DX, count, t), quantize(dx, t));
}

INSTANTIATE_TEST_SUITE_P(Precisions, GpuKernels, ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(GpuNormalize, GivesTheCpusBitsForEveryTypeAndLayout) {
  CONVEYOR_REQUIRE_GPU();
  const std::unique_ptr<Context> context = testing::gpu_context(DType::f32);
  Context& gpu = *context;
  const cudaStream_t stream = cuda_of(gpu).stream();
  const ImageShape shape{5, 7, 3};  // 105 bytes an image: the batch ends inside a 16-byte chunk
  const std::size_t count = 3, total = count * shape.bytes();
  std::vector<std::uint8_t> pixels(total + 1);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 31 + 7);
  const Buffer in = gpu.allocate(pixels.size(), "pixels"), out = gpu.allocate(total * 4, "out");
  gpu.synchronize();
  ASSERT_EQ(cudaMemcpy(in.data(), pixels.data(), pixels.size(), cudaMemcpyHostToDevice), cudaSuccess);
  for (const auto type : {ops::ElementType::float32, ops::ElementType::float16, ops::ElementType::bfloat16})
    for (const auto layout : {ops::TensorLayout::chw, ops::TensorLayout::hwc})
      for (const std::size_t offset : {0, 1}) {  // 1: an input that is not 16-byte aligned
        ops::NormalizeParams p;
        p.mean = {123.675f, 116.28f, 103.53f, 0.f};
        p.std = {58.395f, 57.12f, 57.375f, 1.f};
        p.type = type, p.layout = layout;
        const std::size_t bytes = total * ops::element_size(type);
        std::vector<std::uint8_t> expected(bytes), actual(bytes);
        ops::normalize_batch(pixels.data() + offset, count, shape, p, expected.data());
        ops::normalize_batch_cuda(in.as<std::uint8_t>() + offset, count, shape, p, out.data(), stream);
        gpu.synchronize();
        ASSERT_EQ(cudaMemcpy(actual.data(), out.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(actual, expected) << "type " << static_cast<int>(type) << " layout "
                                    << static_cast<int>(layout) << " offset " << offset;
      }
}

}  // namespace
}  // namespace conveyor::nn
