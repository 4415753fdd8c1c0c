// The nvJPEG batch decoder on a GPU, against the CPU path (libjpeg-turbo + OpenCV). nvJPEG's inverse DCT and
// chroma upsampling are not libjpeg-turbo's, so decoded pixels are compared by mean and largest absolute
// difference within stated tolerances, and every figure is printed ("[ nvjpeg ] ..." lines): one log tells
// what each path did. Skips without a GPU or without nvJPEG, saying why.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../ops/jpeg_fixtures.h"
#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "gpu_stage_support.h"
#include "src/device/nvjpeg/gpu_decode_plan.h"
#include "src/device/nvjpeg/nvjpeg_batch_decoder.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor::cuda {
namespace {

using namespace std::chrono_literals;

constexpr std::uint8_t kUntouched = 0x5A;

struct Difference {
  double mean = 0;
  int max = 0;
};

Difference difference(ConstImageView a, ConstImageView b) {
  return {testing::mean_abs_diff(a, b), testing::max_abs_diff(a, b)};
}

std::string shape_of(const ops::Rect& w) {
  return std::to_string(w.width) + "x" + std::to_string(w.height) + "+" + std::to_string(w.x) + "+" +
         std::to_string(w.y);
}

class NvjpegDecoderGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    CONVEYOR_SKIP_WITHOUT_GPU();
    nvjpeg::LoadResult loaded = nvjpeg::load();
    if (!loaded) GTEST_SKIP() << loaded.unavailable;
    library_ = loaded.library;
    guard_.emplace(0);
    pool_.emplace(0);
    stream_.emplace();
  }

  std::unique_ptr<NvjpegBatchDecoder> decoder(bool hardware, bool roi,
                                              ops::ColorMode color = ops::ColorMode::rgb) {
    NvjpegDecoderOptions options;
    options.hardware = hardware;
    options.roi = roi;
    options.color = color;
    auto made = std::make_unique<NvjpegBatchDecoder>(library_, *pool_, options);
    std::cout << "[ nvjpeg   ] " << made->description() << "\n";
    return made;
  }

  // Decodes `requests` into `count` slots of `shape` (filled with kUntouched first); returns the slots.
  std::vector<std::uint8_t> run(NvjpegBatchDecoder& d, const std::vector<NvjpegRequest>& requests,
                                std::size_t count, ImageShape shape, std::vector<NvjpegOutcome>& outcomes) {
    DeviceBuffer out = testing::upload(*pool_, std::vector<std::uint8_t>(count * shape.bytes(), kUntouched),
                                       stream_->get(), "decoder output");
    const DeviceSlots slots{out.as<std::uint8_t>(), count, shape, shape.bytes(),
                            static_cast<std::size_t>(shape.width) * shape.channels};
    outcomes = d.decode(requests, slots, stream_->get());
    return testing::download(out.data(), count * shape.bytes(), stream_->get());
  }

  std::shared_ptr<const nvjpeg::Library> library_;
  std::optional<DeviceGuard> guard_;
  std::optional<DeviceMemoryPool> pool_;
  std::optional<Stream> stream_;
};

