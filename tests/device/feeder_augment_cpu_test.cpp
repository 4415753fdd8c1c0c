// The feeder's per-pixel ops (FeederOptions::augment) and hybrid decoding on a CPU placement: the same images
// as the ops run as CPU maps (a program gives the same images() wherever it runs), the consumer keeps a core,
// nothing is deferred. Runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops/distort.h"
#include "conveyor/ops/flip.h"
#include "conveyor/ops/normalize.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "support/test_images.h"
#include "support/watchdog.h"
#include "test_batches.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using testing::HostMemory;
using testing::RecordingBatchPool;

constexpr ImageShape kShape{16, 20, 3};
constexpr ops::DistortOptions kJitter{.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1};

Placement cpu() { return resolve(DeviceSpec::parse("cpu")); }

ops::NormalizeParams params(ops::ElementType type = ops::ElementType::float32,
                            ops::TensorLayout layout = ops::TensorLayout::chw) {
  ops::NormalizeParams p;
  p.mean = {123.675f, 116.28f, 103.53f, 0.f};
  p.std = {58.395f, 57.12f, 57.375f, 1.f};
  p.type = type;
  p.layout = layout;
  return p;
}

// Flip and distort with the draws of a chain where the flip is the map at `flip_position` and the distort
// the next one (cpu_chain_images: 0 and 1).
FeederOptions with_augment(int depth = 2, std::uint64_t flip_position = 0) {
  FeederOptions options;
  options.depth = depth;
  options.normalize = params();
  options.augment.flip_horizontal = 0.5;
  options.augment.flip_stream = op_stream(ops::stream::flip_horizontal, flip_position);
  options.augment.distort = kJitter;
  options.augment.distort_stream = op_stream(ops::stream::distort, flip_position + 1);
  return options;
}

std::vector<std::byte> bytes_of(const TensorView& view) {
  const auto* data = static_cast<const std::byte*>(view.data);
  return {data, data + view.bytes()};
}

// What the CPU ops make of a batch: flip_horizontal(0.5) then distort(kJitter), each sample from its seed,
// then normalize.
std::vector<std::byte> cpu_chain_images(const Batch& batch, const ops::NormalizeParams& p) {
  const ImageShape shape = batch.sample_shape();
  std::vector<std::uint8_t> pixels(batch.pixels().begin(), batch.pixels().end());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    Sample sample;
    sample.seed = batch.samples()[i].seed;
    std::vector<std::uint8_t> image(pixels.begin() + static_cast<std::ptrdiff_t>(i * shape.bytes()),
                                    pixels.begin() + static_cast<std::ptrdiff_t>((i + 1) * shape.bytes()));
    sample.bind_slot(ImageView(image.data(), shape));
    sample.output(shape);
    sample.publish();        // the pixels are the sample's current image, in its slot
    sample.op_position = 0;  // as the first two maps of a chain
    ops::flip_horizontal(0.5).apply(sample);
    sample.op_position = 1;
    ops::distort(kJitter).apply(sample);
    std::copy(image.begin(), image.end(), pixels.begin() + static_cast<std::ptrdiff_t>(i * shape.bytes()));
  }
  std::vector<std::byte> out(batch.size() * shape.bytes() * ops::element_size(p.type));
  ops::normalize_batch(pixels.data(), batch.size(), shape, p, out.data());
  return out;
}

TEST(FeederAugmentCpu, AugmentWithoutNormalizeIsRefused) {
  FeederOptions options;
  options.augment.flip_horizontal = 0.5;
  EXPECT_THROW(DeviceFeeder(cpu(), options), InvalidArgument);
  options.normalize = params();
  options.augment.flip_horizontal = 1.5;
  EXPECT_THROW(DeviceFeeder(cpu(), options), InvalidArgument);
  options.augment.flip_horizontal = 0.5;
  options.augment.distort = ops::DistortOptions{.hue = 0.7};
  EXPECT_THROW(DeviceFeeder(cpu(), options), InvalidArgument);
  options.augment.distort.reset();
  options.decode.enabled = true;
  options.decode.share = 2;
  EXPECT_THROW(DeviceFeeder(cpu(), options), InvalidArgument);
  options.decode.share = 0.5;
  options.depth = 1;
  EXPECT_THROW(DeviceFeeder(cpu(), options), InvalidArgument);
}

TEST(FeederAugmentCpu, ABatchStagedByHandGetsTheCpuOpsImagesAndKeepsItsPixels) {
  RecordingBatchPool pool(kShape, 12, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), with_augment());
  for (int id = 0; id < 4; ++id) {
    Batch batch = pool.make(id, 12);
    const std::vector<std::byte> expected = cpu_chain_images(batch, params());
    const DeviceBatch staged = feeder.stage(std::move(batch));
    EXPECT_EQ(bytes_of(staged.images()), expected) << "batch " << id;
    ASSERT_TRUE(staged.images_normalization().has_value());
    EXPECT_EQ(staged.images_normalization()->type, ops::ElementType::float32);
    EXPECT_TRUE(staged.images_augmented());
    const auto pixels = RecordingBatchPool::expected_pixels(id, 12, kShape);
    EXPECT_TRUE(std::equal(pixels.begin(), pixels.end(), staged.pixels().as<const std::uint8_t>()))
        << "pixels() are the batch as it came";
  }
}

