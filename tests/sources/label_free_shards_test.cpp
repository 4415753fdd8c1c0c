// Shards whose samples carry no label member (segmentation: jpg + mask.png + json; detection: jpg + json)
// are read like classification shards: the label is -1, streamed or read at random, and only
// TarShardOptions::require_label makes a missing label an error.
#include <gtest/gtest.h>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "support/scenes.h"
#include "support/tar_files.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using testing::TempDir;

// Segmentation samples as WebDataset writes them, without ".cls".
std::vector<testing::TarMember> segmentation_members(int count) {
  std::vector<testing::TarMember> members;
  for (int i = 0; i < count; ++i) {
    const testing::Scene scene = testing::make_scene(30, 40, 1 + i % 3, static_cast<std::uint64_t>(i + 1));
    const std::string key = "s" + std::to_string(10000 + i);
    members.push_back({key + ".jpg", scene.jpeg});
    members.push_back({key + ".mask.png", scene.mask_png});
    members.push_back(testing::text_member(key + ".json", "{}"));
  }
  return members;
}

TarShardOptions segmentation(bool random_access) {
  TarShardOptions options;
  options.mask_extension = "mask.png";
  options.fields_extension = "json";
  options.shuffle_shards = false;
  options.random_access = random_access;
  return options;
}

TEST(LabelFreeShards, SegmentationSamplesWithoutClsAreReadWithLabelMinusOne) {
  TempDir dir;
  testing::write_tar(dir / "seg.tar", segmentation_members(4));
  for (const bool random_access : {false, true}) {
    const Dataset dataset = Dataset::tar_shards({(dir / "seg.tar").string()}, segmentation(random_access));
    EXPECT_TRUE(dataset.fields().mask);
    SampleIterator it = dataset.map(ops::decode()).with_options({.threads = 2}).begin();
    int count = 0;
    while (std::optional<Sample> sample = it.next()) {
      EXPECT_EQ(sample->label, -1);
      EXPECT_EQ(sample->image().shape().height, 30);
      ++count;
    }
    EXPECT_EQ(count, 4) << (random_access ? "random access" : "streamed");
    EXPECT_EQ(it.stats().skipped, 0u);
  }
}

TEST(LabelFreeShards, RequireLabelMakesAMissingClsAnError) {
  TempDir dir;
  testing::write_tar(dir / "seg.tar", segmentation_members(1));
  TarShardOptions options = segmentation(false);
  options.require_label = true;
  SampleIterator it = Dataset::tar_shards({(dir / "seg.tar").string()}, options).begin();
  try {
    it.next();
    FAIL() << "no label";
  } catch (const PipelineError& error) {
    EXPECT_NE(error.reason().find("sample 's10000' has no '.cls' label member"), std::string::npos)
        << error.reason();
  }
}

}  // namespace
}  // namespace conveyor