// Window = the whole image, output = its size: the resize is a copy, so this compares decoders only.
TEST_F(NvjpegDecoderGpu, WholeImagesAreCloseToLibjpeg) {
  const testing::Watchdog watchdog(60s, "WholeImagesAreCloseToLibjpeg");
  struct Case {
    const char* name;
    testing::Subsampling subsampling;
    int quality;
    double mean_tolerance;
    int max_tolerance;  // 0: printed, not asserted
  };
  const Case cases[] = {{"4:4:4 q95", testing::Subsampling::s444, 95, 1.0, 8},
                        {"4:2:2 q90", testing::Subsampling::s422, 90, 2.5, 0},
                        {"4:2:0 q90", testing::Subsampling::s420, 90, 2.5, 0}};
  for (const bool hardware : {true, false}) {
    const auto d = decoder(hardware, true);
    for (const Case& c : cases) {
      const Image picture = testing::make_picture(96, 128, 3, 3);
      const auto jpeg = testing::encode_jpeg(picture.view(), c.quality, c.subsampling);
      std::vector<NvjpegOutcome> outcomes;
      const auto out = run(*d, {{jpeg, {0, 0, 128, 96}, 0}}, 1, {96, 128, 3}, outcomes);
      ASSERT_NE(outcomes[0].path, NvjpegPath::fallback) << c.name << ": " << to_string(outcomes[0].fallback)
                                                        << " " << nvjpeg::to_string(outcomes[0].status);
      const Image cpu = ops::decode_jpeg(jpeg);
      const Difference diff = difference(ConstImageView(out.data(), {96, 128, 3}), cpu.view());
      std::cout << "[ nvjpeg   ] whole image " << c.name << " via " << to_string(outcomes[0].path)
                << ": mean |GPU - libjpeg| " << diff.mean << ", max " << diff.max << "\n";
      EXPECT_LE(diff.mean, c.mean_tolerance) << c.name << " via " << to_string(outcomes[0].path);
      if (c.max_tolerance > 0) {
        EXPECT_LE(diff.max, c.max_tolerance) << c.name << " via " << to_string(outcomes[0].path);
      }
    }
  }
}

// decode_random_resized_crop on the GPU against the CPU SampleOp, sample by sample (same seeds, so the same
// windows): every path, with and without ROI.
TEST_F(NvjpegDecoderGpu, RandomResizedCropIsCloseToTheCpuOp) {
  const testing::Watchdog watchdog(120s, "RandomResizedCropIsCloseToTheCpuOp");
  const int size = 224;
  const std::size_t count = 48;
  std::vector<std::vector<std::uint8_t>> jpegs;
  for (std::size_t i = 0; i < count; ++i) {
    const bool tall = i % 3 == 0;
    jpegs.push_back(testing::make_jpeg(tall ? 500 : 375, tall ? 333 : 500, 3, 300 + i, 90, i % 8 == 7));
  }
  const SampleOp cpu_op = ops::decode_random_resized_crop(size);
  std::vector<Image> expected;
  std::vector<NvjpegRequest> requests;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t seed = sample_seed(5, 0, i);
    Sample sample;
    sample.seed = seed;
    sample.encoded = jpegs[i];
    cpu_op.apply(sample);
    Image image(sample.image().shape());
    std::copy(sample.image().data, sample.image().data + image.shape().bytes(), image.data());
    expected.push_back(std::move(image));
    const GpuDecodePlan plan =
        plan_random_resized_crop(jpegs[i], {}, seed, op_stream(ops::stream::random_resized_crop, 0));
    ASSERT_EQ(plan.fallback, GpuDecodeFallback::none);
    requests.push_back({jpegs[i], plan.window, static_cast<std::uint32_t>(i)});
  }
  const ImageShape shape{size, size, 3};
  for (const bool hardware : {true, false})
    for (const bool roi : {true, false}) {
      const auto d = decoder(hardware, roi);
      std::vector<NvjpegOutcome> outcomes;
      const auto out = run(*d, requests, count, shape, outcomes);
      std::map<std::string, int> paths;
      double worst_mean = 0;
      for (std::size_t i = 0; i < count; ++i) {
        ++paths[to_string(outcomes[i].path)];
        ASSERT_NE(outcomes[i].path, NvjpegPath::fallback)
            << "image " << i << ": " << to_string(outcomes[i].fallback) << " "
            << nvjpeg::to_string(outcomes[i].status);
        const Difference diff =
            difference(ConstImageView(out.data() + i * shape.bytes(), shape), expected[i].view());
        worst_mean = std::max(worst_mean, diff.mean);
        EXPECT_LE(diff.mean, 4.0) << "image " << i << " (" << (i % 8 == 7 ? "progressive" : "baseline")
                                  << ", window " << shape_of(requests[i].window) << ") via "
                                  << to_string(outcomes[i].path) << ": mean " << diff.mean << ", max "
                                  << diff.max;
      }
      std::cout << "[ nvjpeg   ] RRC 224, hardware " << hardware << ", roi " << roi
                << ": worst mean |GPU - CPU| " << worst_mean << "; paths:";
      for (const auto& [path, n] : paths) std::cout << " " << path << " " << n;
      std::cout << "\n";
      if (!hardware) {
        EXPECT_EQ(paths[roi ? "software_roi" : "software"], static_cast<int>(count));
      }
      if (d->hardware()) {
        // The engines take baseline 4:2:0 JPEGs: if none went there, the hardware batch failed (its status is
        // carried by every image it re-routed).
        EXPECT_GT(paths["hardware"] + paths["hardware_roi"], 0)
            << "no image went through the hardware decoder; status of image 0: "
            << nvjpeg::to_string(outcomes[0].status);
        for (std::size_t i = 7; i < count; i += 8)  // the progressive ones
          EXPECT_TRUE(outcomes[i].path == NvjpegPath::software ||
                      outcomes[i].path == NvjpegPath::software_roi)
              << "progressive image " << i << " went " << to_string(outcomes[i].path);
      }
    }
}

