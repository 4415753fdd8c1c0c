// Ops with GPU twins, found by name in a registry given through FeederOptions (conveyor/cuda/gpu_twins.h):
// placement moves a user's pixel op whose twin the registry knows like the library's flip and distort, keeps
// the chain's order (a fused op before a pixel twin stays), leaves an op whose name the registry does not
// know, keeps a geometric twin for samples with fields, and a feeder on the CPU runs the moved op itself,
// drawing as it would have in the chain. The example's random_invert (examples/gpu_twin) is the user's op;
// its twin's GPU run is feeder_twins_gpu_test.cpp. Runs everywhere: placement only edits options.
#include "conveyor/cuda/gpu_twins.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "examples/gpu_twin/random_invert.h"
#include "support/test_images.h"
#include "test_batches.h"

namespace conveyor {
namespace {

using gpu_twin_example::random_invert;
using testing::HostMemory;
using testing::RecordingBatchPool;

const Placement kGpu{
    .gpu = true, .device = 0, .description = "gpu:0 (for the placement rule only)", .reason = ""};

// A twin this test can place: its device side is never made here (make is called by a GPU feeder only).
GpuTwin test_twin(bool geometric = false) {
  GpuTwin twin = pixel_twin([](const SampleOp&, std::uint64_t, int) -> std::unique_ptr<DevicePixelOp> {
    throw std::logic_error("not made on the CPU");
  });
  twin.geometric = geometric;
  return twin;
}

FeederOptions with_twins(GpuTwins twins, bool normalize = true) {
  FeederOptions options;
  if (normalize) options.normalize = ops::NormalizeParams{};
  options.gpu_twins = std::make_shared<GpuTwins>(std::move(twins));
  return options;
}

std::vector<SampleOp> chain(std::vector<SampleOp> tail) {
  tail.insert(tail.begin(), ops::decode_random_resized_crop(24));
  return tail;
}

TEST(GpuTwins, AUsersPixelOpWithATwinMovesLikeFlipAndDistort) {
  FeederOptions options = with_twins(GpuTwins::library().add("random_invert", test_twin()));
  const std::vector<SampleOp> left =
      place_pixel_ops(chain({random_invert(0.5), ops::flip_horizontal(0.5)}), kGpu, options);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, "decode_random_resized_crop");
  ASSERT_EQ(options.pixel_ops.size(), 1u);
  EXPECT_EQ(options.pixel_ops[0].op.name, "random_invert");
  EXPECT_EQ(options.pixel_ops[0].position, 1u);  // it keeps the position it had: its draws are the op's
  EXPECT_TRUE(options.augment.flip_horizontal.has_value());
}

TEST(GpuTwins, WithoutItsTwinInTheRegistryTheOpStays) {
  FeederOptions library = with_twins(GpuTwins::library());
  const std::vector<SampleOp> left = place_pixel_ops(chain({random_invert(0.5)}), kGpu, library);
  EXPECT_EQ(left.size(), 2u);
  EXPECT_TRUE(library.pixel_ops.empty());
  // And the default registry is the library's: flip and distort move as before.
  FeederOptions defaults{.normalize = ops::NormalizeParams{}};
  EXPECT_EQ(
      place_pixel_ops(chain({ops::flip_horizontal(0.5), ops::distort({.brightness = 0.2})}), kGpu, defaults)
          .size(),
      1u);
  EXPECT_TRUE(defaults.augment.flip_horizontal && defaults.augment.distort);
}

TEST(GpuTwins, AFusedOpBeforeAPixelTwinStaysSoTheChainsOrderHolds) {
  // flip, then invert: the flip would run after the invert on the device (in the fused kernel), so it stays.
  FeederOptions options = with_twins(GpuTwins::library().add("random_invert", test_twin()));
  const std::vector<SampleOp> left = place_pixel_ops(
      chain({ops::flip_horizontal(0.5), random_invert(0.5), ops::distort({.contrast = 0.3})}), kGpu, options);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[1].name, "flip_horizontal");
  EXPECT_FALSE(options.augment.flip_horizontal.has_value());
  EXPECT_TRUE(options.augment.distort.has_value());
  ASSERT_EQ(options.pixel_ops.size(), 1u);
}

