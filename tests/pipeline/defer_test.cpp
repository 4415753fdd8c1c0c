// Deferral (conveyor/defer.h): the chain's last map may leave a sample's pixels to a stage after batching;
// the pipeline then carries the sample's bytes and descriptor with its batch, through holes and compaction,
// in order, at any thread count.
#include "conveyor/defer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/batch_checksum.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/random.h"
#include "fixtures.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using testing::fill_from_seed;
using testing::number_of;
using testing::numbered_memory;

constexpr ImageShape kShape{4, 5, 3};
constexpr std::int64_t kNoClasses = 1'000'000;  // labels equal the element's number

// Defers the elements whose index is even (a pure function of the sample, as deterministic runs need).
class EvenIndices final : public DeferPolicy {
 public:
  bool should_defer(const Sample& sample) noexcept override {
    ++asked;
    return sample.index % 2 == 0;
  }
  void declined(const Sample&, const char*) noexcept override { ++declined_count; }
  void spent(bool, std::chrono::nanoseconds) noexcept override {}
  std::atomic<int> asked{0}, declined_count{0};
};

// The descriptor this op leaves: the element's number, twice, so that a mix-up shows.
std::vector<std::byte> descriptor_for(std::uint64_t number) {
  std::vector<std::byte> bytes(2 * sizeof number);
  std::memcpy(bytes.data(), &number, sizeof number);
  std::memcpy(bytes.data() + sizeof number, &number, sizeof number);
  return bytes;
}

// Defers what its policy names (descriptor: the element's number), fills the slot otherwise.
SampleOp fill_or_defer() {
  const SampleOp fill = fill_from_seed(kShape);
  return {"fill_or_defer", [fill](Sample& sample) {
            if (DeferPolicy* policy = sample.defer_policy(); policy && policy->should_defer(sample)) {
              sample.defer(descriptor_for(number_of(sample)));
              return;
            }
            fill.apply(sample);
          }};
}

// Checks every batch of `dataset`: deferred samples carry their own bytes and descriptor and no more, the
// others carry fill_from_seed's pixels. Returns the numbers delivered, in order.
std::vector<std::uint64_t> check_batches(const BatchedDataset& dataset, std::uint64_t seed) {
  std::vector<std::uint64_t> numbers;
  for (const Batch& batch : dataset) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const SampleInfo& info = batch.samples()[i];
      const auto number = static_cast<std::uint64_t>(batch.labels()[i]);
      numbers.push_back(number);
      EXPECT_EQ(info.deferred, info.index % 2 == 0) << "element " << number;
      if (info.deferred) {
        ++count;
        const auto bytes = batch.deferred_bytes(i);
        EXPECT_EQ(bytes.size(), sizeof number) << "element " << number;
        if (bytes.size() != sizeof number) continue;
        std::uint64_t carried = 0;
        std::memcpy(&carried, bytes.data(), sizeof carried);
        EXPECT_EQ(carried, number) << "slot " << i << " carries another element's bytes";
        const auto descriptor = batch.deferred_descriptor(i);
        const auto expected = descriptor_for(number);
        EXPECT_TRUE(std::equal(descriptor.begin(), descriptor.end(), expected.begin(), expected.end()))
            << "element " << number << ": descriptor mixed up";
      } else {
        EXPECT_TRUE(batch.deferred_bytes(i).empty());
        EXPECT_TRUE(batch.deferred_descriptor(i).empty());
        Sample reference;
        reference.seed = sample_seed(seed, info.epoch, info.index);
        reference.encoded.resize(sizeof number);
        std::memcpy(reference.encoded.data(), &number, sizeof number);
        fill_from_seed(kShape).apply(reference);
        const ConstImageView got = batch.image(i);
        EXPECT_EQ(std::memcmp(got.data, reference.image().data, kShape.bytes()), 0) << "element " << number;
      }
    }
    EXPECT_EQ(batch.deferred_count(), count);
  }
  return numbers;
}

TEST(Defer, DeferredSamplesCarryTheirBytesAndDescriptorInTheirBatch) {
  const testing::Watchdog watchdog(60s, "DeferredSamplesCarryTheirBytesAndDescriptorInTheirBatch");
  auto policy = std::make_shared<EvenIndices>();
  const BatchedDataset d = numbered_memory(50, kNoClasses)
                               .map(fill_or_defer())
                               .with_options({.threads = 3, .seed = 5, .defer = policy})
                               .batch(8, kShape);
  const std::vector<std::uint64_t> numbers = check_batches(d, 5);
  ASSERT_EQ(numbers.size(), 50u);
  for (std::uint64_t i = 0; i < 50; ++i) EXPECT_EQ(numbers[i], i);
  EXPECT_EQ(policy->asked, 50);
}

