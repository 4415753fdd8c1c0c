// Shutdown under load: destroying an iterator at any moment stops all work, wakes every wait and joins,
// with no hang (a watchdog aborts if one does), no leak and no race (this binary also runs under TSan).
// CONVEYOR_STRESS_ITERATIONS raises the repetition counts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/random.h"
#include "fixtures.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using testing::fill_from_seed;
using testing::numbered_memory;
using testing::stress_iterations;
using testing::Watchdog;

constexpr ImageShape kShape{16, 16, 3};

// An endless dataset whose maps do real work on every element.
BatchedDataset endless(int threads, std::size_t batch, std::size_t prefetch) {
  return numbered_memory(97)
      .shuffle(32, 1)
      .repeat()
      .map(fill_from_seed(kShape))
      .map(testing::negate_into_new_image())
      .with_options({.threads = threads})
      .batch(batch)
      .prefetch(prefetch);
}

TEST(Cancel, DestroyingMidEpochUnderLoadReturnsPromptly) {
  const int iterations = stress_iterations(12);
  for (int i = 0; i < iterations; ++i) {
    Watchdog watchdog(std::chrono::seconds(2), "destroy under load, iteration " + std::to_string(i));
    BatchIterator it = endless(2 + i % 7, 1 + i % 5, 1 + i % 3).begin();
    for (int k = 0; k < i % 4; ++k) ASSERT_TRUE(it.next());
  }  // the iterator dies here, with work in flight
}

TEST(Cancel, DestroyingWhileThePipelineWaitsForTheConsumer) {
  for (int i = 0; i < stress_iterations(5); ++i) {
    Watchdog watchdog(std::chrono::seconds(2), "destroy with a full queue");
    BatchIterator it = endless(3, 2, 1).begin();
    ASSERT_TRUE(it.next());
    // Wait (without sleeping blindly) until the pipeline has filled what it may and paused.
    while (it.stats().queue.current < 1) std::this_thread::yield();
  }
}

TEST(Cancel, DestroyingWhileTheConsumerHoldsEveryBufferKeepsTheBatchesValid) {
  std::vector<Batch> kept;
  {
    Watchdog watchdog(std::chrono::seconds(2), "destroy with buffers held");
    BatchIterator it = endless(2, 2, 1).with_options({.threads = 2, .held_batches = 4}).begin();
    for (int k = 0; k < 4; ++k) kept.push_back(std::move(*it.next()));
  }
  for (const Batch& batch : kept) {
    EXPECT_EQ(batch.size(), 2u);
    std::uint64_t sum = 0;
    for (const std::uint8_t v : batch.pixels()) sum += v;  // readable after the iterator died (ASan checks)
    EXPECT_GT(sum, 0u);
  }
}

TEST(Cancel, DestroyingRightAfterBeginStopsTheShapeProbeToo) {
  for (int i = 0; i < stress_iterations(20); ++i) {
    Watchdog watchdog(std::chrono::seconds(2), "destroy right after begin");
    BatchIterator it = endless(4, 3, 2).begin();
  }
}

TEST(Cancel, DestroyingWhileAMapIsSlowWaitsOnlyForThatMap) {
  Watchdog watchdog(std::chrono::seconds(2), "destroy during a slow map");
  std::atomic<int> started{0};
  SampleOp slow{"slow", [&](Sample& s) {
                  started.fetch_add(1);
                  std::uint64_t x = s.seed;  // a few milliseconds of real work, no sleep
                  for (int k = 0; k < 200'000; ++k) x = mix64(x);
                  s.label = static_cast<std::int64_t>(x & 1);
                }};
  {
    SampleIterator it = numbered_memory(10).repeat().map(slow).with_options({.threads = 4}).begin();
    while (started.load() < 4) std::this_thread::yield();
  }
}

TEST(Cancel, DestroyingSampleIteratorsMidStream) {
  for (int i = 0; i < stress_iterations(10); ++i) {
    Watchdog watchdog(std::chrono::seconds(2), "destroy a sample iterator");
    SampleIterator it = numbered_memory(50)
                            .repeat()
                            .map(fill_from_seed(kShape))
                            .with_options({.threads = 3})
                            .prefetch(1 + i % 4)
                            .begin();
    for (int k = 0; k < i % 6; ++k) ASSERT_TRUE(it.next());
  }
}

TEST(Stress, ExceptionsAtRandomElementsUnderLoad) {
  for (int i = 0; i < stress_iterations(6); ++i) {
    Watchdog watchdog(std::chrono::seconds(5), "random exceptions, iteration " + std::to_string(i));
    const Dataset d = numbered_memory(120)
                          .shuffle(40, static_cast<std::uint64_t>(i))
                          .map(fill_from_seed(kShape))
                          .map(testing::throw_when(testing::one_in_seven));
    const int threads = 2 + i % 6;
    // skip: every batch but the last is full and the stats count every failure
    BatchIterator skipping =
        d.with_options({.threads = threads, .on_error = OnError::skip, .seed = 9}).batch(5).begin();
    std::uint64_t delivered = 0;
    while (std::optional<Batch> batch = skipping.next()) delivered += batch->size();
    EXPECT_EQ(delivered + skipping.stats().skipped, 120u);
    // fail: the error arrives, and the iterator then ends cleanly
    BatchIterator failing = d.with_options({.threads = threads, .seed = 9}).batch(5).begin();
    EXPECT_THROW(while (failing.next()){}, PipelineError);
    EXPECT_FALSE(failing.next());
  }
}

TEST(Stress, ManyIteratorsOfOneDatasetRunAtOnceOnSeveralThreads) {
  Watchdog watchdog(std::chrono::seconds(20), "concurrent iterators");
  const BatchedDataset d = numbered_memory(150)
                               .shuffle(30, 3)
                               .map(fill_from_seed(kShape))
                               .with_options({.threads = 2, .seed = 4})
                               .batch(7);
  const std::uint64_t reference = testing::checksum_of(d);
  std::vector<std::uint64_t> results(4);
  std::vector<std::thread> consumers;
  for (std::size_t t = 0; t < results.size(); ++t)
    consumers.emplace_back([&, t] { results[t] = testing::checksum_of(d); });
  for (std::thread& consumer : consumers) consumer.join();
  for (const std::uint64_t result : results) EXPECT_EQ(result, reference);
}

TEST(Stress, OutOfOrderDeliveryUnderLoadDeliversEveryElementOnce) {
  for (int i = 0; i < stress_iterations(4); ++i) {
    Watchdog watchdog(std::chrono::seconds(5), "out of order");
    BatchIterator it =
        numbered_memory(300, 1'000'000)
            .map(fill_from_seed(kShape))
            .map(testing::throw_when(testing::one_in_seven))
            .with_options({.threads = 4, .deterministic = false, .on_error = OnError::skip, .seed = 2})
            .batch(8)
            .begin();
    std::vector<int> seen(300, 0);
    std::size_t partial = 0;
    while (std::optional<Batch> batch = it.next()) {
      if (batch->size() != 8) ++partial;
      for (const std::int64_t label : batch->labels()) ++seen.at(static_cast<std::size_t>(label));
    }
    EXPECT_LE(partial, 1u);
    for (std::size_t k = 0; k < seen.size(); ++k)
      EXPECT_EQ(seen[k], testing::one_in_seven(sample_seed(2, 0, k)) ? 0 : 1) << "element " << k;
  }
}

}  // namespace
}  // namespace conveyor
