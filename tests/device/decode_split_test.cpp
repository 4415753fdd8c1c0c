// The split between the CPU workers and the GPU decoder (src/device/decode/decode_split.h): which samples
// go to the GPU (a pure, evenly spread function of the index), and where an adaptive split moves the share.
// Runs without a GPU.
#include "src/device/decode/decode_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/sample.h"

namespace conveyor::detail {
namespace {

using namespace std::chrono_literals;

std::uint32_t q16(double share) { return static_cast<std::uint32_t>(std::lround(share * 65536)); }

// The deferred samples among the indices first, first + stride, first + 2 stride, ..., taken as `batches`
// batches of 256: the largest distance of a batch's count from its share, and the share over all of them.
struct Spread {
  double worst_batch = 0;
  double overall = 0;
};
Spread spread(double share, std::uint64_t first, std::uint64_t stride, std::uint64_t batches) {
  const std::uint32_t s = q16(share);
  Spread out;
  std::uint64_t total = 0;
  for (std::uint64_t b = 0; b < batches; ++b) {
    std::uint64_t in_batch = 0;
    for (std::uint64_t k = 0; k < 256; ++k) in_batch += defers(first + (b * 256 + k) * stride, s) ? 1 : 0;
    out.worst_batch = std::max(out.worst_batch, std::abs(static_cast<double>(in_batch) - 256 * share));
    total += in_batch;
  }
  out.overall = static_cast<double>(total) / static_cast<double>(batches * 256);
  return out;
}

TEST(DecodeSplit, TheDeferredShareIsSpreadEvenlyOverTheIndices) {
  for (const double share : {0.0, 0.1, 0.25, 0.5, 2.0 / 3, 0.9, 1.0}) {
    const Spread one = spread(share, 0, 1, 80);
    // Every batch of 256 gets its share, to two images.
    EXPECT_LE(one.worst_batch, 2.0 + 1e-9) << "share " << share;
    EXPECT_NEAR(one.overall, share, 1e-3) << "share " << share;
  }
}

TEST(DecodeSplit, EveryRankOfAShardedOrderGetsTheShareToo) {
  // shard(n, r) hands rank r the global indices r, r + n, r + 2n, ...: each rank's feeder must see the
  // share as well, or one rank's GPU decoder does all the work while another's does none.
  for (const double share : {0.1, 0.5, 0.8}) {
    for (std::uint64_t ranks = 2; ranks <= 8; ++ranks) {
      for (std::uint64_t rank = 0; rank < ranks; ++rank) {
        const Spread one = spread(share, rank, ranks, 40);
        EXPECT_LE(one.worst_batch, 6.0) << "share " << share << ", rank " << rank << " of " << ranks;
        EXPECT_NEAR(one.overall, share, 5e-3) << "share " << share << ", rank " << rank << " of " << ranks;
      }
    }
  }
}

TEST(DecodeSplit, WhichSamplesDependsOnTheIndexOnly) {
  DecodeSplit split(0.4, false, 8);
  Sample a, b;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    a.index = b.index = i;
    a.seed = i * 7;
    b.seed = i * 13 + 1;
    a.epoch = 0;
    b.epoch = 5;
    EXPECT_EQ(split.should_defer(a), split.should_defer(b)) << i;
    EXPECT_EQ(split.should_defer(a), defers(i, q16(0.4))) << i;
  }
}

TEST(DecodeSplit, AFixedSplitDoesNotMove) {
  DecodeSplit split(0.3, /*adaptive=*/false, 16);
  for (int batch = 0; batch < 20; ++batch) {
    for (int i = 0; i < 100; ++i) split.spent(false, 1ms);
    for (int i = 0; i < 100; ++i) split.spent(true, 20us);
    split.measure(/*gpu_seconds=*/0.001, /*deferred=*/100);
  }
  EXPECT_NEAR(split.share(), 0.3, 1e-4);
}

TEST(DecodeSplit, TheBalancedShareMakesBothSidesTakeTheSameTime) {
  // c = 1 ms per image decoded on a core, d = 50 us per image deferred, g = 50 us per image on the GPU,
  // 16 cores: s = c / (c - d + T g) = 1 / (1 - 0.05 + 0.8).
  const double s = balanced_share(1e-3, 50e-6, 50e-6, 16, -1);
  EXPECT_NEAR(s, 1.0 / 1.75, 1e-9);
  const double cpu_time = (1 - s) * 1e-3 + s * 50e-6;  // per image of the batch, over 16 cores
  const double gpu_time = s * 50e-6 * 16;
  EXPECT_NEAR(cpu_time, gpu_time, 1e-12);
  // Nothing measured yet: the fallback.
  EXPECT_EQ(balanced_share(0, 50e-6, 50e-6, 16, 0.42), 0.42);
  EXPECT_EQ(balanced_share(1e-3, 50e-6, 0, 16, 0.42), 0.42);
  EXPECT_EQ(balanced_share(std::nan(""), 50e-6, 1e-3, 16, 0.42), 0.42);
}

TEST(DecodeSplit, AnAdaptiveSplitConvergesToTheBalance) {
  for (const double gpu_per_image : {10e-6, 50e-6, 400e-6}) {
    DecodeSplit split(0.5, /*adaptive=*/true, 16);
    for (int batch = 0; batch < 60; ++batch) {
      const auto deferred = static_cast<int>(std::lround(256 * split.share()));
      for (int i = 0; i < 256 - deferred; ++i) split.spent(false, 1ms);
      for (int i = 0; i < deferred; ++i) split.spent(true, 50us);
      split.measure(gpu_per_image * deferred, static_cast<std::size_t>(deferred));
    }
    const double expected = std::clamp(balanced_share(1e-3, 50e-6, gpu_per_image, 16, 0.5), 0.05, 0.95);
    EXPECT_NEAR(split.share(), expected, 0.01) << "GPU at " << gpu_per_image * 1e6 << " us per image";
  }
}

TEST(DecodeSplit, DeclinedSamplesAreCountedByReason) {
  DecodeSplit split(1.0, false, 4);
  Sample sample;
  split.declined(sample, "cmyk");
  split.declined(sample, "cmyk");
  split.declined(sample, "gray");
  EXPECT_EQ(split.declined_count(), 3u);
  const auto reasons = split.declined_reasons();
  EXPECT_EQ(reasons.at("op: cmyk"), 2u);
  EXPECT_EQ(reasons.at("op: gray"), 1u);
}

TEST(DecodeSplit, AShareOutsideZeroToOneIsRefused) {
  EXPECT_THROW(DecodeSplit(-0.1, false, 1), InvalidArgument);
  EXPECT_THROW(DecodeSplit(1.5, false, 1), InvalidArgument);
  EXPECT_THROW(DecodeSplit(std::nan(""), false, 1), InvalidArgument);
}


// ---- closed until the GPU is ready (issue 41, "start at once") ----

TEST(DecodeSplit, AClosedSplitDefersNothingUntilItOpens) {
  DecodeSplit split(0.4, /*adaptive=*/true, 8, /*open=*/false);
  EXPECT_FALSE(split.is_open());
  EXPECT_EQ(split.share(), 0.0);
  Sample sample;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    sample.index = i;
    EXPECT_FALSE(split.should_defer(sample)) << i;
  }
  split.open();
  EXPECT_TRUE(split.is_open());
  EXPECT_NEAR(split.share(), 0.4, 1e-4);
  std::uint64_t deferred = 0;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    sample.index = i;
    EXPECT_EQ(split.should_defer(sample), defers(i, q16(0.4))) << i;
    deferred += split.should_defer(sample) ? 1 : 0;
  }
  EXPECT_NEAR(static_cast<double>(deferred) / 2000, 0.4, 0.01);
}