// ROI decode and whole decode + crop give the same window: compared after the same resize.
TEST_F(NvjpegDecoderGpu, RoiDecodeIsWholeDecodeCropped) {
  const std::size_t count = 16;
  std::vector<std::vector<std::uint8_t>> jpegs;
  std::vector<NvjpegRequest> requests;
  Rng rng(41);
  for (std::size_t i = 0; i < count; ++i) jpegs.push_back(testing::make_jpeg(240, 320, 3, 400 + i));
  for (std::size_t i = 0; i < count; ++i) {
    const int w = 16 + static_cast<int>(rng.below(300)), h = 16 + static_cast<int>(rng.below(220));
    requests.push_back({jpegs[i],
                        {static_cast<int>(rng.below(321 - w)), static_cast<int>(rng.below(241 - h)), w, h},
                        static_cast<std::uint32_t>(i)});
  }
  const ImageShape shape{64, 64, 3};
  for (const bool hardware : {true, false}) {
    std::vector<NvjpegOutcome> with_roi, without_roi;
    const auto a = run(*decoder(hardware, true), requests, count, shape, with_roi);
    const auto b = run(*decoder(hardware, false), requests, count, shape, without_roi);
    for (std::size_t i = 0; i < count; ++i) {
      const Difference diff = difference(ConstImageView(a.data() + i * shape.bytes(), shape),
                                         ConstImageView(b.data() + i * shape.bytes(), shape));
      std::cout << "[ nvjpeg   ] window " << shape_of(requests[i].window) << ": "
                << to_string(with_roi[i].path) << " vs " << to_string(without_roi[i].path) << ": mean "
                << diff.mean << ", max " << diff.max << "\n";
      EXPECT_LE(diff.mean, 0.25) << "image " << i << " window " << shape_of(requests[i].window);
    }
  }
}

TEST_F(NvjpegDecoderGpu, GrayOutputIsCloseToTheCpuGrayDecode) {
  const auto color = testing::make_jpeg(90, 120, 3, 7);
  const auto gray = testing::make_jpeg(90, 120, 1, 8);
  ops::DecodeOptions as_gray;
  as_gray.color = ops::ColorMode::gray;
  for (const bool hardware : {true, false}) {
    const auto d = decoder(hardware, true, ops::ColorMode::gray);
    std::vector<NvjpegOutcome> outcomes;
    const ImageShape shape{90, 120, 1};
    const auto out = run(*d, {{color, {0, 0, 120, 90}, 0}, {gray, {0, 0, 120, 90}, 1}}, 2, shape, outcomes);
    for (int i = 0; i < 2; ++i) {
      ASSERT_NE(outcomes[i].path, NvjpegPath::fallback) << i << ": " << nvjpeg::to_string(outcomes[i].status);
      const Image cpu = ops::decode_jpeg(i == 0 ? color : gray, as_gray);
      const Difference diff = difference(ConstImageView(out.data() + i * shape.bytes(), shape), cpu.view());
      std::cout << "[ nvjpeg   ] gray output of a " << (i == 0 ? "colour" : "gray") << " JPEG via "
                << to_string(outcomes[i].path) << ": mean " << diff.mean << ", max " << diff.max << "\n";
      EXPECT_LE(diff.mean, 1.5);
    }
  }
}