std::vector<std::vector<std::uint8_t>> jpegs(int count) {
  std::vector<std::vector<std::uint8_t>> out;
  for (int i = 0; i < count; ++i)
    out.push_back(testing::make_jpeg(60 + 3 * i, 80 - 2 * i, 3, 100 + static_cast<std::uint64_t>(i)));
  return out;
}

TEST(FeederAugmentCpu, FeedOnTheCpuGivesTheImagesOfTheOpsRunAsMaps) {
  const testing::Watchdog watchdog(120s, "FeedOnTheCpuGivesTheImagesOfTheOpsRunAsMaps");
  const Dataset files = Dataset::memory(jpegs(40)).with_options({.threads = 2, .seed = 11});
  const BatchedDataset device_list = files.map(ops::decode_random_resized_crop(24)).batch(8, {24, 24, 3});
  const BatchedDataset as_maps = files.map(ops::decode_random_resized_crop(24))
                                     .map(ops::flip_horizontal(0.5))
                                     .map(ops::distort(kJitter))
                                     .batch(8, {24, 24, 3});
  DeviceFeeder augmenting(cpu(), with_augment(2, /*flip_position=*/1));  // after the decode, as in as_maps
  FeederOptions plain;
  plain.normalize = params();
  DeviceFeeder normalizing(cpu(), plain);
  std::vector<std::vector<std::byte>> a, b;
  for (DeviceBatch& batch : augmenting.feed(device_list)) {
    EXPECT_TRUE(batch.images_augmented());
    a.push_back(bytes_of(batch.images()));
  }
  for (DeviceBatch& batch : normalizing.feed(as_maps)) b.push_back(bytes_of(batch.images()));
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a, b);
}