TEST(Defer, HolesAreClosedWithTheDeferredBytesMovingAlong) {
  const testing::Watchdog watchdog(60s, "HolesAreClosedWithTheDeferredBytesMovingAlong");
  auto policy = std::make_shared<EvenIndices>();
  // A filter before the deferring map drops about one element in three: batches are compacted.
  const BatchedDataset d =
      numbered_memory(200, kNoClasses)
          .shuffle(64, 3)
          .map(testing::throw_when(testing::one_in_seven))
          .filter([](const Sample& s) { return number_of(s) % 3 != 1; })
          .map(fill_or_defer())
          .with_options({.threads = 4, .on_error = OnError::skip, .seed = 2, .defer = policy})
          .batch(7, kShape);
  const std::vector<std::uint64_t> numbers = check_batches(d, 2);
  EXPECT_GT(numbers.size(), 80u);
  for (const std::uint64_t n : numbers) EXPECT_NE(n % 3, 1u);
}

TEST(Defer, TheSameBatchesAtAnyThreadCount) {
  const testing::Watchdog watchdog(120s, "TheSameBatchesAtAnyThreadCount");
  std::vector<std::uint64_t> first;
  std::uint64_t first_sum = 0;
  for (const int threads : {1, 2, 5}) {
    auto policy = std::make_shared<EvenIndices>();
    const BatchedDataset d = numbered_memory(120, kNoClasses)
                                 .shuffle(50, 9)
                                 .map(fill_or_defer())
                                 .with_options({.threads = threads, .seed = 4, .defer = policy})
                                 .batch(16, kShape);
    BatchChecksum sum;
    std::vector<std::uint64_t> numbers;
    for (const Batch& batch : d) {
      for (std::size_t i = 0; i < batch.size(); ++i) {
        numbers.push_back(static_cast<std::uint64_t>(batch.labels()[i]));
        if (batch.samples()[i].deferred) {
          sum.add(batch.deferred_bytes(i));
        } else {
          sum.add({batch.image(i).data, kShape.bytes()});
        }
      }
    }
    if (threads == 1) {
      first = numbers;
      first_sum = sum.value();
    } else {
      EXPECT_EQ(numbers, first) << threads << " threads";
      EXPECT_EQ(sum.value(), first_sum) << threads << " threads";
    }
  }
}

TEST(Defer, OnlyTheLastMapOfABatchedChainIsOffered) {
  const testing::Watchdog watchdog(60s, "OnlyTheLastMapOfABatchedChainIsOffered");
  auto policy = std::make_shared<EvenIndices>();
  // fill_or_defer is followed by another map: it must not be offered deferral (the next op needs pixels).
  const BatchedDataset d = numbered_memory(20, kNoClasses)
                               .map(fill_or_defer())
                               .map(testing::negate_into_new_image())
                               .with_options({.threads = 2, .defer = policy})
                               .batch(4, kShape);
  for (const Batch& batch : d) EXPECT_EQ(batch.deferred_count(), 0u);
  EXPECT_EQ(policy->asked, 0);
  // Nor when samples are iterated one by one (there is no batch to carry the bytes).
  const Dataset samples = numbered_memory(6, kNoClasses).map(fill_or_defer()).with_options({.defer = policy});
  for (const Sample& sample : samples) EXPECT_FALSE(sample.deferred());
  EXPECT_EQ(policy->asked, 0);
}

TEST(Defer, StatsCountTheDeferredSamples) {
  auto policy = std::make_shared<EvenIndices>();
  const BatchedDataset d = numbered_memory(30, kNoClasses)
                               .map(fill_or_defer())
                               .with_options({.threads = 2, .defer = policy})
                               .batch(10, kShape);
  auto it = d.begin();
  while (it.next()) {
  }
  EXPECT_EQ(it.stats().deferred, 15u);
  EXPECT_NE(format_stats(it.stats()).find("deferred 15"), std::string::npos) << format_stats(it.stats());
}

TEST(Defer, ADescriptorTooLongFailsTheElementInItsStage) {
  auto policy = std::make_shared<EvenIndices>();
  const SampleOp too_long{"too_long", [](Sample& sample) {
                            if (sample.defer_policy() && sample.defer_policy()->should_defer(sample))
                              sample.defer(std::vector<std::byte>(kMaxDeferredDescriptor + 1));
                            fill_from_seed(kShape).apply(sample);
                          }};
  const BatchedDataset d = numbered_memory(4, kNoClasses)
                               .map(too_long)
                               .with_options({.threads = 1, .defer = policy})
                               .batch(2, kShape);
  auto it = d.begin();
  try {
    it.next();
    FAIL() << "expected a PipelineError";
  } catch (const PipelineError& error) {
    EXPECT_NE(std::string(error.what()).find("too_long"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("descriptor"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace conveyor
