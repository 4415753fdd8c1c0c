// The SampleOp factories: results land where the pipeline wants them and depend only on the sample's seed.
#include "conveyor/ops/sample_ops.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops/center_crop.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/flip.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor::ops {
namespace {

Sample sample_of(std::vector<std::uint8_t> jpeg, std::uint64_t seed) {
  Sample sample;
  sample.encoded = std::move(jpeg);
  sample.seed = seed;
  return sample;
}

// Runs the ops as the pipeline does: each one told its position in the chain before it runs.
void run(const std::vector<SampleOp>& chain, Sample& sample) {
  for (std::size_t i = 0; i < chain.size(); ++i) {
    sample.op_position = static_cast<std::uint32_t>(i);
    chain[i].apply(sample);
  }
}

Image copy_of(ConstImageView view) {
  Image image(view.shape());
  const std::ptrdiff_t bytes = static_cast<std::ptrdiff_t>(view.width) * view.channels;
  for (int y = 0; y < view.height; ++y) std::copy(view.row(y), view.row(y) + bytes, image.data() + y * bytes);
  return image;
}

TEST(SampleOps, FactoriesCarryTheirNames) {
  EXPECT_EQ(decode().name, "decode");
  EXPECT_EQ(decode_random_resized_crop(224).name, "decode_random_resized_crop");
  EXPECT_EQ(decode_center_crop(224).name, "decode_center_crop");
  EXPECT_EQ(random_crop(28, 28, 4).name, "random_crop");
  EXPECT_EQ(pad(1, 1, 1, 1).name, "pad");
  EXPECT_EQ(flip_horizontal().name, "flip_horizontal");
  EXPECT_EQ(flip_vertical().name, "flip_vertical");
  EXPECT_EQ(distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4}).name, "distort");
  EXPECT_EQ(resize(10, 20).name, "resize");
}

TEST(SampleOps, DecodeGivesTheWholeImage) {
  const auto jpeg = testing::make_jpeg(30, 40);
  Sample sample = sample_of(jpeg, 1);
  decode().apply(sample);
  EXPECT_EQ(testing::max_abs_diff(sample.image(), decode_jpeg(jpeg).view()), 0);
}

TEST(SampleOps, TheLastOpOfAChainWritesIntoTheSlotAndInPlaceOpsStayThere) {
  const auto jpeg = testing::make_jpeg(120, 160, 3, 2);
  std::vector<std::uint8_t> slot(std::size_t{32} * 32 * 3);
  Sample sample = sample_of(jpeg, 77);
  sample.bind_slot(ImageView(slot.data(), {32, 32, 3}));
  const std::vector<SampleOp> chain = {decode_random_resized_crop(32), flip_horizontal(1.0),
                                       distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4})};
  run(chain, sample);
  EXPECT_TRUE(sample.in_slot());
  // The same result by hand, from the documented streams.
  JpegDecoder decoder;
  Image expected(32, 32, 3);
  Rng crop_rng(77, op_stream(stream::random_resized_crop, 0)), distort_rng(77, op_stream(stream::distort, 2));
  decode_random_resized_crop(decoder, jpeg, expected.view(), {}, crop_rng);
  flip_horizontal(expected.view());
  distort(expected.view(), {.brightness = 0.4, .contrast = 0.4, .saturation = 0.4}, distort_rng);
  EXPECT_EQ(testing::max_abs_diff(ConstImageView(slot.data(), {32, 32, 3}), expected.view()), 0);
}

TEST(SampleOps, ResultsDependOnTheSeedOnlyNotOnTheThread) {
  const testing::Watchdog watchdog(std::chrono::seconds(60), "sample ops on threads");
  const std::vector<std::vector<std::uint8_t>> jpegs = {testing::make_jpeg(100, 150, 3, 1),
                                                        testing::make_jpeg(150, 100, 3, 2),
                                                        testing::make_jpeg(90, 90, 1, 3, 90, true)};
  const std::vector<SampleOp> chain = {
      decode_random_resized_crop(40), flip_horizontal(), flip_vertical(),
      distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1})};
  constexpr int kSamples = 48;
  const auto make = [&](int i) {
    Sample sample = sample_of(jpegs[i % jpegs.size()], sample_seed(5, 0, static_cast<std::uint64_t>(i)));
    run(chain, sample);
    return copy_of(sample.image());
  };
  std::vector<Image> sequential;
  sequential.reserve(kSamples);
  for (int i = 0; i < kSamples; ++i) sequential.push_back(make(i));
  std::vector<Image> threaded(kSamples);
  std::vector<std::thread> workers;
  workers.reserve(4);
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&, t] {
      for (int i = kSamples - 1 - t; i >= 0; i -= 4) threaded[i] = make(i);  // another order, other threads
    });
  for (std::thread& worker : workers) worker.join();
  int different_from_next = 0;
  for (int i = 0; i < kSamples; ++i) {
    EXPECT_EQ(testing::max_abs_diff(sequential[i].view(), threaded[i].view()), 0) << "sample " << i;
    if (i + 3 < kSamples)
      different_from_next += testing::max_abs_diff(sequential[i].view(), sequential[i + 3].view()) > 0;
  }
  EXPECT_GT(different_from_next, kSamples / 2);  // same file, other seed: another crop
}