// Broken images are reported one by one and leave their slots alone; the good ones around them decode.
TEST_F(NvjpegDecoderGpu, BrokenImagesFallBackWithoutSpoilingTheBatch) {
  const auto good = testing::make_jpeg(80, 100, 3, 9);
  auto noise = good;  // a JPEG start, then noise where the tables and the scan should be
  Rng rng(42);
  for (std::size_t i = 2; i < noise.size(); ++i) noise[i] = static_cast<std::uint8_t>(rng.below(256));
  auto truncated = good;
  truncated.resize(good.size() * 2 / 5);
  const ImageShape shape{40, 50, 3};
  const ops::Rect whole{0, 0, 100, 80};
  const Image cpu = [&] {
    Image full = ops::decode_jpeg(good), small(shape);
    ops::resize(full.view(), small.view());
    return small;
  }();
  for (const bool hardware : {true, false}) {
    const auto d = decoder(hardware, true);
    std::vector<NvjpegOutcome> outcomes;
    const std::vector<NvjpegRequest> requests = {
        {good, whole, 0}, {noise, whole, 1}, {good, whole, 2}, {truncated, whole, 3}, {good, whole, 4}};
    std::vector<std::uint8_t> out;
    ASSERT_NO_THROW(out = run(*d, requests, 5, shape, outcomes));
    for (const std::uint32_t i : {0u, 2u, 4u}) {
      ASSERT_NE(outcomes[i].path, NvjpegPath::fallback) << i;
      const Difference diff = difference(ConstImageView(out.data() + i * shape.bytes(), shape), cpu.view());
      EXPECT_LE(diff.mean, 2.5) << "good image in slot " << i << " via " << to_string(outcomes[i].path);
    }
    EXPECT_EQ(outcomes[1].path, NvjpegPath::fallback) << "noise decoded via " << to_string(outcomes[1].path);
    for (const std::uint32_t i : {1u, 3u}) {
      std::cout << "[ nvjpeg   ] " << (i == 1 ? "noise after SOI" : "truncated to 40 %") << ", hardware "
                << hardware << ": " << to_string(outcomes[i].path) << " / " << to_string(outcomes[i].fallback)
                << " / " << nvjpeg::to_string(outcomes[i].status) << "\n";
      if (outcomes[i].path == NvjpegPath::fallback) {
        const std::uint8_t* slot = out.data() + i * shape.bytes();
        EXPECT_TRUE(std::all_of(slot, slot + shape.bytes(), [](std::uint8_t v) { return v == kUntouched; }))
            << "slot " << i << " of a fallback image was written";
      }
    }
  }
}

