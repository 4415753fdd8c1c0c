// The feeder's staging thread (src/device/lookahead.h), driven here by the CPU backend so that it runs
// without a GPU: batches in order, at most `ahead` staged, errors where they happened, a clean stop at any
// point.
#include "src/device/lookahead.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "src/device/cpu_feeder.h"
#include "support/watchdog.h"

namespace conveyor::detail {
namespace {

using namespace std::chrono_literals;

constexpr ImageShape kShape{2, 3, 1};

// Writes the element's index into every pixel; throws on the element numbered `fail_at`.
SampleOp numbered(std::uint64_t fail_at = ~std::uint64_t{0}) {
  return {"numbered", [fail_at](Sample& sample) {
            if (sample.index == fail_at) throw std::runtime_error("element " + std::to_string(fail_at));
            const ImageView out = sample.output(kShape);
            for (int y = 0; y < kShape.height; ++y)
              for (int x = 0; x < kShape.width; ++x) out.row(y)[x] = static_cast<std::uint8_t>(sample.index);
            sample.publish();
          }};
}

BatchedDataset data(std::size_t count, std::uint64_t fail_at = ~std::uint64_t{0}) {
  std::vector<std::vector<std::uint8_t>> buffers(count, std::vector<std::uint8_t>{1});
  return Dataset::memory(std::move(buffers))
      .map(numbered(fail_at))
      .with_options({.threads = 2, .held_batches = 4})
      .batch(4, kShape);
}

std::shared_ptr<CpuFeeder> backend(int depth) {
  FeederOptions options;
  options.depth = depth;
  return std::make_shared<CpuFeeder>(options);
}

TEST(Lookahead, DeliversEveryBatchInOrderThenTheEnd) {
  const testing::Watchdog watchdog(30s, "Lookahead.DeliversEveryBatchInOrderThenTheEnd");
  Lookahead lookahead(backend(3), data(40).begin(), 2);
  std::uint64_t expected = 0;
  while (std::optional<DeviceBatch> batch = lookahead.next()) {
    for (std::size_t i = 0; i < batch->size(); ++i) {
      EXPECT_EQ(batch->samples()[i].index, expected);
      EXPECT_EQ(batch->pixels().as<const std::uint8_t>()[i * kShape.bytes()],
                static_cast<std::uint8_t>(expected));
      ++expected;
    }
  }
  EXPECT_EQ(expected, 40u);
  EXPECT_FALSE(lookahead.next().has_value()) << "the end stays the end";
  EXPECT_EQ(lookahead.stats().elements_out, 40u);
}

TEST(Lookahead, StagesAtMostAheadBatchesBeyondTheConsumers) {
  const testing::Watchdog watchdog(30s, "Lookahead.StagesAtMostAheadBatchesBeyondTheConsumers");
  // A ring of 3 the consumer fills by keeping every batch: the thread waits for a slot, and the consumer
  // hears of it when it asks for a batch while holding all three (never a wait without end, never an
  // overwrite). Once it lets one go, the waiting batch comes next.
  auto feeder = backend(3);
  Lookahead lookahead(feeder, data(40).begin(), 2);
  std::optional<DeviceBatch> first = lookahead.next();
  std::optional<DeviceBatch> second = lookahead.next();
  std::optional<DeviceBatch> third = lookahead.next();
  ASSERT_TRUE(first && second && third);
  EXPECT_EQ(feeder->stats().held, 3u);
  EXPECT_THROW(lookahead.next(), Error);
  first.reset();
  std::optional<DeviceBatch> fourth = lookahead.next();
  ASSERT_TRUE(fourth.has_value());
  EXPECT_EQ(fourth->samples()[0].index, 12u) << "no batch lost to the refusal";
}

TEST(Lookahead, AConsumerThatKeepsTheLastBatchWhileAskingForTheNextIsNeverRefused) {
  const testing::Watchdog watchdog(30s, "Lookahead.AConsumerThatKeepsTheLastBatchWhileAskingForTheNext");
  // A Python loop: the last batch's tensors live until next() has returned. The thread stages into the
  // slots left and waits for the rest, instead of failing because the consumer holds one batch more.
  auto feeder = backend(3);
  Lookahead lookahead(feeder, data(40).begin(), 2);
  std::optional<DeviceBatch> previous;
  std::uint64_t expected = 0;
  while (std::optional<DeviceBatch> batch = lookahead.next()) {
    EXPECT_EQ(batch->samples()[0].index, expected);
    expected += batch->size();
    EXPECT_LE(feeder->stats().held, 3u);
    std::this_thread::sleep_for(5ms);  // the step, with the last batch and this one held: the thread acts
    previous = std::move(batch);
  }
  EXPECT_EQ(expected, 40u);
}

TEST(Lookahead, APipelineErrorArrivesAfterTheBatchesBeforeIt) {
  const testing::Watchdog watchdog(30s, "Lookahead.APipelineErrorArrivesAfterTheBatchesBeforeIt");
  Lookahead lookahead(backend(3), data(40, /*fail_at=*/13).begin(), 2);
  int batches = 0;
  try {
    while (lookahead.next()) ++batches;
    FAIL() << "expected a PipelineError";
  } catch (const PipelineError& error) {
    EXPECT_NE(std::string(error.what()).find("element 13"), std::string::npos) << error.what();
  }
  EXPECT_EQ(batches, 3) << "batches 0 to 2 (elements 0 to 11) come before the failed element's batch";
  EXPECT_FALSE(lookahead.next().has_value());
}

TEST(Lookahead, StopsCleanlyAtAnyPoint) {
  const testing::Watchdog watchdog(60s, "Lookahead.StopsCleanlyAtAnyPoint");
  for (int taken = 0; taken < 6; ++taken) {
    std::vector<std::vector<std::uint8_t>> buffers(8, std::vector<std::uint8_t>{1});
    const BatchedDataset endless = Dataset::memory(std::move(buffers))
                                       .repeat()
                                       .map(numbered())
                                       .with_options({.threads = 2})
                                       .batch(4, kShape);
    auto feeder = backend(3);
    {
      Lookahead lookahead(feeder, endless.begin(), 2);
      for (int k = 0; k < taken; ++k) ASSERT_TRUE(lookahead.next().has_value());
    }
    EXPECT_EQ(feeder->stats().held, 0u) << "every staged batch is released when the lookahead goes";
  }
}

TEST(Lookahead, NeedsRoomForOneBatch) {
  EXPECT_THROW(Lookahead(backend(2), data(4).begin(), 0), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::detail
