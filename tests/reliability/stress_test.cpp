// Faults and load: pipelines created, partly consumed and destroyed thousands of times with random thread
// counts (1 to 64 on this machine's cores), prefetch depths (1 to 64), batch sizes and error modes; maps
// that throw on a random element; consumers that stop mid-epoch and keep batches past the iterator's
// death. Nothing hangs (a watchdog on each run), nothing is lost or delivered twice, the batch pool never
// holds more buffers than its capacity, and resident memory stops growing (LeakSanitizer checks the ASan
// build; ThreadSanitizer runs this program too). CONVEYOR_STRESS_ITERATIONS sets the repetitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "process_memory.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using testing::Watchdog;
using Bytes = std::vector<std::uint8_t>;

constexpr int kSize = 8;
constexpr ImageShape kShape{kSize, kSize, 3};
constexpr std::size_t kElements = 24;

int iterations(int fallback) {
  if (const char* text = std::getenv("CONVEYOR_STRESS_ITERATIONS")) {
    const int value = std::atoi(text);
    if (value > 0) return value;
  }
  return fallback;
}

// kElements tiny JPEGs (12 x 16) in memory, label i for element i: decoding is real work, but little.
Dataset tiny_jpegs() {
  std::vector<Bytes> buffers;
  std::vector<std::int64_t> labels;
  for (std::size_t i = 0; i < kElements; ++i) {
    buffers.push_back(testing::make_jpeg(12, 16, 3, i + 1, 80));
    labels.push_back(static_cast<std::int64_t>(i));
  }
  return Dataset::memory(std::move(buffers), std::move(labels));
}

Dataset augmented(const Dataset& source) {
  return source.map(ops::decode_random_resized_crop(kSize))
      .map(ops::flip_horizontal(0.5))
      .map(ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4}));
}

// Throws on the element whose label is `label`.
SampleOp explode_at(std::int64_t label) {
  return {"explode", [label](Sample& sample) {
            if (sample.label == label) throw std::runtime_error("boom at " + std::to_string(label));
          }};
}

template <class T>
T pick(Rng& rng, std::initializer_list<T> choices) {
  return *(choices.begin() + rng.below(choices.size()));
}