// Each call's scratch and states are reused by the next only after it finished: batches queued back to back
// into different outputs each get the pixels that batch gets when decoded alone (waited for before the
// next), byte for byte. (Against libjpeg + the CPU resize these 2-5x downscales of synthetic pictures
// differ by a mean of up to 3.4 levels, measured on an H100 on 2026-11-23: another resampler, not a mix-up.)
TEST_F(NvjpegDecoderGpu, BatchesQueuedBackToBackStayApart) {
  const ImageShape shape{32, 32, 3};
  const auto d = decoder(true, true);
  std::vector<std::vector<std::uint8_t>> jpegs(12);
  for (int i = 0; i < 12; ++i) jpegs[i] = testing::make_jpeg(64 + 16 * i, 96, 3, 500 + i);
  auto requests_of = [&](int b) {
    std::vector<NvjpegRequest> requests;
    for (int i = 0; i < 4; ++i) {
      const auto& jpeg = jpegs[b * 4 + i];
      requests.push_back({jpeg, {0, 0, 96, 64 + 16 * (b * 4 + i)}, static_cast<std::uint32_t>(i)});
    }
    return requests;
  };
  std::vector<std::vector<std::uint8_t>> alone;
  for (int b = 0; b < 3; ++b) {
    DeviceBuffer out = pool_->allocate(4 * shape.bytes(), stream_->get(), "batch output alone");
    d->decode(requests_of(b), {out.as<std::uint8_t>(), 4, shape, shape.bytes(), 96}, stream_->get());
    alone.push_back(testing::download(out.data(), 4 * shape.bytes(), stream_->get()));  // waits
  }
  std::vector<DeviceBuffer> outs;
  for (int b = 0; b < 3; ++b) {
    outs.push_back(pool_->allocate(4 * shape.bytes(), stream_->get(), "batch output"));
    d->decode(requests_of(b), {outs.back().as<std::uint8_t>(), 4, shape, shape.bytes(), 96}, stream_->get());
  }
  for (int b = 0; b < 3; ++b) {
    const auto out = testing::download(outs[b].data(), 4 * shape.bytes(), stream_->get());
    EXPECT_EQ(out, alone[b]) << "batch " << b << " queued behind others differs from batch " << b << " alone";
    for (int i = 0; i < 4; ++i) {
      Image cpu(shape);
      ops::resize(ops::decode_jpeg(jpegs[b * 4 + i]).view(), cpu.view());
      const Difference diff = difference(
          ConstImageView(out.data() + static_cast<std::size_t>(i) * shape.bytes(), shape), cpu.view());
      // Loose: a mixed-up batch would be tens of levels off.
      EXPECT_LE(diff.mean, 6.0) << "batch " << b << " image " << i << ": max " << diff.max;
    }
  }
}

TEST_F(NvjpegDecoderGpu, BadRequestsAreRefused) {
  const auto jpeg = testing::make_jpeg(40, 60);
  const auto d = decoder(true, true);
  DeviceBuffer out = pool_->allocate(std::size_t{2} * 16 * 16 * 3, stream_->get(), "out");
  const DeviceSlots slots{out.as<std::uint8_t>(), 2, {16, 16, 3}, std::size_t{16} * 16 * 3, 48};
  // A window outside the image as nvJPEG reads it is that image's fallback, not an error of the batch.
  const std::vector<NvjpegRequest> outside = {{jpeg, {30, 0, 31, 40}, 0}, {jpeg, {0, 0, 60, 40}, 1}};
  const std::vector<NvjpegOutcome> outcomes = d->decode(outside, slots, stream_->get());
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].path, NvjpegPath::fallback);
  EXPECT_EQ(outcomes[0].fallback, GpuDecodeFallback::size_mismatch) << to_string(outcomes[0].fallback);
  EXPECT_NE(outcomes[1].path, NvjpegPath::fallback) << to_string(outcomes[1].fallback);
  CONVEYOR_CUDA(cudaStreamSynchronize(stream_->get()), "BadRequestsAreRefused");
  const std::vector<NvjpegRequest> past_the_end = {{jpeg, {0, 0, 60, 40}, 2}};
  EXPECT_THROW(d->decode(past_the_end, slots, stream_->get()), InvalidArgument);
  const DeviceSlots gray{out.as<std::uint8_t>(), 2, {16, 16, 1}, 256, 16};
  const std::vector<NvjpegRequest> fine = {{jpeg, {0, 0, 60, 40}, 0}};
  EXPECT_THROW(d->decode(fine, gray, stream_->get()), InvalidArgument);
  NvjpegDecoderOptions keep;
  keep.color = ops::ColorMode::keep;
  EXPECT_THROW(NvjpegBatchDecoder(library_, *pool_, keep), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::cuda
