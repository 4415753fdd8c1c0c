// Every CPU reference layer's backward pass against central differences of its forward pass, in double.
#include "tests/train/gradient_check.h"

#include <gtest/gtest.h>

#include "conveyor/train/nn/reference.h"

namespace conveyor::nn {
namespace {

using testing::dot;
using testing::gradient_error;
using testing::random_values;

constexpr double kTolerance = 1e-6;

struct ConvCase {
  int kernel, stride, pad;
};

class ConvGradient : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvGradient, DataAndFilterGradientsMatchFiniteDifferences) {
  const ConvCase c = GetParam();
  const ConvGeometry g{{2, 7, 6, 3}, 4, c.kernel, c.stride, c.pad};
  const Shape4 out = g.output();
  std::vector<double> x = random_values(g.input.count(), 1), w = random_values(g.weight_count(), 2);
  const std::vector<double> r = random_values(out.count(), 3);
  std::vector<double> y(out.count()), dx(x.size()), dw(w.size());
  auto loss = [&] {
    cpu::conv2d_forward(g, x.data(), w.data(), y.data());
    return dot(y, r);
  };
  cpu::conv2d_backward_data(g, r.data(), w.data(), dx.data());
  cpu::conv2d_backward_filter(g, x.data(), r.data(), dw.data());
  EXPECT_LT(gradient_error(x, dx, loss), kTolerance);
  EXPECT_LT(gradient_error(w, dw, loss), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvGradient,
                         ::testing::Values(ConvCase{3, 1, 1}, ConvCase{3, 2, 1}, ConvCase{1, 2, 0},
                                           ConvCase{1, 1, 0}, ConvCase{5, 2, 2}));

TEST(ConvGradient, AccumulateAddsToTheExistingGradient) {
  const ConvGeometry g{{1, 5, 5, 2}, 3, 3, 1, 1};
  const std::vector<double> w = random_values(g.weight_count(), 4), dy = random_values(g.output().count(), 5);
  std::vector<double> fresh(g.input.count()), accumulated(g.input.count(), 0.5);
  cpu::conv2d_backward_data(g, dy.data(), w.data(), fresh.data());
  cpu::conv2d_backward_data(g, dy.data(), w.data(), accumulated.data(), true);
  for (std::size_t i = 0; i < fresh.size(); ++i) EXPECT_NEAR(accumulated[i], fresh[i] + 0.5, 1e-12);
}

TEST(BatchNormGradient, InputScaleAndShiftGradientsMatchFiniteDifferences) {
  const Shape4 s{3, 4, 3, 5};
  std::vector<double> x = random_values(s.count(), 6, -2, 3), gamma = random_values(s.c, 7, 0.5, 1.5),
                      beta = random_values(s.c, 8);
  const std::vector<double> r = random_values(s.count(), 9);
  std::vector<double> y(s.count()), mean(s.c), inv_std(s.c), dx(s.count()), dgamma(s.c), dbeta(s.c);
  auto loss = [&] {
    cpu::batch_norm_forward_training<double>(s, x.data(), gamma.data(), beta.data(), 0.1, 1e-5, y.data(),
                                             mean.data(), inv_std.data(), nullptr, nullptr);
    return dot(y, r);
  };
  loss();
  cpu::batch_norm_backward(s, x.data(), r.data(), gamma.data(), mean.data(), inv_std.data(), dx.data(),
                           dgamma.data(), dbeta.data());
  EXPECT_LT(gradient_error(x, dx, loss), kTolerance);
  EXPECT_LT(gradient_error(gamma, dgamma, loss), kTolerance);
  EXPECT_LT(gradient_error(beta, dbeta, loss), kTolerance);
}

TEST(ReluGradient, MatchesFiniteDifferencesAwayFromZero) {
  std::vector<double> x = random_values(200, 10);
  for (double& v : x) v += v > 0 ? 0.01 : -0.01;  // no kink within reach of the difference step
  const std::vector<double> r = random_values(x.size(), 11);
  std::vector<double> y(x.size()), dx(x.size());
  auto loss = [&] {
    cpu::relu_forward(x.size(), x.data(), y.data());
    return dot(y, r);
  };
  loss();
  cpu::relu_backward(x.size(), y.data(), r.data(), dx.data());
  EXPECT_LT(gradient_error(x, dx, loss), kTolerance);
}

TEST(AddReluGradient, BothInputsGetTheMaskedGradient) {
  std::vector<double> a = random_values(150, 12), b = random_values(150, 13);
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] + b[i]) < 0.01) a[i] += 0.05;
  const std::vector<double> r = random_values(a.size(), 14);
  std::vector<double> y(a.size()), grad(a.size());
  auto loss = [&] {
    cpu::add_relu_forward(a.size(), a.data(), b.data(), y.data());
    return dot(y, r);
  };
  loss();
  cpu::relu_backward(a.size(), y.data(), r.data(), grad.data());
  EXPECT_LT(gradient_error(a, grad, loss), kTolerance);
  EXPECT_LT(gradient_error(b, grad, loss), kTolerance);
}

