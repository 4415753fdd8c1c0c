// DeviceFeeder on a CPU placement: no copy, the batch's own memory, kept alive `depth` stage() calls.
#include <gtest/gtest.h>

#include <vector>

#include "conveyor/device_feeder.h"
#include "conveyor/error.h"
#include "test_batches.h"

namespace conveyor {
namespace {

using testing::HostMemory;
using testing::RecordingBatchPool;

constexpr ImageShape kShape{4, 5, 3};

Placement cpu() { return resolve(DeviceSpec::parse("cpu")); }

TEST(CpuFeeder, StagedBatchPointsAtTheBatchMemory) {
  RecordingBatchPool pool(kShape, 8, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), 2);
  Batch batch = pool.make(1, 6);
  const std::uint8_t* pixels = batch.pixels().data();
  const std::int64_t* labels = batch.labels().data();
  const StagedBatch staged = feeder.stage(std::move(batch));
  EXPECT_EQ(staged.pixels, pixels);
  EXPECT_EQ(staged.labels, labels);
  EXPECT_EQ(staged.size, 6u);
  EXPECT_EQ(staged.shape, kShape);
  EXPECT_FALSE(staged.on_device);
  EXPECT_EQ(staged.device, -1);
  EXPECT_EQ(staged.ready, nullptr);
  EXPECT_EQ(staged.consumed, nullptr);
  const auto expected = RecordingBatchPool::expected_pixels(1, 6, kShape);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), staged.pixels));
  EXPECT_EQ(staged.labels[5], 1005);
}

class CpuFeederDepth : public ::testing::TestWithParam<int> {};

TEST_P(CpuFeederDepth, KeepsEachBatchAliveExactlyDepthStagesDeep) {
  const int depth = GetParam();
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), depth);
  for (int id = 0; id < depth; ++id) feeder.stage(pool.make(id));
  EXPECT_TRUE(pool.returned_ids().empty()) << "a batch came back before its ring slot was reused";
  for (int id = depth; id < depth + 4; ++id) {
    feeder.stage(pool.make(id));
    // Staging batch `id` gives back exactly batch `id - depth`, and nothing newer.
    std::vector<int> expected;
    for (int back = 0; back <= id - depth; ++back) expected.push_back(back);
    EXPECT_EQ(pool.returned_ids(), expected) << "after staging batch " << id;
  }
}

INSTANTIATE_TEST_SUITE_P(Depths, CpuFeederDepth, ::testing::Values(1, 2, 3));

TEST(CpuFeeder, StagedMemoryStaysValidUntilItsSlotIsReused) {
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), 3);
  const StagedBatch first = feeder.stage(pool.make(10));
  feeder.stage(pool.make(11));
  feeder.stage(pool.make(12));
  // Two more stages and still in the ring: the bytes are those of batch 10.
  const auto expected = RecordingBatchPool::expected_pixels(10, 2, kShape);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), first.pixels));
  EXPECT_FALSE(pool.returned(10));
}

TEST(CpuFeeder, DestroyingTheFeederGivesEveryBatchBack) {
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  {
    DeviceFeeder feeder(cpu(), 3);
    feeder.stage(pool.make(0));
    feeder.stage(pool.make(1));
    feeder.synchronize();
    EXPECT_TRUE(pool.returned_ids().empty());
  }
  EXPECT_TRUE(pool.returned(0));
  EXPECT_TRUE(pool.returned(1));
}

TEST(CpuFeeder, CountsBatchesAndCopiesNothing) {
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), 2);
  for (int id = 0; id < 5; ++id) feeder.stage(pool.make(id));
  const FeederStats stats = feeder.stats();
  EXPECT_EQ(stats.batches, 5u);
  EXPECT_EQ(stats.copies, 0u);
  EXPECT_EQ(stats.bytes, 0u);
  EXPECT_EQ(stats.allocations, 0u);
  EXPECT_EQ(feeder.depth(), 2);
  EXPECT_FALSE(feeder.placement().gpu);
}

TEST(CpuFeeder, RejectsEmptyBatchesAndBadDepths) {
  RecordingBatchPool pool(kShape, 2, HostMemory::pageable);
  DeviceFeeder feeder(cpu(), 2);
  EXPECT_THROW(feeder.stage(Batch()), InvalidArgument);
  EXPECT_THROW(feeder.stage(pool.make(0, 0)), InvalidArgument);
  EXPECT_THROW(DeviceFeeder(cpu(), 0), InvalidArgument);
  EXPECT_THROW(DeviceFeeder(cpu(), 9), InvalidArgument);
}

#ifndef CONVEYOR_HAVE_CUDA
TEST(CpuFeeder, AGpuPlacementInABuildWithoutCudaIsAnError) {
  EXPECT_THROW(DeviceFeeder(Placement{true, 0, "gpu:0", "test"}, 2), DeviceError);
}
#endif

}  // namespace
}  // namespace conveyor