TEST(DecodeSplit, MeasuringAClosedSplitNeitherOpensNorMovesIt) {
  // Without a GPU measurement the balance is unknown and an adaptive split would otherwise step to its
  // floor of 0.05: a closed one must stay at 0, and its batches must not count as settled ones.
  DecodeSplit split(0.5, /*adaptive=*/true, 16, /*open=*/false);
  for (int batch = 0; batch < 40; ++batch) {
    for (int i = 0; i < 256; ++i) split.spent(false, 1ms);
    split.measure(/*gpu_seconds=*/0, /*deferred=*/0);
  }
  EXPECT_FALSE(split.is_open());
  EXPECT_EQ(split.share(), 0.0);
  const SplitRecord settled = split.settled();
  EXPECT_EQ(settled.batches, 0u) << "batches before the split opened count toward what is remembered";
  EXPECT_NEAR(settled.share, 0.5, 1e-9) << "the closed phase dragged the remembered share";
  EXPECT_NEAR(settled.cpu_decode_s, 1e-3, 1e-6) << "the CPU's cost per image was not kept while closed";
}

TEST(DecodeSplit, AnOpenedSplitAdaptsFromTheCostsMeasuredWhileClosed) {
  DecodeSplit split(0.5, /*adaptive=*/true, 16, /*open=*/false);
  for (int batch = 0; batch < 10; ++batch) {
    for (int i = 0; i < 256; ++i) split.spent(false, 1ms);
    split.measure(0, 0);
  }
  split.open();
  for (int batch = 0; batch < 60; ++batch) {
    const auto deferred = static_cast<int>(std::lround(256 * split.share()));
    for (int i = 0; i < 256 - deferred; ++i) split.spent(false, 1ms);
    for (int i = 0; i < deferred; ++i) split.spent(true, 50us);
    split.measure(100e-6 * deferred, static_cast<std::size_t>(deferred));
  }
  EXPECT_NEAR(split.share(), balanced_share(1e-3, 50e-6, 100e-6, 16, 0.5), 0.01);
  EXPECT_EQ(split.settled().batches, 60u);
}