TEST(SampleOps, FlipProbabilityIsHonoured) {
  const auto jpeg = testing::make_jpeg(8, 10);
  const Image decoded = decode_jpeg(jpeg);
  Image mirrored(decoded.shape());
  flip_horizontal(decoded.view(), mirrored.view());
  int flipped = 0;
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    for (const double p : {0.0, 0.5, 1.0}) {
      Sample sample = sample_of(jpeg, seed);
      decode().apply(sample);
      flip_horizontal(p).apply(sample);
      const bool was_flipped = testing::max_abs_diff(sample.image(), mirrored.view()) == 0;
      if (p == 0.0) {
        ASSERT_FALSE(was_flipped);
      } else if (p == 1.0) {
        ASSERT_TRUE(was_flipped);
      } else {
        flipped += was_flipped;
      }
    }
  }
  EXPECT_GT(flipped, 160);
  EXPECT_LT(flipped, 240);
}

TEST(SampleOps, FashionMnistRecipePadsAndCropsGrayImages) {
  const auto jpeg = testing::make_jpeg(28, 28, 1, 4);
  Sample sample = sample_of(jpeg, 12);
  const std::vector<SampleOp> chain = {decode({.color = ColorMode::keep}), random_crop(28, 28, 4),
                                       flip_horizontal()};
  run(chain, sample);
  EXPECT_EQ(sample.image().shape(), (ImageShape{28, 28, 1}));
  Image expected(28, 28, 1);
  Rng rng(12, op_stream(stream::random_crop, 1)), flip_rng(12, op_stream(stream::flip_horizontal, 2));
  random_crop(decode_jpeg(jpeg, {.color = ColorMode::keep}).view(), expected.view(), rng, 4);
  if (flip_rng.bernoulli(0.5)) flip_horizontal(expected.view());
  EXPECT_EQ(testing::max_abs_diff(sample.image(), expected.view()), 0);
}

TEST(SampleOps, PadResizeAndCenterCropProduceTheirShapes) {
  const auto jpeg = testing::make_jpeg(60, 80);
  Sample sample = sample_of(jpeg, 1);
  run({decode(), pad(1, 2, 3, 4, PadMode::reflect)}, sample);
  EXPECT_EQ(sample.image().shape(), (ImageShape{63, 87, 3}));
  resize(20, 30, Interpolation::area).apply(sample);
  EXPECT_EQ(sample.image().shape(), (ImageShape{20, 30, 3}));
  Sample eval = sample_of(jpeg, 1);
  decode_center_crop(50).apply(eval);
  Image expected(50, 50, 3);
  JpegDecoder decoder;
  decode_center_crop(decoder, jpeg, expected.view());
  EXPECT_EQ(testing::max_abs_diff(eval.image(), expected.view()), 0);
}

TEST(SampleOps, FailuresAreTypedErrors) {
  Sample broken = sample_of({0xFF, 0xD8, 0xFF}, 1);
  try {
    decode_random_resized_crop(32).apply(broken);
    FAIL() << "expected a DecodeError";
  } catch (const DecodeError& error) {
    EXPECT_EQ(error.failure(), DecodeFailure::truncated);
  }
  Sample empty = sample_of({}, 1);
  EXPECT_THROW(decode().apply(empty), DecodeError);
  Sample undecoded = sample_of(testing::make_jpeg(8, 8), 1);
  EXPECT_THROW(flip_horizontal().apply(undecoded), InvalidArgument);
  EXPECT_THROW(resize(4, 4).apply(undecoded), InvalidArgument);
  EXPECT_THROW(decode_random_resized_crop(0), InvalidArgument);
  EXPECT_THROW(distort({.hue = 0.7}), InvalidArgument);
  EXPECT_THROW(pad(-1, 0, 0, 0), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::ops