TEST(GpuTwins, PixelTwinsKeepTheChainsOrderAndNeedNoNormalize) {
  GpuTwins twins = GpuTwins::library().add("random_invert", test_twin());
  FeederOptions options = with_twins(twins, /*normalize=*/false);
  const std::vector<SampleOp> left =
      place_pixel_ops(chain({random_invert(0.3), random_invert(0.6)}), kGpu, options);
  EXPECT_EQ(left.size(), 1u);
  ASSERT_EQ(options.pixel_ops.size(), 2u);
  EXPECT_EQ(options.pixel_ops[0].position, 1u);
  EXPECT_EQ(options.pixel_ops[1].position, 2u);
  // Without normalize a flip has nothing to fuse with: it stays, and so does what comes before it.
  FeederOptions plain = with_twins(twins, false);
  EXPECT_EQ(place_pixel_ops(chain({random_invert(0.3), ops::flip_horizontal(0.5)}), kGpu, plain).size(), 3u);
}

TEST(GpuTwins, AGeometricTwinStaysForSamplesWithFieldsThatFollowTheImage) {
  FeederOptions options = with_twins(GpuTwins::library().add("random_invert", test_twin(/*geometric=*/true)));
  EXPECT_EQ(place_pixel_ops(chain({random_invert(0.5)}), kGpu, options, FieldSet{.boxes = true}).size(), 2u);
  EXPECT_EQ(place_pixel_ops(chain({random_invert(0.5)}), kGpu, options, FieldSet{.tags = true}).size(), 1u);
}

TEST(GpuTwins, OnTheCpuNothingMovesAndTheRegistrySaysWhoDefers) {
  FeederOptions options = with_twins(GpuTwins::library().add("random_invert", test_twin()));
  EXPECT_EQ(place_pixel_ops(chain({random_invert(0.5)}), resolve(DeviceSpec::parse("cpu")), options).size(),
            2u);
  const BatchedDataset decoding =
      Dataset::memory({testing::make_jpeg(30, 40, 3, 1)}).map(ops::decode_random_resized_crop(16)).batch(1);
  EXPECT_TRUE(may_defer_to_gpu(decoding, options));
  EXPECT_FALSE(may_defer_to_gpu(
      Dataset::memory({testing::make_jpeg(30, 40, 3, 1)}).map(ops::decode_center_crop(16)).batch(1),
      options));
  FeederOptions no_decode_twin = with_twins(GpuTwins{});
  EXPECT_FALSE(may_defer_to_gpu(decoding, no_decode_twin));
}

std::vector<std::uint8_t> pixels_of(const DeviceBatch& batch) {
  const auto* p = batch.pixels().as<const std::uint8_t>();
  return {p, p + batch.pixels().bytes()};
}

TEST(GpuTwins, ACpuFeederRunsPlacedPixelOpsAsTheChainWouldHave) {
  std::vector<std::vector<std::uint8_t>> files;
  for (int i = 0; i < 12; ++i)
    files.push_back(testing::make_jpeg(30 + i, 40, 3, 50 + static_cast<std::uint64_t>(i)));
  const Dataset memory = Dataset::memory(files).with_options({.threads = 2, .seed = 3});
  // The op at position 1 of the chain, moved by hand (as place_pixel_ops does on a GPU).
  FeederOptions moved;
  moved.pixel_ops.push_back({random_invert(0.5), 1, nullptr});
  DeviceFeeder feeder(resolve(DeviceSpec::parse("cpu")), moved);
  DeviceFeeder plain(resolve(DeviceSpec::parse("cpu")), {});
  std::vector<std::vector<std::uint8_t>> a, b;
  for (DeviceBatch& batch : feeder.feed(memory.map(ops::decode_center_crop(16)).batch(4)))
    a.push_back(pixels_of(batch));
  for (DeviceBatch& batch :
       plain.feed(memory.map(ops::decode_center_crop(16)).map(random_invert(0.5)).batch(4)))
    b.push_back(pixels_of(batch));
  EXPECT_EQ(a, b);
  // A batch staged by hand gets the op in place on its pixels too.
  RecordingBatchPool pool({8, 8, 3}, 6, HostMemory::pageable);
  DeviceFeeder by_hand(resolve(DeviceSpec::parse("cpu")), moved);
  Batch batch = pool.make(1, 6);
  std::vector<std::uint8_t> expected = RecordingBatchPool::expected_pixels(1, 6, {8, 8, 3});
  for (std::size_t i = 0; i < 6; ++i)
    if (gpu_twin_example::draw_invert(0.5, batch.samples()[i].seed,
                                      op_stream(gpu_twin_example::kInvertStream, 1)))
      for (std::size_t k = 0; k < 8 * 8 * 3; ++k)
        expected[i * 192 + k] = static_cast<std::uint8_t>(255 - expected[i * 192 + k]);
  const DeviceBatch staged = by_hand.stage(std::move(batch));
  EXPECT_EQ(pixels_of(staged), expected);
}

}  // namespace
}  // namespace conveyor
