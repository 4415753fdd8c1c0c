// DeviceFeeder on a CPU placement: no copy; a DeviceBatch views the batch's own memory and keeps it out of
// its pool while held; a consumer that holds every slot gets an error, never a reused buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/normalize.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops/normalize.h"
#include "support/watchdog.h"
#include "test_batches.h"

namespace conveyor {
namespace {

using testing::HostMemory;
using testing::RecordingBatchPool;

constexpr ImageShape kShape{4, 5, 3};

Placement cpu() { return resolve(DeviceSpec::parse("cpu")); }

TEST(CpuFeeder, ADeviceBatchViewsTheBatchMemory) {
  RecordingBatchPool pool(kShape, 8, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), {.depth = 2});
  Batch batch = pool.make(1, 6);
  const std::uint8_t* pixels = batch.pixels().data();
  const std::int64_t* labels = batch.labels().data();
  const DeviceBatch staged = feeder.stage(std::move(batch));
  EXPECT_EQ(staged.pixels().data, pixels);
  EXPECT_EQ(staged.labels().data, labels);
  EXPECT_EQ(staged.size(), 6u);
  EXPECT_EQ(staged.sample_shape(), kShape);
  EXPECT_FALSE(staged.on_device());
  EXPECT_EQ(staged.device(), -1);
  EXPECT_EQ(staged.pixels().ndim, 4);
  EXPECT_EQ(staged.pixels().shape[0], 6);
  EXPECT_EQ(staged.pixels().shape[3], 3);
  EXPECT_FALSE(staged.images()) << "no normalized images were asked for";
  const auto expected = RecordingBatchPool::expected_pixels(1, 6, kShape);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), staged.pixels().as<const std::uint8_t>()));
  EXPECT_EQ(staged.labels().as<const std::int64_t>()[5], 1005);
}

TEST(CpuFeeder, AHeldBatchStaysOutOfItsPoolAndComesBackWhenReleased) {
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), {.depth = 3});
  DeviceBatch first = feeder.stage(pool.make(10));
  { DeviceBatch second = feeder.stage(pool.make(11)); }  // released at once
  EXPECT_TRUE(pool.returned(11));
  EXPECT_FALSE(pool.returned(10));
  DeviceBatch third = feeder.stage(pool.make(12));
  DeviceBatch fourth = feeder.stage(pool.make(13));  // reuses 11's slot
  // Still held after three more stages: the bytes are those of batch 10.
  const auto expected = RecordingBatchPool::expected_pixels(10, 2, kShape);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), first.pixels().as<const std::uint8_t>()));
  EXPECT_FALSE(pool.returned(10));
  first.release();
  EXPECT_TRUE(pool.returned(10));
  EXPECT_FALSE(first);
}

class CpuFeederDepth : public ::testing::TestWithParam<int> {};

TEST_P(CpuFeederDepth, HoldingEverySlotIsAnErrorNotAnOverwrite) {
  const int depth = GetParam();
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), {.depth = depth});
  std::vector<DeviceBatch> held;
  for (int id = 0; id < depth; ++id) held.push_back(feeder.stage(pool.make(id)));
  EXPECT_EQ(feeder.stats().held, static_cast<std::uint64_t>(depth));
  EXPECT_THROW(feeder.stage(pool.make(100)), Error);
  // Nothing was overwritten or given back by the refused call.
  for (int id = 0; id < depth; ++id) {
    const auto expected = RecordingBatchPool::expected_pixels(id, 2, kShape);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(),
                           held[static_cast<std::size_t>(id)].pixels().as<const std::uint8_t>()));
    EXPECT_FALSE(pool.returned(id));
  }
  held.erase(held.begin());  // releasing any one makes room again
  EXPECT_NO_THROW(held.push_back(feeder.stage(pool.make(101))));
}

INSTANTIATE_TEST_SUITE_P(Depths, CpuFeederDepth, ::testing::Values(1, 2, 3));

TEST(CpuFeeder, AViewOfABatchHoldsItAfterTheHandleIsGone) {
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), {.depth = 1});
  std::shared_ptr<const void> view;
  {
    DeviceBatch batch = feeder.stage(pool.make(7));
    view = batch.share_hold();
  }
  EXPECT_FALSE(pool.returned(7));
  EXPECT_THROW(feeder.stage(pool.make(8)), Error) << "the view still holds the only slot";
  view.reset();
  EXPECT_TRUE(pool.returned(7));
  EXPECT_NO_THROW(feeder.stage(pool.make(9)));
}

TEST(CpuFeeder, BatchesHeldPastTheFeederStayValid) {
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceBatch kept;
  {
    DeviceFeeder feeder(cpu(), {.depth = 2});
    kept = feeder.stage(pool.make(0));
    feeder.stage(pool.make(1));
  }
  EXPECT_TRUE(pool.returned(1));
  EXPECT_FALSE(pool.returned(0));
  const auto expected = RecordingBatchPool::expected_pixels(0, 2, kShape);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), kept.pixels().as<const std::uint8_t>()));
  kept.release();
  EXPECT_TRUE(pool.returned(0));
}