struct PoolCase {
  int window, stride, pad;
};

class PoolGradient : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolGradient, MaxPoolMatchesFiniteDifferences) {
  const PoolCase c = GetParam();
  const PoolGeometry g{{2, 7, 8, 3}, c.window, c.stride, c.pad};
  std::vector<double> x = testing::distinct_values(g.input.count(), 15);
  const std::vector<double> r = random_values(g.output().count(), 16);
  std::vector<double> y(r.size()), dx(x.size());
  auto loss = [&] {
    cpu::max_pool_forward(g, x.data(), y.data());
    return dot(y, r);
  };
  cpu::max_pool_backward(g, x.data(), r.data(), dx.data());
  EXPECT_LT(gradient_error(x, dx, loss), kTolerance);
}

TEST_P(PoolGradient, AveragePoolMatchesFiniteDifferences) {
  const PoolCase c = GetParam();
  const PoolGeometry g{{2, 7, 8, 3}, c.window, c.stride, c.pad};
  std::vector<double> x = random_values(g.input.count(), 17);
  const std::vector<double> r = random_values(g.output().count(), 18);
  std::vector<double> y(r.size()), dx(x.size());
  auto loss = [&] {
    cpu::avg_pool_forward(g, x.data(), y.data());
    return dot(y, r);
  };
  cpu::avg_pool_backward(g, r.data(), dx.data());
  EXPECT_LT(gradient_error(x, dx, loss), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Windows, PoolGradient,
                         ::testing::Values(PoolCase{3, 2, 1}, PoolCase{2, 2, 0}, PoolCase{3, 1, 1}));

TEST(GlobalAveragePoolGradient, MatchesFiniteDifferences) {
  const Shape4 s{3, 4, 5, 6};
  std::vector<double> x = random_values(s.count(), 19);
  const std::vector<double> r = random_values(static_cast<std::size_t>(s.n) * s.c, 20);
  std::vector<double> y(r.size()), dx(x.size());
  auto loss = [&] {
    cpu::global_avg_pool_forward(s, x.data(), y.data());
    return dot(y, r);
  };
  cpu::global_avg_pool_backward(s, r.data(), dx.data());
  EXPECT_LT(gradient_error(x, dx, loss), kTolerance);
}

TEST(LinearGradient, InputWeightAndBiasGradientsMatchFiniteDifferences) {
  const int n = 4, in = 7, out = 5;
  std::vector<double> x = random_values(n * in, 21), w = random_values(out * in, 22),
                      b = random_values(out, 23);
  const std::vector<double> r = random_values(n * out, 24);
  std::vector<double> y(n * out), dx(x.size()), dw(w.size()), db(b.size());
  auto loss = [&] {
    cpu::linear_forward(n, in, out, x.data(), w.data(), b.data(), y.data());
    return dot(y, r);
  };
  cpu::linear_backward_data(n, in, out, r.data(), w.data(), dx.data());
  cpu::linear_backward_weights(n, in, out, x.data(), r.data(), dw.data(), db.data());
  EXPECT_LT(gradient_error(x, dx, loss), kTolerance);
  EXPECT_LT(gradient_error(w, dw, loss), kTolerance);
  EXPECT_LT(gradient_error(b, db, loss), kTolerance);
}

TEST(SoftmaxCrossEntropyGradient, IsTheGradientOfTheMeanLoss) {
  const int n = 5, classes = 7;
  std::vector<double> logits = random_values(n * classes, 25, -3, 3);
  const std::vector<std::int64_t> labels{0, 6, 3, 3, 1};
  std::vector<double> grad(logits.size());
  cpu::softmax_cross_entropy(n, classes, logits.data(), labels.data(), grad.data(), 1.0 / n);
  auto loss = [&] {
    return cpu::softmax_cross_entropy<double>(n, classes, logits.data(), labels.data(), nullptr, 1.0)
               .loss_sum /
           n;
  };
  EXPECT_LT(gradient_error(logits, grad, loss), kTolerance);
}

TEST(SoftmaxCrossEntropyGradient, IsTheGradientOfTheLabelSmoothedMeanLoss) {
  const int n = 5, classes = 7;
  const double smoothing = 0.2;
  std::vector<double> logits = random_values(n * classes, 26, -3, 3);
  const std::vector<std::int64_t> labels{0, 6, 3, 3, 1};
  std::vector<double> grad(logits.size());
  cpu::softmax_cross_entropy(n, classes, logits.data(), labels.data(), grad.data(), 1.0 / n, smoothing);
  auto loss = [&] {
    return cpu::softmax_cross_entropy<double>(n, classes, logits.data(), labels.data(), nullptr, 1.0,
                                              smoothing)
               .loss_sum /
           n;
  };
  EXPECT_LT(gradient_error(logits, grad, loss), kTolerance);
}

}  // namespace
}  // namespace conveyor::nn
