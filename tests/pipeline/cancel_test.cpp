// Shutdown under load: destroying an iterator at any moment stops all work, wakes every wait and joins,
// with no hang (a watchdog aborts if one does), no leak and no race (this binary also runs under TSan).
// CONVEYOR_STRESS_ITERATIONS raises the repetition counts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
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

constexpr ImageShape kShape{40, 40, 3};

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
  const int iterations = stress_iterations(24);
  for (int i = 0; i < iterations; ++i) {
    Watchdog watchdog(std::chrono::seconds(2), "destroy under load, iteration " + std::to_string(i));
    BatchIterator it = endless(2 + i % 7, 1 + i % 5, 1 + i % 3).begin();
    for (int k = 0; k < i % 4; ++k) ASSERT_TRUE(it.next());
  }  // the iterator dies here, with work in flight
}

TEST(Cancel, DestroyingWhileThePipelineWaitsForTheConsumer) {
  for (int i = 0; i < stress_iterations(10); ++i) {
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

// What a map has seen: how many calls started and finished. The map holds it through a shared_ptr, so
// its use count tells whether anything (a thread, a copy of the plan) still holds the map.
struct MapProgress {
  std::atomic<std::uint64_t> started{0};
  std::atomic<std::uint64_t> finished{0};
};

// Every element fails and is skipped: the shape probe, which looks for the first element that makes it
// through the maps, never finds one in this endless dataset; only the destructor can stop it.
TEST(Cancel, DestroyingDuringAShapeProbeThatFindsNothingStopsIt) {
  for (int i = 0; i < stress_iterations(10); ++i) {
    Watchdog watchdog(std::chrono::seconds(5), "destroy during an endless shape probe");
    auto progress = std::make_shared<MapProgress>();
    SampleOp always_fails{"always_fails", [progress](Sample&) {
                            progress->started.fetch_add(1);
                            progress->finished.fetch_add(1);
                            throw std::runtime_error("no shape");
                          }};
    {
      BatchIterator it = numbered_memory(5)
                             .repeat()
                             .map(always_fails)
                             .with_options({.threads = 2 + i % 3, .on_error = OnError::skip})
                             .batch(2)
                             .begin();
      while (progress->started.load() < 3) std::this_thread::yield();  // the probe is under way
    }
    EXPECT_EQ(progress->started.load(), progress->finished.load()) << "a map ran past the destructor";
    always_fails = {};
    EXPECT_EQ(progress.use_count(), 1) << "something still holds the map after the iterator died";
  }
}

// Elements are cancelled at their next stage boundary: the maps running when the iterator dies finish
// before the destructor returns, and their elements do not go on to their next map.
TEST(Cancel, DestroyingWhileMapsAreSlowFinishesTheRunningMapsAndGoesNoFurther) {
  constexpr int kThreads = 4;
  Watchdog watchdog(std::chrono::seconds(10), "destroy during a slow map");
  auto slow_progress = std::make_shared<MapProgress>();
  auto next_progress = std::make_shared<MapProgress>();
  SampleOp slow{"slow", [slow_progress](Sample& s) {
                  slow_progress->started.fetch_add(1);
                  std::uint64_t x = s.seed;  // some milliseconds of real work, no sleep
                  for (int k = 0; k < 4'000'000; ++k) x = mix64(x);
                  s.label = static_cast<std::int64_t>(x & 1);
                  slow_progress->finished.fetch_add(1);
                }};
  SampleOp next{"next", [next_progress](Sample&) {
                  next_progress->started.fetch_add(1);
                  next_progress->finished.fetch_add(1);
                }};
  {
    SampleIterator it =
        numbered_memory(10).repeat().map(slow).map(next).with_options({.threads = kThreads}).begin();
    while (slow_progress->started.load() < kThreads) std::this_thread::yield();
  }  // the destructor, while slow maps run: nearly all of an element's time is its slow map
  EXPECT_EQ(slow_progress->started.load(), slow_progress->finished.load()) << "a map ran past the destructor";
  EXPECT_EQ(next_progress->started.load(), next_progress->finished.load()) << "a map ran past the destructor";
  // Every element whose slow map ended before the stop went on to its next map; those whose slow map was
  // running when the iterator died must have stopped there.
  EXPECT_LT(next_progress->started.load(), slow_progress->finished.load())
      << "every element that finished its slow map went on to the next map after the iterator was destroyed";
  slow = {};
  next = {};
  EXPECT_EQ(slow_progress.use_count(), 1) << "something still holds the map after the iterator died";
  EXPECT_EQ(next_progress.use_count(), 1) << "something still holds the map after the iterator died";
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
  for (int i = 0; i < stress_iterations(12); ++i) {
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
  for (int i = 0; i < stress_iterations(8); ++i) {
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
