// The hybrid split one run settled at, kept for the next (src/device/decode/split_memory.h), and the split's
// start from it (DecodeSplit::start_from, settled). Runs without a GPU: the memory is a JSON file.
#include "src/device/decode/split_memory.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "src/core/user_cache_folder.h"
#include "src/device/decode/decode_split.h"
#include "support/temp_dir.h"

namespace conveyor::detail {
namespace {

using namespace std::chrono_literals;

constexpr const char* kH100 = "NVIDIA H100 80GB HBM3 132sm driver13000 nvjpeg13.0.1";
constexpr const char* kKey = "threads 16 batch 256 shape 224x224x3 data 5000:0123 key resnet18 bf16";
constexpr const char* kOtherKey =
    "threads 16 batch 256 shape 224x224x3 data 5000:0123 key resnet18 bf16 2 ranks";

SplitRecord settled_at(double share) { return {share, 1e-3, 3e-5, 6e-5, 40}; }

TEST(SplitMemory, ARecordKeptIsRecalledByTheNextRunWithTheSameKey) {
  const testing::TempDir dir;
  const SplitMemory memory(dir.path(), kH100);
  EXPECT_FALSE(memory.recall(kKey)) << "a first run has nothing to start from";
  ASSERT_EQ(memory.keep(kKey, settled_at(0.62)), "");
  const std::optional<SplitRecord> again = SplitMemory(dir.path(), kH100).recall(kKey);
  ASSERT_TRUE(again);
  EXPECT_DOUBLE_EQ(again->share, 0.62);
  EXPECT_DOUBLE_EQ(again->cpu_decode_s, 1e-3);
  EXPECT_DOUBLE_EQ(again->cpu_defer_s, 3e-5);
  EXPECT_DOUBLE_EQ(again->gpu_decode_s, 6e-5);
  EXPECT_EQ(again->batches, 40u);
}

TEST(SplitMemory, AnotherKeyOrAnotherGpuFindsNothing) {
  const testing::TempDir dir;
  ASSERT_EQ(SplitMemory(dir.path(), kH100).keep(kKey, settled_at(0.62)), "");
  EXPECT_FALSE(SplitMemory(dir.path(), kH100).recall(kOtherKey));
  EXPECT_FALSE(SplitMemory(dir.path(), "NVIDIA H200 132sm driver13000 nvjpeg13.0.1").recall(kKey));
}

TEST(SplitMemory, KeepingMergesWithWhatAnotherProcessKept) {
  const testing::TempDir dir;
  ASSERT_EQ(SplitMemory(dir.path(), kH100).keep("rank 0", settled_at(0.40)), "");
  ASSERT_EQ(SplitMemory(dir.path(), kH100).keep("rank 1", settled_at(0.45)), "");
  const SplitMemory memory(dir.path(), kH100);
  ASSERT_TRUE(memory.recall("rank 0"));
  ASSERT_TRUE(memory.recall("rank 1"));
  EXPECT_DOUBLE_EQ(memory.recall("rank 0")->share, 0.40);
  EXPECT_DOUBLE_EQ(memory.recall("rank 1")->share, 0.45);
}

TEST(SplitMemory, AnUnreadableFileIsNoMemoryAndIsReplacedByTheNextKeep) {
  const testing::TempDir dir;
  const SplitMemory memory(dir.path(), kH100);
  std::filesystem::create_directories(memory.file().parent_path());
  std::ofstream(memory.file()) << "{ not json";
  EXPECT_FALSE(memory.recall(kKey));
  ASSERT_EQ(memory.keep(kKey, settled_at(0.5)), "");
  EXPECT_TRUE(memory.recall(kKey));
}

TEST(SplitMemory, ARecordOutOfRangeIsNeitherKeptNorRecalled) {
  const testing::TempDir dir;
  const SplitMemory memory(dir.path(), kH100);
  EXPECT_NE(memory.keep(kKey, settled_at(1.5)), "");
  SplitRecord negative = settled_at(0.5);
  negative.gpu_decode_s = -1;
  EXPECT_NE(memory.keep(kKey, negative), "");
  EXPECT_FALSE(memory.recall(kKey));
}

TEST(SplitMemory, AFolderThatCannotBeMadeIsReportedNotThrown) {
  const testing::TempDir dir;
  std::ofstream(dir / "a-file") << "in the way";
  const SplitMemory memory(dir / "a-file" / "below", kH100);
  EXPECT_NE(memory.keep(kKey, settled_at(0.5)), "");
}

TEST(SplitMemory, ItLivesWhereTheAlgorithmCacheLives) {
  EXPECT_EQ(user_cache_folder("", "/opt/cache", "/xdg", "/fake-home"), std::filesystem::path("/opt/cache"));
  EXPECT_FALSE(user_cache_folder("", "off", "/xdg", "/fake-home"));
  EXPECT_EQ(user_cache_folder("", nullptr, "/xdg", "/fake-home"), std::filesystem::path("/xdg/conveyor"));
  EXPECT_EQ(user_cache_folder("", nullptr, "relative", "/fake-home"),
            std::filesystem::path("/fake-home/.cache/conveyor"));
  EXPECT_EQ(user_cache_folder("/given", "/opt/cache", nullptr, nullptr), std::filesystem::path("/given"));
}

TEST(DecodeSplit, AnAdaptingSplitStartsAtTheRememberedShareAndAFixedOneKeepsItsOwn) {
  DecodeSplit adapting(0.5, /*adaptive=*/true, 16);
  adapting.start_from(settled_at(0.62));
  EXPECT_NEAR(adapting.share(), 0.62, 1e-4);
  DecodeSplit fixed(0.5, /*adaptive=*/false, 16);
  fixed.start_from(settled_at(0.62));
  EXPECT_NEAR(fixed.share(), 0.5, 1e-4) << "a deterministic pipeline's share must not depend on a file";
}

TEST(DecodeSplit, WhatItSettlesAtFollowsTheShareOverTheBatches) {
  DecodeSplit split(0.5, /*adaptive=*/true, 16);
  // The CPU decodes an image in 1 ms and defers one in 50 us; the GPU takes 30 us: balanced near 0.69.
  const double balanced = balanced_share(1e-3, 5e-5, 3e-5, 16, 0.5);
  for (int batch = 0; batch < 60; ++batch) {
    const int deferred = static_cast<int>(256 * split.share());
    for (int i = 0; i < 256 - deferred; ++i) split.spent(false, 1ms);
    for (int i = 0; i < deferred; ++i) split.spent(true, 50us);
    split.measure(3e-5 * deferred, static_cast<std::size_t>(deferred));
  }
  const SplitRecord settled = split.settled();
  EXPECT_EQ(settled.batches, 60u);
  EXPECT_NEAR(settled.share, balanced, 0.02);
  EXPECT_NEAR(settled.cpu_decode_s, 1e-3, 1e-4);
  EXPECT_NEAR(settled.gpu_decode_s, 3e-5, 3e-6);
  // A run that starts from it is at the balance from its first batch.
  DecodeSplit next(0.5, /*adaptive=*/true, 16);
  next.start_from(settled);
  EXPECT_NEAR(next.share(), balanced, 0.02);
}

}  // namespace
}  // namespace conveyor::detail