TEST(CpuFeeder, MakesNormalizedImagesWhenAsked) {
  RecordingBatchPool pool(kShape, 3, HostMemory::pageable);
  ops::NormalizeParams params;
  params.mean = {10.f, 20.f, 30.f, 0.f};
  params.std = {2.f, 4.f, 8.f, 1.f};
  params.layout = ops::TensorLayout::chw;
  DeviceFeeder feeder(cpu(), {.depth = 2, .normalize = params});
  const DeviceBatch batch = feeder.stage(pool.make(3));
  ASSERT_TRUE(batch.images());
  EXPECT_EQ(batch.images().dtype, DType::float32);
  EXPECT_EQ(batch.images().ndim, 4);
  EXPECT_EQ(batch.images().shape[1], 3);  // NCHW
  EXPECT_EQ(batch.images().shape[2], kShape.height);
  std::vector<float> expected(3 * kShape.bytes());
  ops::normalize_batch(batch.pixels().as<const std::uint8_t>(), 3, kShape, params, expected.data());
  const auto* images = batch.images().as<const float>();
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), images));
  // The op on a batch gives the same numbers.
  std::vector<float> again(expected.size());
  normalize(batch, params, again.data());
  EXPECT_EQ(again, expected);
}

TEST(CpuFeeder, CountsBatchesAndCopiesNothing) {
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), {.depth = 2});
  for (int id = 0; id < 5; ++id) feeder.stage(pool.make(id));
  const FeederStats stats = feeder.stats();
  EXPECT_EQ(stats.batches, 5u);
  EXPECT_EQ(stats.copies, 0u);
  EXPECT_EQ(stats.bytes, 0u);
  EXPECT_EQ(stats.allocations, 0u);
  EXPECT_EQ(stats.held, 0u);
  EXPECT_EQ(feeder.depth(), 2);
  EXPECT_FALSE(feeder.placement().gpu);
}

TEST(CpuFeeder, RejectsEmptyBatchesAndBadDepths) {
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), {.depth = 2});
  EXPECT_THROW(feeder.stage(Batch()), InvalidArgument);
  EXPECT_THROW(feeder.stage(pool.make(0, 0)), InvalidArgument);
  EXPECT_THROW(DeviceFeeder(cpu(), {.depth = 0}), InvalidArgument);
  EXPECT_THROW(DeviceFeeder(cpu(), {.depth = 9}), InvalidArgument);
}

// Numbered in-memory elements whose pixels are their number (a pipeline the feeder can iterate).
BatchedDataset numbered_batches(std::size_t count, std::size_t batch) {
  std::vector<std::vector<std::uint8_t>> buffers;
  for (std::size_t i = 0; i < count; ++i) buffers.push_back({static_cast<std::uint8_t>(i)});
  return Dataset::memory(std::move(buffers))
      .shuffle()
      .map("fill",
           [](Sample& sample) {
             const ImageView out = sample.output(kShape);
             for (int y = 0; y < out.height; ++y)
               std::fill(out.row(y), out.row(y) + out.width * out.channels, sample.encoded[0]);
             sample.publish();
           })
      .with_options({.threads = 2, .seed = 3})
      .batch(batch);
}

TEST(CpuFeeder, FeedKeepsRoomInThePipelineForTheBatchesTheFeederHolds) {
  DeviceFeeder feeder(cpu(), {.depth = 3});
  const BatchedDataset batches = numbered_batches(200, 2);
  ASSERT_EQ(batches.options().held_batches, 1u);
  EXPECT_EQ(feeder.fed(batches).options().held_batches, 3u);
  EXPECT_EQ(feeder.fed(batches).options().threads, 2);  // the other options stay
  EXPECT_EQ(feeder.fed(batches.with_options({.held_batches = 5})).options().held_batches, 5u);
  // A consumer that keeps all ring slots but the one being staged while asking for the next is never told
  // it holds too many.
  const testing::Watchdog watchdog(std::chrono::seconds(60), "feeding while holding depth - 1 batches");
  DeviceBatchIterator it = feeder.feed(batches);
  std::vector<DeviceBatch> held;
  std::size_t seen = 0;
  while (std::optional<DeviceBatch> batch = it.next()) {
    if (held.size() == 2) held.erase(held.begin());
    held.push_back(std::move(*batch));
    ++seen;
  }
  EXPECT_EQ(seen, 100u);
}

TEST(CpuFeeder, AFedIteratorResumesFromItsState) {
  DeviceFeeder feeder(cpu(), {.depth = 2});
  const BatchedDataset batches = numbered_batches(40, 4);
  std::vector<std::uint8_t> all, resumed;
  DeviceBatchIterator it = feeder.feed(batches);
  for (int i = 0; i < 4; ++i) all.push_back(static_cast<const std::uint8_t*>(it.next()->pixels().data)[0]);
  const IteratorState state = it.state();
  while (std::optional<DeviceBatch> batch = it.next())
    all.push_back(static_cast<const std::uint8_t*>(batch->pixels().data)[0]);
  DeviceBatchIterator rest = feeder.feed(batches, state);
  while (std::optional<DeviceBatch> batch = rest.next())
    resumed.push_back(static_cast<const std::uint8_t*>(batch->pixels().data)[0]);
  EXPECT_EQ(resumed, std::vector<std::uint8_t>(all.begin() + 4, all.end()));
}

#ifndef CONVEYOR_HAVE_CUDA
TEST(CpuFeeder, AGpuPlacementInABuildWithoutCudaIsAnError) {
  EXPECT_THROW(DeviceFeeder(Placement{true, 0, "gpu:0", "test"}, {.depth = 2}), DeviceError);
}
#endif

}  // namespace
}  // namespace conveyor
