// Each file of the catalogue on its own, between two good images: with on_error = fail a bad file stops
// the epoch with a PipelineError naming the file, the stage and the reason, after the good image before
// it; with on_error = skip only the bad file is dropped, counted once under its reason. A good file (CMYK,
// progressive, gray, arithmetic, 1x1, ...) is delivered in both modes.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bad_inputs.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using testing::FileCase;

// before.jpg, <case>.jpg, after.jpg in that order, labels 0, 1, 2.
struct Sandwich {
  testing::TempDir dir;
  std::vector<std::string> paths;

  explicit Sandwich(const FileCase& c) {
    paths = {(dir / "before.jpg").string(), (dir / (c.name + ".jpg")).string(), (dir / "after.jpg").string()};
    testing::write_file(paths[0], testing::make_jpeg(24, 32, 3, 101));
    testing::write_file(paths[1], c.bytes);
    testing::write_file(paths[2], testing::make_jpeg(32, 24, 3, 102));
  }
  Dataset dataset(const std::vector<SampleOp>& ops, OnError on_error) const {
    return testing::with_ops(Dataset::files(paths, {0, 1, 2}), ops)
        .with_options({.threads = 2, .on_error = on_error, .seed = 5});
  }
};

class EachFile : public ::testing::TestWithParam<FileCase> {};

TEST_P(EachFile, FailModeStopsAtTheBadFileNamingFileStageAndReason) {
  const FileCase& c = GetParam();
  const Sandwich files(c);
  const testing::Watchdog watchdog(std::chrono::seconds(20), "fail mode on " + c.name);
  SampleIterator it = files.dataset(testing::decode_chain(), OnError::fail).begin();
  std::vector<std::int64_t> labels;
  std::optional<PipelineError> error;
  try {
    while (std::optional<Sample> sample = it.next()) {
      EXPECT_EQ(sample->image().shape(), testing::kOutputShape);
      labels.push_back(sample->label);
    }
  } catch (const PipelineError& e) {
    error = e;
  }
  if (c.good()) {
    EXPECT_FALSE(error) << error->what();
    EXPECT_EQ(labels, (std::vector<std::int64_t>{0, 1, 2}));
    return;
  }
  ASSERT_TRUE(error) << c.name << " was delivered";
  EXPECT_EQ(labels, std::vector<std::int64_t>{0}) << "the good image before the bad one comes first";
  EXPECT_EQ(error->path(), files.paths[1]);
  EXPECT_EQ(error->stage(), c.stage);
  EXPECT_NE(error->reason().find("(" + c.kind + ")"), std::string::npos) << error->reason();
  const std::string message = error->what();
  EXPECT_NE(message.find(files.paths[1]), std::string::npos) << message;
  EXPECT_NE(message.find(c.stage), std::string::npos) << message;
  EXPECT_FALSE(it.next()) << "the epoch ends at the error";
}

TEST_P(EachFile, SkipModeDropsOnlyTheBadFileAndCountsItsReason) {
  const FileCase& c = GetParam();
  const Sandwich files(c);
  const testing::Watchdog watchdog(std::chrono::seconds(20), "skip mode on " + c.name);
  BatchIterator it = files.dataset(testing::decode_chain(), OnError::skip).batch(2).begin();
  std::vector<std::int64_t> labels;
  while (std::optional<Batch> batch = it.next())
    labels.insert(labels.end(), batch->labels().begin(), batch->labels().end());
  const PipelineStats stats = it.stats();
  if (c.good()) {
    EXPECT_EQ(labels, (std::vector<std::int64_t>{0, 1, 2}));
    EXPECT_EQ(stats.skipped, 0u);
    return;
  }
  EXPECT_EQ(labels, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(stats.skipped, 1u);
  EXPECT_EQ(stats.elements_out, 2u);
  EXPECT_EQ(stats.skip_reasons, (std::map<std::string, std::uint64_t>{{c.skip_key(), 1}}));
  ASSERT_EQ(stats.skipped_samples.size(), 1u);
  EXPECT_EQ(stats.skipped_samples[0].path, files.paths[1]);
  EXPECT_EQ(stats.skipped_samples[0].stage, c.stage);
  EXPECT_NE(stats.skipped_samples[0].reason.find("(" + c.kind + ")"), std::string::npos);
}

// The fused random-resized-crop decode decodes only a window: a file cut inside its scan may still give an
// intact window (then it is delivered whole), but every other bad file fails whatever the window, and
// every good file decodes.
TEST_P(EachFile, TheCropChainDeliversOrRefusesAsTheWindowAllows) {
  const FileCase& c = GetParam();
  const Sandwich files(c);
  const testing::Watchdog watchdog(std::chrono::seconds(20), "crop chain on " + c.name);
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    SampleIterator it = testing::with_ops(Dataset::files({files.paths[1]}), testing::crop_chain())
                            .with_options({.threads = 1, .on_error = OnError::skip, .seed = seed})
                            .begin();
    std::uint64_t delivered = 0;
    while (std::optional<Sample> sample = it.next()) {
      EXPECT_EQ(sample->image().shape(), testing::kOutputShape);
      ++delivered;
    }
    const PipelineStats stats = it.stats();
    EXPECT_EQ(delivered + stats.skipped, 1u) << "seed " << seed;
    if (c.good()) {
      EXPECT_EQ(delivered, 1u) << "seed " << seed;
    } else if (c.fails_every_window) {
      EXPECT_EQ(delivered, 0u) << "seed " << seed;
    }
    if (stats.skipped == 1) {
      EXPECT_EQ(stats.skip_reasons.count("decode_random_resized_crop: " + c.kind), 1u) << "seed " << seed;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<FileCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Catalogue, EachFile, ::testing::ValuesIn(testing::file_cases()), case_name);

}  // namespace
}  // namespace conveyor
