// ops::normalize on the CPU: values, layouts, element types, padded rows, batches, bad arguments.
#include "conveyor/ops/normalize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "conveyor/error.h"
#include "src/core/float16.h"

namespace conveyor::ops {
namespace {

Image gradient_image(int h, int w, int c) {
  Image img(h, w, c);
  for (std::size_t i = 0; i < img.shape().bytes(); ++i)
    img.data()[i] = static_cast<std::uint8_t>((i * 37 + 11) % 256);
  return img;
}

NormalizeParams rgb_params(ElementType type, TensorLayout layout) {
  NormalizeParams p;
  p.mean = {123.675f, 116.28f, 103.53f, 0.f};
  p.std = {58.395f, 57.12f, 57.375f, 1.f};
  p.type = type;
  p.layout = layout;
  return p;
}

TEST(Normalize, SubtractsTheMeanAndDividesByTheStdPerChannel) {
  const Image img = gradient_image(3, 5, 3);
  const NormalizeParams p = rgb_params(ElementType::float32, TensorLayout::hwc);
  std::vector<float> out(img.shape().bytes());
  normalize(img.view(), p, out.data());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int c = static_cast<int>(i % 3);
    EXPECT_NEAR(out[i], (img.data()[i] - p.mean[c]) / p.std[c], 1e-5f);
  }
}

TEST(Normalize, ChwPutsEachChannelInItsOwnPlane) {
  const Image img = gradient_image(4, 3, 3);
  std::vector<float> hwc(img.shape().bytes()), chw(img.shape().bytes());
  normalize(img.view(), rgb_params(ElementType::float32, TensorLayout::hwc), hwc.data());
  normalize(img.view(), rgb_params(ElementType::float32, TensorLayout::chw), chw.data());
  for (int c = 0; c < 3; ++c)
    for (int pixel = 0; pixel < 12; ++pixel) EXPECT_EQ(chw[c * 12 + pixel], hwc[pixel * 3 + c]);
}

TEST(Normalize, HalfAndBfloat16AreTheRoundedFloatResults) {
  const Image img = gradient_image(5, 7, 3);
  std::vector<float> f(img.shape().bytes());
  std::vector<std::uint16_t> h(f.size()), b(f.size());
  normalize(img.view(), rgb_params(ElementType::float32, TensorLayout::chw), f.data());
  normalize(img.view(), rgb_params(ElementType::float16, TensorLayout::chw), h.data());
  normalize(img.view(), rgb_params(ElementType::bfloat16, TensorLayout::chw), b.data());
  for (std::size_t i = 0; i < f.size(); ++i) {
    EXPECT_EQ(h[i], nn::float_to_half(f[i]));
    EXPECT_EQ(b[i], nn::float_to_bfloat16(f[i]));
  }
}

TEST(Normalize, ReadsPaddedRows) {
  const Image img = gradient_image(4, 6, 1);
  std::vector<std::uint8_t> padded(4 * 10, 255);
  for (int y = 0; y < 4; ++y) std::memcpy(padded.data() + y * 10, img.data() + y * 6, 6);
  NormalizeParams p;
  p.mean[0] = 10.f, p.std[0] = 2.f;
  std::vector<float> a(24), b(24);
  normalize(img.view(), p, a.data());
  normalize(ConstImageView(padded.data(), img.shape(), 10), p, b.data());
  EXPECT_EQ(a, b);
}

TEST(NormalizeBatch, IsNormalizeOfEachImageBackToBack) {
  const ImageShape shape{3, 4, 3};
  std::vector<std::uint8_t> batch(2 * shape.bytes());
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i] = static_cast<std::uint8_t>(i * 7);
  const NormalizeParams p = rgb_params(ElementType::float32, TensorLayout::chw);
  std::vector<float> all(batch.size()), one(shape.bytes());
  normalize_batch(batch.data(), 2, shape, p, all.data());
  normalize(ConstImageView(batch.data() + shape.bytes(), shape), p, one.data());
  EXPECT_TRUE(std::equal(one.begin(), one.end(), all.begin() + static_cast<std::ptrdiff_t>(shape.bytes())));
}

TEST(Normalize, RejectsAZeroStdAndTooManyChannels) {
  const Image img = gradient_image(2, 2, 3);
  std::vector<float> out(12);
  NormalizeParams p;
  p.std[1] = 0.f;
  EXPECT_THROW(normalize(img.view(), p, out.data()), InvalidArgument);
  std::vector<std::uint8_t> five(2 * 2 * 5);
  EXPECT_THROW(normalize(ConstImageView(five.data(), {2, 2, 5}), NormalizeParams{}, out.data()),
               InvalidArgument);
}

}  // namespace
}  // namespace conveyor::ops
