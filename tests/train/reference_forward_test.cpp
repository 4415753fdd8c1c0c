// What the CPU reference's forward passes compute, on examples small enough to check by hand or against
// a second, independently written loop nest.
#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>

#include <cmath>

#include "conveyor/error.h"
#include "conveyor/train/nn/reference.h"
#include "tests/train/gradient_check.h"

namespace conveyor::nn {
namespace {

TEST(Conv2dForward, SumsTheZeroPaddedWindow) {
  const ConvGeometry g{{1, 3, 3, 1}, 1, 3, 1, 1};
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, w(9, 1.f);
  std::vector<float> y(9);
  cpu::conv2d_forward(g, x.data(), w.data(), y.data());
  EXPECT_EQ(y[4], 45.f);  // centre: every pixel
  EXPECT_EQ(y[0], 12.f);  // corner: 1 + 2 + 4 + 5
  EXPECT_EQ(y[8], 28.f);  // 5 + 6 + 8 + 9
}

TEST(Conv2dForward, MatchesADirectNchwStyleLoop) {
  const ConvGeometry g{{2, 9, 7, 3}, 5, 3, 2, 1};
  const Shape4 in = g.input, out = g.output();
  const auto x = testing::random_values(in.count(), 30), w = testing::random_values(g.weight_count(), 31);
  std::vector<double> y(out.count());
  cpu::conv2d_forward(g, x.data(), w.data(), y.data());
  for (int n = 0; n < out.n; ++n)
    for (int k = 0; k < out.c; ++k)
      for (int oy = 0; oy < out.h; ++oy)
        for (int ox = 0; ox < out.w; ++ox) {
          double expected = 0;
          for (int c = 0; c < in.c; ++c)
            for (int r = 0; r < 3; ++r)
              for (int s = 0; s < 3; ++s) {
                const int iy = oy * 2 - 1 + r, ix = ox * 2 - 1 + s;
                if (iy < 0 || ix < 0 || iy >= in.h || ix >= in.w) continue;
                expected += x[((n * in.h + iy) * in.w + ix) * in.c + c] * w[((k * 3 + r) * 3 + s) * in.c + c];
              }
          EXPECT_NEAR(y[((n * out.h + oy) * out.w + ox) * out.c + k], expected, 1e-12);
        }
}

TEST(BatchNormForward, NormalizesEachChannelAndUpdatesRunningStatistics) {
  const Shape4 s{4, 3, 5, 2};
  const auto x = testing::random_values(s.count(), 32, -1, 5);
  const std::vector<double> gamma{2.0, 0.5}, beta{1.0, -3.0};
  std::vector<double> y(s.count()), mean(2), inv_std(2), running_mean{0, 0}, running_var{1, 1};
  cpu::batch_norm_forward_training(s, x.data(), gamma.data(), beta.data(), 0.1, 1e-5, y.data(), mean.data(),
                                   inv_std.data(), running_mean.data(), running_var.data());
  const double m = static_cast<double>(s.rows());
  for (int c = 0; c < 2; ++c) {
    double sx = 0, sy = 0;
    for (std::size_t r = 0; r < s.rows(); ++r) sx += x[r * 2 + c], sy += y[r * 2 + c];
    double vx = 0, vy = 0;
    for (std::size_t r = 0; r < s.rows(); ++r) {
      vx += (x[r * 2 + c] - sx / m) * (x[r * 2 + c] - sx / m);
      vy += (y[r * 2 + c] - sy / m) * (y[r * 2 + c] - sy / m);
    }
    EXPECT_NEAR(sy / m, beta[c], 1e-12);
    EXPECT_NEAR(std::sqrt(vy / m), gamma[c] * std::sqrt(vx / m / (vx / m + 1e-5)), 1e-9);
    EXPECT_NEAR(mean[c], sx / m, 1e-12);
    EXPECT_NEAR(inv_std[c], 1 / std::sqrt(vx / m + 1e-5), 1e-12);
    EXPECT_NEAR(running_mean[c], 0.1 * sx / m, 1e-12);
    EXPECT_NEAR(running_var[c], 0.9 + 0.1 * vx / (m - 1), 1e-12);  // unbiased, as PyTorch and cuDNN
  }
}

TEST(BatchNormForward, InferenceUsesTheRunningStatistics) {
  const Shape4 s{1, 1, 2, 1};
  const std::vector<double> x{3, 5}, gamma{2}, beta{1}, mean{1}, var{4};
  std::vector<double> y(2);
  cpu::batch_norm_forward_inference(s, x.data(), gamma.data(), beta.data(), mean.data(), var.data(), 0.0,
                                    y.data());
  EXPECT_DOUBLE_EQ(y[0], 3.0);  // (3 - 1) / 2 * 2 + 1
  EXPECT_DOUBLE_EQ(y[1], 5.0);
}

TEST(BatchNormForward, GivesTheSameBitsOnOneThreadAndOnMany) {
  const Shape4 s{8, 16, 16, 8};
  const auto xd = testing::random_values(s.count(), 33);
  const std::vector<float> x(xd.begin(), xd.end()), gamma(8, 1.f), beta(8, 0.f);
  auto run = [&](int threads) {
    std::vector<float> y(s.count()), mean(8), inv_std(8);
    tbb::task_arena(threads).execute([&] {
      cpu::batch_norm_forward_training<float>(s, x.data(), gamma.data(), beta.data(), 0.1, 1e-5, y.data(),
                                              mean.data(), inv_std.data(), nullptr, nullptr);
    });
    return y;
  };
  EXPECT_EQ(run(1), run(4));
}

TEST(PoolForward, MaxTakesTheLargestAndIgnoresPadding) {
  const PoolGeometry g{{1, 2, 2, 1}, 3, 2, 1};
  const std::vector<float> x{-4, -3, -2, -1};
  std::vector<float> y(1);
  cpu::max_pool_forward(g, x.data(), y.data());
  EXPECT_EQ(y[0], -1.f);  // padding is not a zero candidate
}

TEST(PoolForward, AverageCountsThePaddingAsZeros) {
  const PoolGeometry g{{1, 2, 2, 1}, 2, 2, 1};
  const std::vector<float> x{4, 8, 12, 16};
  std::vector<float> y(g.output().count());
  cpu::avg_pool_forward(g, x.data(), y.data());
  ASSERT_EQ(y.size(), 4u);
  EXPECT_EQ(y[0], 1.f);  // window covers x[0] and three padding zeros
  EXPECT_EQ(y[3], 4.f);
}

TEST(PoolForward, GlobalAverageIsThePerChannelMean) {
  const Shape4 s{1, 2, 2, 2};
  const std::vector<float> x{1, 10, 2, 20, 3, 30, 4, 40};
  std::vector<float> y(2);
  cpu::global_avg_pool_forward(s, x.data(), y.data());
  EXPECT_EQ(y[0], 2.5f);
  EXPECT_EQ(y[1], 25.f);
}

TEST(LinearForward, ComputesXTimesWTransposedPlusBias) {
  const std::vector<float> x{1, 2, 3, 4, 5, 6}, w{1, 0, 0, 0, 1, 1}, b{10, 20};  // n=2, in=3, out=2
  std::vector<float> y(4);
  cpu::linear_forward(2, 3, 2, x.data(), w.data(), b.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{11, 25, 14, 31}));
}

TEST(SoftmaxCrossEntropy, EqualLogitsCostLogOfTheClassCount) {
  const std::vector<float> logits(2 * 4, 0.f);
  const std::vector<std::int64_t> labels{1, 3};
  const auto r =
      cpu::softmax_cross_entropy(2, 4, logits.data(), labels.data(), static_cast<float*>(nullptr), 1.0);
  EXPECT_NEAR(r.loss_sum, 2 * std::log(4.0), 1e-6);
}

TEST(SoftmaxCrossEntropy, LabelSmoothingGivesWhatPyTorchGives) {
  // F.cross_entropy(tensor([[2., 0., -1.]]), tensor([0]), label_smoothing=0.1) = 0.336513; the gradient is
  // softmax - (0.9 one-hot + 0.1 / 3).
  const std::vector<double> logits{2, 0, -1};
  const std::vector<std::int64_t> labels{0};
  std::vector<double> grad(3);
  const auto r = cpu::softmax_cross_entropy(1, 3, logits.data(), labels.data(), grad.data(), 1.0, 0.1);
  EXPECT_NEAR(r.loss_sum, 0.3365126862, 1e-9);
  EXPECT_NEAR(grad[0], -0.0895385989, 1e-9);
  EXPECT_NEAR(grad[1], 0.0808618661, 1e-9);
  EXPECT_NEAR(grad[2], 0.0086767328, 1e-9);
}

TEST(SoftmaxCrossEntropy, CountsRowsWhoseLargestLogitIsTheLabel) {
  const std::vector<float> logits{5, 1, 0, 0, 1, 5};
  const std::vector<std::int64_t> labels{0, 0};
  const auto r =
      cpu::softmax_cross_entropy(2, 3, logits.data(), labels.data(), static_cast<float*>(nullptr), 1.0);
  EXPECT_EQ(r.correct, 1u);
}

TEST(SoftmaxCrossEntropy, RejectsALabelOutsideTheClasses) {
  const std::vector<float> logits(3, 0.f);
  const std::vector<std::int64_t> labels{3};
  EXPECT_THROW(
      cpu::softmax_cross_entropy(1, 3, logits.data(), labels.data(), static_cast<float*>(nullptr), 1.0),
      InvalidArgument);
}

TEST(SgdUpdate, FollowsTorchOptimSgd) {
  // torch.optim.SGD([w], lr=0.1, momentum=0.9, weight_decay=0.01), two steps with grad 1 from w = 1:
  // step 1: d = 1.01, v = 1.01, w = 0.899; step 2: d = 1.00899, v = 1.91799, w = 0.707201.
  std::vector<double> w{1.0}, v{0.0};
  const std::vector<double> g{1.0};
  const cpu::SgdHyper h{0.1, 0.9, 0.01, false};
  cpu::sgd_update(1, g.data(), w.data(), v.data(), h);
  EXPECT_NEAR(w[0], 0.899, 1e-12);
  cpu::sgd_update(1, g.data(), w.data(), v.data(), h);
  EXPECT_NEAR(v[0], 1.91799, 1e-12);
  EXPECT_NEAR(w[0], 0.707201, 1e-12);
}

TEST(SgdUpdate, NesterovLooksAhead) {
  std::vector<double> w{1.0}, v{0.0};
  const std::vector<double> g{1.0};
  cpu::sgd_update(1, g.data(), w.data(), v.data(), cpu::SgdHyper{0.1, 0.9, 0.0, true});
  EXPECT_NEAR(w[0], 1.0 - 0.1 * (1.0 + 0.9 * 1.0), 1e-12);
}

}  // namespace
}  // namespace conveyor::nn