TEST(FaultsAndLoad, CreatingPartlyConsumingAndDestroyingPipelinesThousandsOfTimes) {
  const int runs = iterations(2000);
  const Dataset source = tiny_jpegs();
  testing::TempDir dir;  // some runs read files, a few of them missing or broken
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < kElements; ++i) {
    paths.push_back((dir / ("img" + std::to_string(i) + ".jpg")).string());
    if (i % 11 == 5) continue;  // listed but never written: the read stage fails
    testing::write_file(paths.back(),
                        i % 11 == 7 ? Bytes{0xFF, 0xD8, 0xFF} : testing::make_jpeg(12, 16, 3, i + 1, 80));
  }
  std::vector<std::int64_t> labels(kElements);
  for (std::size_t i = 0; i < kElements; ++i) labels[i] = static_cast<std::int64_t>(i);
  const Dataset files = Dataset::files(paths, labels);

  std::size_t resident_after_warmup = 0;
  std::uint64_t batches_seen = 0;
  std::vector<Batch> kept;  // batches that outlive their iterator
  for (int run = 0; run < runs; ++run) {
    if (run == runs / 4) resident_after_warmup = testing::resident_bytes();
    Rng rng(static_cast<std::uint64_t>(run), 0x57e55);
    const int threads = pick(rng, {1, 2, 3, 4, 64});
    const std::size_t prefetch = pick<std::size_t>(rng, {1, 2, 4, 64});
    const std::size_t batch = pick<std::size_t>(rng, {1, 3, 8});
    const bool from_files = rng.bernoulli(0.25);
    const PipelineOptions options{
        .threads = threads,
        .deterministic = rng.bernoulli(0.5),
        .on_error = from_files || rng.bernoulli(0.5) ? OnError::skip : OnError::fail,
        .seed = rng.next(),
        .held_batches = 2};
    Dataset samples = augmented(from_files ? files : source).repeat(2);
    std::set<std::int64_t> bad;  // the labels that fail: missing or broken files, the exploding element
    if (from_files) bad = {5, 7, 16, 18};
    if (rng.bernoulli(0.3)) {
      const auto exploding = static_cast<std::int64_t>(rng.below(kElements));
      samples = samples.map(explode_at(exploding));
      bad.insert(exploding);
    }
    // What arrives, in order (deterministic) or as a multiset: both epochs without the bad elements
    // (skip), or everything before the first bad one (fail).
    std::vector<std::int64_t> expected;
    for (std::size_t i = 0; i < 2 * kElements; ++i) {
      const auto label = static_cast<std::int64_t>(i % kElements);
      if (!bad.count(label))
        expected.push_back(label);
      else if (options.on_error == OnError::fail)
        break;
    }
    std::vector<std::int64_t> delivered;
    const std::uint64_t wanted = rng.below(2 * kElements / batch + 2);  // from none to past the end

    const Watchdog watchdog(std::chrono::seconds(10), "stress run " + std::to_string(run));
    BatchIterator it =
        samples.with_options(PipelineOptionChanges::all(options)).batch(batch).prefetch(prefetch).begin();
    bool kept_one = false;
    try {
      for (std::uint64_t k = 0; k < wanted; ++k) {
        std::optional<Batch> next = it.next();
        if (!next) break;
        ++batches_seen;
        ASSERT_EQ(next->sample_shape(), kShape);
        ASSERT_LE(next->size(), batch);
        delivered.insert(delivered.end(), next->labels().begin(), next->labels().end());
        const PipelineStats stats = it.stats();
        ASSERT_LE(stats.pool_buffers, stats.pool_capacity);
        // At most one per iterator: with the batch being asked for, that is the held_batches = 2 allowed.
        if (!kept_one && kept.size() < 4 && rng.bernoulli(0.05)) {
          kept.push_back(std::move(*next));
          kept_one = true;
        }
      }
    } catch (const PipelineError& error) {
      ASSERT_EQ(options.on_error, OnError::fail) << error.what();
      // It names one of the bad elements (in order: the first one).
      const auto named = std::find_if(bad.begin(), bad.end(), [&](std::int64_t label) {
        return error.path() == (from_files ? paths[static_cast<std::size_t>(label)]
                                           : "<memory:" + std::to_string(label) + ">");
      });
      ASSERT_NE(named, bad.end()) << error.what();
      if (options.deterministic) {
        ASSERT_EQ(*named, *bad.begin()) << error.what();
      }
    }
    if (options.deterministic) {
      ASSERT_LE(delivered.size(), expected.size()) << "run " << run;
      ASSERT_TRUE(std::equal(delivered.begin(), delivered.end(), expected.begin())) << "run " << run;
    } else {
      std::map<std::int64_t, int> counts;
      for (const std::int64_t label : delivered) ++counts[label];
      for (const auto& [label, count] : counts) {
        ASSERT_EQ(bad.count(label), 0u) << "run " << run;
        ASSERT_LE(count, 2) << "run " << run;
      }
    }
    if (kept.size() == 4) kept.clear();  // their pools die with them
  }                                      // each iterator dies with work in flight

  EXPECT_GT(batches_seen, static_cast<std::uint64_t>(runs));
  if (!testing::kSanitized && resident_after_warmup > 0) {
    const std::size_t now = testing::resident_bytes();
    const std::size_t growth = now - std::min(now, resident_after_warmup);
    std::printf("resident memory: %zu KiB after %d runs, %zu KiB after %d\n", resident_after_warmup >> 10,
                runs / 4, now >> 10, runs);
    // Generous: LeakSanitizer finds leaks in the ASan build; this catches memory that stays reachable but
    // grows with every pipeline made (a pool, a cache, a thread's buffers): 170 KB a run at 2,000 runs.
    EXPECT_LT(growth, std::size_t{256} << 20)
        << "resident memory grew by " << growth << " bytes over " << runs - runs / 4 << " runs";
  }
}

TEST(FaultsAndLoad, AMapThatThrowsOnARandomElementFailsThereOrSkipsExactlyIt) {
  const Dataset source = tiny_jpegs();
  const int runs = std::max(1, iterations(2000) / 10);
  for (int run = 0; run < runs; ++run) {
    Rng rng(static_cast<std::uint64_t>(run), 0xfa17);
    const auto bad = static_cast<std::int64_t>(rng.below(kElements));
    const int threads = pick(rng, {1, 2, 4, 64});
    const std::size_t batch = pick<std::size_t>(rng, {1, 4, 5});
    const bool deterministic = rng.bernoulli(0.5);
    const bool skip = rng.bernoulli(0.5);
    const Watchdog watchdog(std::chrono::seconds(10), "throwing map, run " + std::to_string(run));
    BatchIterator it = augmented(source)
                           .map(explode_at(bad))
                           .with_options({.threads = threads,
                                          .deterministic = deterministic,
                                          .on_error = skip ? OnError::skip : OnError::fail})
                           .batch(batch)
                           .prefetch(pick<std::size_t>(rng, {1, 64}))
                           .begin();
    std::vector<std::int64_t> labels;
    std::optional<PipelineError> error;
    try {
      while (std::optional<Batch> next = it.next())
        labels.insert(labels.end(), next->labels().begin(), next->labels().end());
    } catch (const PipelineError& e) {
      error = e;
    }
    const std::set<std::int64_t> unique(labels.begin(), labels.end());
    ASSERT_EQ(unique.size(), labels.size()) << "an element was delivered twice";
    ASSERT_EQ(unique.count(bad), 0u);
    if (skip) {
      ASSERT_FALSE(error);
      ASSERT_EQ(labels.size(), kElements - 1) << "every other element arrives";
      ASSERT_EQ(it.stats().skip_reasons, (std::map<std::string, std::uint64_t>{{"explode: exception", 1}}));
      continue;
    }
    ASSERT_TRUE(error);
    ASSERT_EQ(error->path(), "<memory:" + std::to_string(bad) + ">");
    ASSERT_EQ(error->stage(), "explode");
    ASSERT_EQ(error->reason(), "boom at " + std::to_string(bad));
    if (deterministic) {
      // Exactly the batches before the failed element's batch, in order.
      const std::size_t before = static_cast<std::size_t>(bad) / batch * batch;
      ASSERT_EQ(labels.size(), before);
      for (std::size_t i = 0; i < before; ++i) ASSERT_EQ(labels[i], static_cast<std::int64_t>(i));
    }
    ASSERT_FALSE(it.next());
  }
}

