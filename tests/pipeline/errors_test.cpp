// Errors: on_error = fail delivers a PipelineError at the failed element's position; on_error = skip drops
// the element, keeps batches full and counts the reasons.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/random.h"
#include "fixtures.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using testing::fill_from_seed;
using testing::number_of;
using testing::numbered_memory;

constexpr ImageShape kShape{4, 4, 3};
constexpr std::int64_t kNoClasses = 1'000'000;

SampleOp explode_at(std::uint64_t number) {
  return SampleOp{"explode", [number](Sample& s) {
                    if (number_of(s) == number) throw std::runtime_error("boom " + std::to_string(number));
                  }};
}

TEST(Fail, TheErrorReachesTheConsumerAtTheFailedElementsBatch) {
  for (const int threads : {1, 4, 8}) {
    BatchIterator it = numbered_memory(40, kNoClasses)
                           .map(fill_from_seed(kShape))
                           .map(explode_at(13))
                           .with_options({.threads = threads})
                           .batch(4)
                           .begin();
    std::vector<std::int64_t> labels;
    try {
      while (std::optional<Batch> batch = it.next())
        labels.insert(labels.end(), batch->labels().begin(), batch->labels().end());
      FAIL() << "no error";
    } catch (const PipelineError& error) {
      EXPECT_EQ(error.path(), "<memory:13>");
      EXPECT_EQ(error.stage(), "explode");
      EXPECT_EQ(error.reason(), "boom 13");
    }
    EXPECT_EQ(labels.size(), 12u) << threads << " threads";  // the three batches before element 13's
    EXPECT_FALSE(it.next().has_value());
  }
}

TEST(Fail, WithoutBatchingEveryEarlierSampleComesFirst) {
  SampleIterator it = numbered_memory(30).map(explode_at(17)).with_options({.threads = 4}).begin();
  std::uint64_t expected = 0;
  try {
    while (std::optional<Sample> s = it.next()) EXPECT_EQ(number_of(*s), expected++);
    FAIL() << "no error";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.path(), "<memory:17>");
  }
  EXPECT_EQ(expected, 17u);
}

TEST(Fail, TheFirstElementFailingWhileTheShapeIsProbedIsReportedToo) {
  BatchIterator it = numbered_memory(10).map(fill_from_seed(kShape)).map(explode_at(0)).batch(4).begin();
  EXPECT_THROW(it.next(), PipelineError);
  EXPECT_FALSE(it.next());
}

TEST(Skip, CountsAreExactAndEveryGoodElementComesOnceInOrder) {
  // one_in_seven decides by the seed alone, so the expected drops can be listed up front.
  const std::uint64_t seed = 11;
  std::vector<std::int64_t> expected;
  std::uint64_t failures = 0;
  for (std::uint64_t i = 0; i < 300; ++i) {
    if (testing::one_in_seven(sample_seed(seed, 0, i))) {
      ++failures;
    } else {
      expected.push_back(static_cast<std::int64_t>(i));
    }
  }
  ASSERT_GT(failures, 20u);
  for (const int threads : {1, 3, 8}) {
    BatchIterator it = numbered_memory(300, kNoClasses)
                           .map(fill_from_seed(kShape))
                           .map(testing::throw_when(testing::one_in_seven))
                           .with_options({.threads = threads, .on_error = OnError::skip, .seed = seed})
                           .batch(8)
                           .begin();
    std::vector<std::int64_t> labels;
    std::vector<std::size_t> sizes;
    while (std::optional<Batch> batch = it.next()) {
      labels.insert(labels.end(), batch->labels().begin(), batch->labels().end());
      sizes.push_back(batch->size());
    }
    EXPECT_EQ(labels, expected);
    for (std::size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], 8u);
    const PipelineStats stats = it.stats();
    EXPECT_EQ(stats.skipped, failures);
    EXPECT_EQ(stats.skip_reasons.at("explode: exception"), failures);
    ASSERT_EQ(stats.skipped_samples.size(), failures);
    EXPECT_EQ(stats.skipped_samples[0].stage, "explode");
    EXPECT_EQ(stats.skipped_samples[0].reason.rfind("boom ", 0), 0u);
    EXPECT_EQ(stats.skipped_samples[0].path.rfind("<memory:", 0), 0u);
    EXPECT_EQ(stats.elements_out, expected.size());
  }
}

TEST(Skip, ReadFailuresAreCountedAsIo) {
  testing::TempDir dir;
  std::vector<std::string> paths;
  for (int i = 0; i < 10; ++i) {
    paths.push_back((dir / std::to_string(i)).string());
    if (i % 3 != 0) testing::write_file(paths.back(), std::vector<std::uint8_t>{1, 2, 3});
  }
  SampleIterator it = Dataset::files(paths).with_options({.threads = 2, .on_error = OnError::skip}).begin();
  int delivered = 0;
  while (it.next()) ++delivered;
  EXPECT_EQ(delivered, 6);
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.skip_reasons.at("read: io"), 4u);
  ASSERT_EQ(stats.skipped_samples.size(), 4u);
  for (const SkippedSample& skipped : stats.skipped_samples) {
    EXPECT_EQ(skipped.stage, "read");
    EXPECT_NE(skipped.reason.find("No such file"), std::string::npos) << skipped.reason;
  }
  // The four missing files (0, 3, 6, 9), each once.
  std::vector<std::string> skipped_paths;
  for (const SkippedSample& skipped : stats.skipped_samples) skipped_paths.push_back(skipped.path);
  std::sort(skipped_paths.begin(), skipped_paths.end());
  EXPECT_EQ(skipped_paths, (std::vector<std::string>{paths[0], paths[3], paths[6], paths[9]}));
}

TEST(Skip, TheReasonKindComesFromTheExceptionType) {
  SampleOp decode{"decode", [](Sample& s) {
                    if (number_of(s) == 2) throw DecodeError(DecodeFailure::truncated, "ends early");
                    if (number_of(s) == 4) throw 42;  // not even a std::exception
                  }};
  SampleIterator it = numbered_memory(6).map(decode).with_options({.on_error = OnError::skip}).begin();
  while (it.next()) {
  }
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.skip_reasons.at("decode: truncated"), 1u);
  EXPECT_EQ(stats.skip_reasons.at("decode: unknown"), 1u);
  const StageStats* decode_stage = testing::stage_named(stats, "decode");
  ASSERT_NE(decode_stage, nullptr) << "no stage named after the op 'decode'";
  EXPECT_EQ(decode_stage->failures, 2u);
  EXPECT_EQ(decode_stage->count, 6u);
}

TEST(Skip, ResultsDoNotDependOnTheThreadCount) {
  auto run = [](int threads) {
    return testing::checksum_of(numbered_memory(200, 7)
                                    .shuffle(50, 3)
                                    .map(fill_from_seed(kShape))
                                    .map(testing::throw_when(testing::one_in_seven))
                                    .with_options({.threads = threads, .on_error = OnError::skip, .seed = 1})
                                    .batch(6));
  };
  EXPECT_EQ(run(1), run(8));
}

}  // namespace
}  // namespace conveyor
