// The decode-memory budget (PipelineOptions::decode_memory_budget) under hostile input: huge progressive
// JPEGs, whose decodes each hold the whole image's coefficients, at 16 threads. Peak memory stays near the
// budget instead of growing with the thread count; an image larger than the whole budget decodes alone;
// nothing deadlocks (a watchdog aborts the test if it hangs).
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "jpeg_variants.h"
#include "process_memory.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

constexpr int kSide = 9500;
constexpr std::size_t kMB = 1'000'000;

// `count` copies of one huge progressive JPEG (the decodes cost the same) in an ImageFolder tree.
std::filesystem::path huge_folder(const testing::TempDir& dir, int count) {
  const testing::Bytes jpeg = testing::make_huge_progressive_jpeg(kSide, 3);
  const std::filesystem::path root = dir / "huge";
  for (int i = 0; i < count; ++i)
    testing::write_file(root / "a" / ("huge_" + std::to_string(i) + ".jpg"), jpeg);
  return root;
}

TEST(DecodeMemory, ABudgetBoundsPeakMemoryUnderHugeProgressiveJpegsAtSixteenThreads) {
  if (testing::kSanitized) GTEST_SKIP() << "resident memory means nothing under a sanitizer";
  const testing::Watchdog watchdog(300s, "huge progressive JPEGs at 16 threads");
  const testing::TempDir dir;
  const std::filesystem::path root = huge_folder(dir, 8);
  // oneTBB gives an arena no more threads than the machine has cores unless told otherwise: make the 16
  // threads real on a small machine too, so that 16 decodes could run at once without the budget.
  const tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 17);
  if (!testing::reset_peak_resident_bytes()) GTEST_SKIP() << "this kernel cannot reset the peak RSS";
  const std::size_t before = testing::resident_bytes();
  constexpr std::size_t kBudget = 400 * kMB;  // more than one decode (about 280 MB), less than two
  BatchIterator it = Dataset::image_folder(root)
                         .map(ops::decode_random_resized_crop(224))
                         .with_options({.threads = 16, .decode_memory_budget = kBudget})
                         .batch(4)
                         .begin();
  std::size_t images = 0;
  while (std::optional<Batch> batch = it.next()) images += batch->size();
  const std::size_t peak = testing::peak_resident_bytes();
  const PipelineStats stats = it.stats();
  std::printf(
      "peak RSS %.0f MB above the %.0f MB before (budget %.0f MB; decode reservations peaked at %.0f MB, "
      "%llu waits)\n",
      static_cast<double>(peak - before) / kMB, static_cast<double>(before) / kMB,
      static_cast<double>(kBudget) / kMB, static_cast<double>(stats.decode_memory_peak) / kMB,
      static_cast<unsigned long long>(stats.decode_memory_waits));
  EXPECT_EQ(images, 8u);
  EXPECT_LE(stats.decode_memory_peak, kBudget);
  EXPECT_GE(stats.decode_memory_peak, 3ull * kSide * kSide);  // the estimate covers the coefficients
  EXPECT_GT(stats.decode_memory_waits, 0u);
  // Without the budget 8 decodes at once would take 8 x 280 MB. Allow the budget plus what the 16
  // threads' decoders and the batches keep (a few MB each).
  EXPECT_LT(peak - before, kBudget + 150 * kMB);
}

TEST(DecodeMemory, AnImageLargerThanTheWholeBudgetStillDecodesAndNothingWaitsForever) {
  const testing::Watchdog watchdog(300s, "an image over the whole budget");
  const testing::TempDir dir;
  const std::filesystem::path root = huge_folder(dir, 2);
  for (int i = 0; i < 30; ++i)
    testing::write_file(root / "a" / ("small_" + std::to_string(i) + ".jpg"),
                        testing::make_jpeg(120, 160, 3, 7 + i));
  constexpr std::size_t kBudget = 20 * kMB;  // a small photo fits many times, a huge one not once
  BatchIterator it = Dataset::image_folder(root)
                         .shuffle()
                         .map(ops::decode_random_resized_crop(32))
                         .with_options({.threads = 8, .decode_memory_budget = kBudget})
                         .batch(4)
                         .begin();
  std::size_t images = 0;
  while (std::optional<Batch> batch = it.next()) images += batch->size();
  EXPECT_EQ(images, 32u);
  const PipelineStats stats = it.stats();
  // Never two huge decodes at once (MemoryBudget's own tests show that one over the budget runs alone).
  EXPECT_GE(stats.decode_memory_peak, 3ull * kSide * kSide);
  EXPECT_LT(stats.decode_memory_peak, 2 * 3ull * kSide * kSide);
}

}  // namespace
}  // namespace conveyor