TEST(FaultsAndLoad, AConsumerThatStopsMidEpochLeavesNothingRunningAndKeepsItsBatchesValid) {
  const Dataset endless = augmented(tiny_jpegs()).repeat();
  const int runs = std::max(1, iterations(2000) / 10);
  for (int run = 0; run < runs; ++run) {
    Rng rng(static_cast<std::uint64_t>(run), 0x5709);
    const BatchedDataset batches = endless.with_options({.threads = pick(rng, {1, 2, 64}), .held_batches = 3})
                                       .batch(pick<std::size_t>(rng, {1, 7}))
                                       .prefetch(pick<std::size_t>(rng, {1, 64}));
    const std::uint64_t stop_after = rng.below(10);
    std::vector<Batch> kept;
    {
      const Watchdog watchdog(std::chrono::seconds(10), "consumer stops, run " + std::to_string(run));
      if (run % 2 == 0) {
        std::uint64_t seen = 0;
        for (const Batch& batch : batches) {
          ASSERT_EQ(batch.sample_shape(), kShape);
          if (seen++ == stop_after) break;  // the range-for's iterator dies here, mid-epoch
        }
      } else {
        BatchIterator it = batches.begin();
        for (std::uint64_t k = 0; k < stop_after; ++k) {
          std::optional<Batch> batch = it.next();
          ASSERT_TRUE(batch);
          if (kept.size() < 2 && rng.bernoulli(0.5)) kept.push_back(std::move(*batch));
        }
      }  // the iterator dies with the consumer holding up to two of its batches
    }
    for (const Batch& batch : kept) {
      ASSERT_EQ(batch.sample_shape(), kShape);
      std::uint64_t sum = 0;
      for (const std::uint8_t v : batch.pixels()) sum += v;  // ASan: the memory is still the batch's
      ASSERT_GT(sum, 0u);
    }
  }
}

// The extremes of the pipeline's two knobs deliver the same bytes: with 1 and 64 threads on this
// machine's few cores, and a prefetch depth of 1 and 64.
TEST(FaultsAndLoad, OneAndSixtyFourThreadsWithPrefetchOneAndSixtyFourDeliverTheSameEpoch) {
  const Dataset source = augmented(tiny_jpegs()).shuffle(kElements, 4).repeat(3);
  std::optional<std::vector<std::uint8_t>> reference;
  for (const int threads : {1, 64}) {
    for (const std::size_t prefetch : {std::size_t{1}, std::size_t{64}}) {
      const Watchdog watchdog(std::chrono::seconds(20), "threads " + std::to_string(threads));
      BatchIterator it =
          source.with_options({.threads = threads, .seed = 8}).batch(5).prefetch(prefetch).begin();
      std::vector<std::uint8_t> bytes;
      std::map<std::int64_t, int> counts;
      while (std::optional<Batch> batch = it.next()) {
        bytes.insert(bytes.end(), batch->pixels().begin(), batch->pixels().end());
        for (const std::int64_t label : batch->labels()) ++counts[label];
        const PipelineStats stats = it.stats();
        ASSERT_LE(stats.pool_buffers, stats.pool_capacity);
      }
      ASSERT_EQ(counts.size(), kElements);
      for (const auto& [label, count] : counts) EXPECT_EQ(count, 3) << "label " << label;
      if (!reference) reference = bytes;
      EXPECT_TRUE(bytes == *reference) << threads << " threads, prefetch " << prefetch;
    }
  }
}

// One long-lived iterator: memory is bounded by configuration, not by how long it runs.
TEST(FaultsAndLoad, ResidentMemoryStaysFlatOverALongRun) {
  const std::uint64_t batches = static_cast<std::uint64_t>(std::max(40, iterations(2000) * 2));
  const Watchdog watchdog(std::chrono::seconds(120), "long run");
  BatchIterator it =
      augmented(tiny_jpegs()).repeat().with_options({.threads = 2}).batch(8).prefetch(4).begin();
  std::size_t resident_after_warmup = 0;
  for (std::uint64_t k = 0; k < batches; ++k) {
    if (k == batches / 4) resident_after_warmup = testing::resident_bytes();
    ASSERT_TRUE(it.next());
    const PipelineStats stats = it.stats();
    ASSERT_LE(stats.pool_buffers, stats.pool_capacity);
  }
  EXPECT_EQ(it.stats().elements_out, batches * 8);
  if (testing::kSanitized) GTEST_SKIP() << "resident memory is not meaningful under sanitizers";
  const std::size_t now = testing::resident_bytes();
  EXPECT_LT(now - std::min(now, resident_after_warmup), std::size_t{16} << 20);
}

}  // namespace
}  // namespace conveyor
