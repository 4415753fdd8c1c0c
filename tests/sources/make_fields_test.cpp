// The make_fields tool: shapes, masks and boxes over photos in three layouts that read back as one data set
// (the segmentation folder's masks are the shards' masks, COCO's boxes are the shards' boxes, each box lies
// on its class's mask pixels), the same bytes at any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "conveyor/dataset.h"
#include "conveyor/fields/keypoints.h"
#include "conveyor/ops.h"
#include "fixtures.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

testing::ProcessResult make_fields(const fs::path& input, const fs::path& output,
                                   const std::string& threads) {
  return testing::run_process(
      {testing::program_path("CONVEYOR_MAKE_FIELDS", CONVEYOR_MAKE_FIELDS), "--input", input.string(),
       "--out", output.string(), "--threads", threads, "--classes", "5"},
      {}, std::chrono::seconds(60));
}

std::vector<std::uint8_t> contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<Sample> read_all(const Dataset& dataset) {
  std::vector<Sample> samples;
  for (const Sample& sample : dataset.map(ops::decode()).with_options({.threads = 2}))
    samples.push_back(sample);
  return samples;
}

TEST(MakeFields, ThreeLayoutsOfOneDataSetTheSameAtAnyThreadCount) {
  TempDir dir;
  const fs::path photos = testing::make_jpeg_folder(dir, 2, 4, 90, 120);
  const testing::ProcessResult one = make_fields(photos, dir / "one", "1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("8 images"), std::string::npos) << one.out;
  const testing::ProcessResult two = make_fields(photos, dir / "two", "2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir / "one")) {
    if (!entry.is_regular_file()) continue;
    EXPECT_EQ(contents(entry.path()), contents(dir / "two" / entry.path().lexically_relative(dir / "one")))
        << entry.path();
  }

  const std::vector<Sample> segmentation = read_all(Dataset::segmentation_folder(dir / "one"));
  const std::vector<Sample> coco = read_all(
      Dataset::coco_detection(dir / "one/instances.json", dir / "one/images", {.contiguous_classes = false}));
  TarShardOptions options;
  options.mask_extension = "mask.png";
  options.fields_extension = "json";
  options.shuffle_shards = false;
  const std::vector<Sample> shards =
      read_all(Dataset::tar_shard_index((dir / "one/shards/shards.json").string(), options));
  ASSERT_EQ(segmentation.size(), 8u);
  ASSERT_EQ(coco.size(), 8u);
  ASSERT_EQ(shards.size(), 8u);
  std::size_t boxes = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    const ConstMaskView mask = segmentation[i].mask();
    ASSERT_EQ(mask.shape(), shards[i].mask().shape());
    EXPECT_EQ(std::memcmp(mask.data, shards[i].mask().data, mask.shape().bytes()), 0) << i;
    EXPECT_EQ(coco[i].boxes.boxes().size(), shards[i].boxes.size()) << i;
    EXPECT_EQ(shards[i].label, static_cast<std::int64_t>(i / 4)) << "the photo's class folder";
    for (std::size_t b = 0; b < coco[i].boxes.size(); ++b, ++boxes) {
      const Box box = coco[i].boxes.boxes()[b];
      const std::int64_t cls = coco[i].boxes.classes()[b];
      EXPECT_EQ(box, shards[i].boxes.boxes()[b]);
      EXPECT_EQ(cls, shards[i].boxes.classes()[b]);
      int inside = 0;
      for (int y = static_cast<int>(box.y0); y < static_cast<int>(box.y1); ++y)
        for (int x = static_cast<int>(box.x0); x < static_cast<int>(box.x1); ++x)
          inside += mask.at(y, x) == static_cast<std::uint32_t>(cls) ? 1 : 0;
      EXPECT_GE(inside, 16) << "image " << i << " box " << b;
    }
  }
  EXPECT_GT(boxes, 8u);
}

TEST(MakeFields, KeypointsLieOnTheirShapesPixels) {
  TempDir dir;
  const fs::path photos = testing::make_jpeg_folder(dir, 2, 3, 90, 120);
  const testing::ProcessResult made = make_fields(photos, dir / "set", "1");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::vector<Sample> segmentation = read_all(Dataset::segmentation_folder(dir / "set"));
  const std::vector<Sample> coco = read_all(
      Dataset::coco_detection(dir / "set/keypoints.json", dir / "set/images", {.contiguous_classes = false}));
  const std::vector<Sample> plain = read_all(
      Dataset::coco_detection(dir / "set/instances.json", dir / "set/images", {.contiguous_classes = false}));
  ASSERT_EQ(coco.size(), 6u);
  for (std::size_t i = 0; i < coco.size(); ++i) {
    EXPECT_EQ(coco[i].boxes, plain[i].boxes) << "the same annotations as instances.json";
    const KeypointsField* keypoints = coco[i].find_field<KeypointsField>();
    ASSERT_NE(keypoints, nullptr);
    ASSERT_EQ(keypoints->points, 3);
    ASSERT_EQ(keypoints->instances(), coco[i].boxes.size());
    const ConstMaskView mask = segmentation[i].mask();
    for (std::size_t b = 0; b < keypoints->instances(); ++b) {
      const auto cls = static_cast<std::uint32_t>(coco[i].boxes.classes()[b]);
      const std::span<const Keypoint> points = keypoints->instance(b);  // top, left, right
      for (const Keypoint& point : points) {
        EXPECT_EQ(point.v, 2);
        EXPECT_EQ(mask.at(static_cast<int>(point.y), static_cast<int>(point.x)), cls)
            << "image " << i << " box " << b;
      }
      EXPECT_LE(points[1].x, points[2].x);
      EXPECT_LE(points[0].y, std::min(points[1].y, points[2].y));
    }
  }
}

}  // namespace
}  // namespace conveyor