TEST(FeederAugmentCpu, FeedOnTheCpuLeavesTheConsumerACore) {
  const BatchedDataset data = Dataset::memory(jpegs(8)).map(ops::decode_random_resized_crop(16)).batch(4);
  DeviceFeeder feeder(cpu());
  auto all_cores = feeder.feed(data);
  while (all_cores.next()) {
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(all_cores.stats().threads, std::max(1, cores - 1));
  auto three = feeder.feed(data.with_options({.threads = 3}));
  while (three.next()) {
  }
  EXPECT_EQ(three.stats().threads, 3) << "threads the user set are kept";
}

TEST(FeederAugmentCpu, DecodingOnACpuPlacementDefersNothing) {
  const BatchedDataset data = Dataset::memory(jpegs(12)).map(ops::decode_random_resized_crop(16)).batch(4);
  FeederOptions options;
  options.decode.enabled = true;
  DeviceFeeder feeder(cpu(), options);
  auto it = feeder.feed(data);
  std::size_t images = 0;
  while (std::optional<DeviceBatch> batch = it.next()) images += batch->size();
  EXPECT_EQ(images, 12u);
  EXPECT_EQ(it.stats().deferred, 0u);
  EXPECT_NE(feeder.stats().decoder.find("CPU"), std::string::npos) << feeder.stats().decoder;
}

std::vector<std::string> names(const std::vector<SampleOp>& maps) {
  std::vector<std::string> out;
  for (const SampleOp& op : maps) out.push_back(op.name);
  return out;
}

Placement a_gpu() {
  Placement placement;  // only its description: place_pixel_ops touches no device
  placement.gpu = true;
  placement.device = 0;
  return placement;
}

TEST(PlacePixelOps, OnAGpuTheTrailingFlipAndDistortMoveToTheFeeder) {
  FeederOptions options;
  options.normalize = params();
  const std::vector<SampleOp> kept = place_pixel_ops(
      {ops::decode_random_resized_crop(32), ops::flip_horizontal(0.25), ops::distort(kJitter)}, a_gpu(),
      options);
  EXPECT_EQ(names(kept), std::vector<std::string>{"decode_random_resized_crop"});
  ASSERT_TRUE(options.augment.flip_horizontal.has_value());
  EXPECT_EQ(*options.augment.flip_horizontal, 0.25);
  EXPECT_EQ(options.augment.flip_stream, op_stream(ops::stream::flip_horizontal, 1));  // at its place
  ASSERT_TRUE(options.augment.distort.has_value());
  EXPECT_EQ(options.augment.distort->brightness, kJitter.brightness);
  EXPECT_EQ(options.augment.distort->hue, kJitter.hue);
  EXPECT_EQ(options.augment.distort_stream, op_stream(ops::stream::distort, 2));
}

TEST(PlacePixelOps, OnTheCpuOrWithoutNormalizeNothingMoves) {
  const std::vector<SampleOp> chain = {ops::decode_random_resized_crop(32), ops::flip_horizontal(0.5)};
  FeederOptions with_normalize;
  with_normalize.normalize = params();
  EXPECT_EQ(names(place_pixel_ops(chain, cpu(), with_normalize)), names(chain));
  EXPECT_TRUE(with_normalize.augment.empty());
  FeederOptions without;
  EXPECT_EQ(names(place_pixel_ops(chain, a_gpu(), without)), names(chain));
  EXPECT_TRUE(without.augment.empty());
}

TEST(PlacePixelOps, OnlyTheTrailingOpsMoveAndOneOfEachKind) {
  FeederOptions options;
  options.normalize = params();
  const SampleOp user{"user", [](Sample&) {}};
  const std::vector<SampleOp> kept =
      place_pixel_ops({ops::decode_random_resized_crop(32), ops::distort(kJitter), user,
                       ops::flip_horizontal(0.5), ops::flip_horizontal(0.5)},
                      a_gpu(), options);
  EXPECT_EQ(names(kept),
            (std::vector<std::string>{"decode_random_resized_crop", "distort", "user", "flip_horizontal"}));
  EXPECT_TRUE(options.augment.flip_horizontal.has_value());
  EXPECT_FALSE(options.augment.distort.has_value()) << "distort was not trailing";
}

// Python's to_device takes a chain that is already built: the dataset overload must move the same ops with
// the positions they had, filters counted, so that the feeder's images are those of the whole chain.
TEST(PlacePixelOps, ABuiltChainLosesItsTrailingOpsAndTheFeederMakesTheSameImages) {
  const testing::Watchdog watchdog(120s, "ABuiltChainLosesItsTrailingOpsAndTheFeederMakesTheSameImages");
  const BatchedDataset whole = Dataset::memory(jpegs(40))
                                   .filter("keep all", [](const Sample&) { return true; })
                                   .map(ops::decode_random_resized_crop(24))
                                   .map(ops::flip_horizontal(0.5))
                                   .with_options({.threads = 2, .seed = 11})
                                   .map(ops::distort(kJitter))
                                   .prefetch(5)
                                   .batch(8, {24, 24, 3})
                                   .prefetch(3);
  FeederOptions options;
  options.normalize = params();
  const BatchedDataset placed = place_pixel_ops(whole, a_gpu(), options);
  ASSERT_TRUE(options.augment.flip_horizontal.has_value());
  ASSERT_TRUE(options.augment.distort.has_value());
  EXPECT_EQ(options.augment.flip_stream, op_stream(ops::stream::flip_horizontal, 2));  // after the filter
  EXPECT_EQ(options.augment.distort_stream, op_stream(ops::stream::distort, 3));
  ASSERT_TRUE(placed.samples().last_map().has_value());
  EXPECT_EQ(placed.samples().last_map()->op.name, "decode_random_resized_crop") << "now last: it may defer";
  EXPECT_EQ(placed.batch_size(), 8u);
  EXPECT_EQ(placed.prefetch_depth(), 3u);
  EXPECT_EQ(placed.options().threads, 2);
  EXPECT_EQ(placed.options().seed, 11u);

  // The placed chain with the moved ops run by a (CPU) feeder against the whole chain run as maps.
  DeviceFeeder augmenting(cpu(), options);
  FeederOptions plain;
  plain.normalize = params();
  DeviceFeeder normalizing(cpu(), plain);
  std::vector<std::vector<std::byte>> a, b;
  for (DeviceBatch& batch : augmenting.feed(placed)) a.push_back(bytes_of(batch.images()));
  for (DeviceBatch& batch : normalizing.feed(whole)) b.push_back(bytes_of(batch.images()));
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a, b);
}

TEST(PlacePixelOps, ABuiltChainStaysOnTheCpuOrWhenItsLastCallIsNotAPixelOp) {
  const Dataset files = Dataset::memory(jpegs(4));
  const BatchedDataset chain =
      files.map(ops::decode_random_resized_crop(24)).map(ops::flip_horizontal(0.5)).batch(2);
  FeederOptions options;
  options.normalize = params();
  EXPECT_EQ(place_pixel_ops(chain, cpu(), options).samples().last_map()->op.name, "flip_horizontal");
  EXPECT_TRUE(options.augment.empty());
  const BatchedDataset filtered = files.map(ops::decode_random_resized_crop(24))
                                      .map(ops::flip_horizontal(0.5))
                                      .filter([](const Sample&) { return true; })
                                      .batch(2);
  place_pixel_ops(filtered, a_gpu(), options);
  EXPECT_TRUE(options.augment.empty()) << "a filter after the flip keeps it in the pipeline";
}

}  // namespace
}  // namespace conveyor