TEST(DecodeSplit, ARememberedShareWaitsForTheSplitToOpen) {
  DecodeSplit split(0.5, /*adaptive=*/true, 16, /*open=*/false);
  split.start_from({.share = 0.7, .cpu_decode_s = 1e-3, .cpu_defer_s = 50e-6, .gpu_decode_s = 80e-6, .batches = 30});
  EXPECT_EQ(split.share(), 0.0) << "a remembered share opened the split";
  split.open();
  EXPECT_NEAR(split.share(), 0.7, 1e-4);
  // A fixed split keeps the share it was made with, remembered or not.
  DecodeSplit fixed(0.3, /*adaptive=*/false, 16, /*open=*/false);
  fixed.start_from({.share = 0.7, .cpu_decode_s = 1e-3, .cpu_defer_s = 50e-6, .gpu_decode_s = 80e-6, .batches = 30});
  fixed.open();
  EXPECT_NEAR(fixed.share(), 0.3, 1e-4);
}

TEST(DecodeSplit, OpeningAgainChangesNothing) {
  DecodeSplit split(0.5, /*adaptive=*/true, 16, /*open=*/false);
  split.open();
  for (int batch = 0; batch < 30; ++batch) {
    const auto deferred = static_cast<int>(std::lround(256 * split.share()));
    for (int i = 0; i < 256 - deferred; ++i) split.spent(false, 1ms);
    for (int i = 0; i < deferred; ++i) split.spent(true, 50us);
    split.measure(400e-6 * deferred, static_cast<std::size_t>(deferred));
  }
  const double moved = split.share();
  ASSERT_LT(moved, 0.3) << "the split did not adapt, so this test shows nothing";
  split.open();
  EXPECT_EQ(split.share(), moved);
  // A split made open is open from the start, as before issue 41.
  DecodeSplit open_at_once(0.25, false, 4);
  EXPECT_TRUE(open_at_once.is_open());
  EXPECT_NEAR(open_at_once.share(), 0.25, 1e-4);
}

TEST(DecodeSplit, OpeningWhileWorkersAskGivesEachSampleOneOfTheTwoAnswers) {
  // The startup thread opens the split while the pipeline's workers ask it and the feeder's returner
  // measures: every answer is the closed one (false) or the open one, and nothing races (run under TSan).
  DecodeSplit split(0.5, /*adaptive=*/false, 4, /*open=*/false);
  std::atomic<bool> go{false}, opened{false};
  std::atomic<int> wrong{0}, after_open{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&, t] {
      Sample sample;
      while (!go.load()) std::this_thread::yield();
      for (std::uint64_t i = 0; i < 20000; ++i) {
        sample.index = i * 4 + static_cast<std::uint64_t>(t);
        const bool was_open = opened.load();
        const bool deferred = split.should_defer(sample);
        if (deferred && !defers(sample.index, q16(0.5))) ++wrong;
        if (was_open && deferred != defers(sample.index, q16(0.5))) ++after_open;
        split.spent(deferred, 1us);
      }
    });
  std::thread returner([&] {
    while (!go.load()) std::this_thread::yield();
    for (int batch = 0; batch < 200; ++batch) split.measure(1e-4, 8);
  });
  go.store(true);
  std::this_thread::sleep_for(1ms);  // not synchronisation: only so that some answers come before opening
  split.open();
  opened.store(true);
  for (std::thread& worker : workers) worker.join();
  returner.join();
  EXPECT_EQ(wrong.load(), 0) << "a sample the open split does not defer was deferred";
  EXPECT_EQ(after_open.load(), 0) << "a sample asked after open() got the closed answer";
  EXPECT_TRUE(split.is_open());
}

}  // namespace
}  // namespace conveyor::detail
