// The sources of annotated images: segmentation folders (image and mask matched by stem), COCO detection
// JSON, and WebDataset shards whose samples carry a mask and a boxes member, streamed, read at random and
// over HTTP. Each gives the sample's fields as its files hold them; what is missing or malformed is a clear
// error or a counted skip.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "support/http_server.h"
#include "support/scenes.h"
#include "support/tar_files.h"
#include "support/temp_dir.h"
#include "support/test_images.h"

namespace conveyor {
namespace {

using testing::TempDir;
using testing::write_file;

std::vector<std::uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

std::vector<Sample> all_samples(const Dataset& dataset) {
  std::vector<Sample> samples;
  for (const Sample& sample : dataset.with_options({.threads = 2})) samples.push_back(sample);
  return samples;
}

// ---- segmentation folders ----

TEST(SegmentationFolder, ImagesAndMasksPairByTheirPathWithoutExtension) {
  TempDir dir;
  const testing::Scene a = testing::make_scene(30, 40, 2, 1), b = testing::make_scene(20, 25, 1, 2);
  write_file(dir / "images/a.jpg", a.jpeg);
  write_file(dir / "masks/a.png", a.mask_png);
  write_file(dir / "images/city/b.png", ops::encode_png(b.image.view()));  // a PNG image, in a sub-folder
  write_file(dir / "masks/city/b.png", b.mask_png);
  const Dataset dataset = Dataset::segmentation_folder(dir.path());
  EXPECT_EQ(dataset.source_size(), 2u);
  EXPECT_TRUE(dataset.fields().mask);
  EXPECT_FALSE(dataset.fields().boxes);
  const std::vector<Sample> samples = all_samples(dataset.map(ops::decode()));
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].path, (dir / "images/a.jpg").string());
  EXPECT_EQ(samples[1].path, (dir / "images/city/b.png").string());
  EXPECT_EQ(samples[0].mask().shape(), (MaskShape{30, 40, MaskType::uint8}));
  EXPECT_EQ(std::memcmp(samples[1].mask().data, b.mask.view().data, b.mask.shape().bytes()), 0);
  EXPECT_EQ(testing::max_abs_diff(samples[1].image(), b.image.view()), 0);
}

TEST(SegmentationFolder, AnUnpairedFileIsAnErrorNamingBothPathsOrACountedSkip) {
  TempDir dir;
  const testing::Scene a = testing::make_scene(20, 20, 1, 1);
  write_file(dir / "images/a.jpg", a.jpeg);
  write_file(dir / "masks/a.png", a.mask_png);
  write_file(dir / "images/lonely.jpg", a.jpeg);
  write_file(dir / "masks/orphan.png", a.mask_png);
  try {
    Dataset::segmentation_folder(dir.path());
    FAIL() << "made";
  } catch (const InvalidArgument& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find((dir / "images/lonely.jpg").string()), std::string::npos) << what;
    EXPECT_NE(what.find((dir / "masks/lonely.png").string()), std::string::npos) << what;
  }
  const Dataset skipping = Dataset::segmentation_folder(dir.path(), {.unpaired = Unpaired::skip});
  EXPECT_EQ(skipping.source_size(), 1u);
  SampleIterator it = skipping.map(ops::decode()).with_options({.threads = 1}).begin();
  std::size_t count = 0;
  while (it.next()) ++count;
  EXPECT_EQ(count, 1u);
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.skip_reasons.at("source: left_out"), 2u);
  std::set<std::string> paths;
  for (const SkippedSample& skipped : stats.skipped_samples) paths.insert(skipped.path);
  EXPECT_TRUE(paths.contains((dir / "masks/orphan.png").string()));
}

TEST(SegmentationFolder, AMissingFolderOrNoPairIsAnError) {
  TempDir dir;
  EXPECT_THROW(Dataset::segmentation_folder(dir.path()), IoError);
  write_file(dir / "images/a.jpg", testing::make_scene(8, 8, 1, 1).jpeg);
  write_file(dir / "masks/b.png", testing::make_scene(8, 8, 1, 1).mask_png);
  EXPECT_THROW(Dataset::segmentation_folder(dir.path(), {.unpaired = Unpaired::skip}), InvalidArgument);
}

// ---- COCO ----

std::string coco_json() {
  return R"({
    "images": [{"id": 7, "file_name": "a.jpg", "width": 50, "height": 40},
               {"id": 3, "file_name": "sub/b.jpg", "width": 50, "height": 40},
               {"id": 9, "file_name": "c.jpg", "width": 50, "height": 40}],
    "annotations": [
      {"id": 1, "image_id": 7, "bbox": [1, 2, 10, 20], "category_id": 18, "iscrowd": 0,
       "segmentation": [[1, 2, 3, 4, 5, 6]]},
      {"id": 2, "image_id": 7, "bbox": [5, 5, 4, 4], "category_id": 1, "iscrowd": 1,
       "segmentation": {"counts": [1, 2], "size": [40, 50]}},
      {"id": 3, "image_id": 3, "bbox": [0, 0, 50, 40], "category_id": 1},
      {"id": 4, "image_id": 3, "bbox": [3, 3, 0, 5], "category_id": 1}],
    "categories": [{"id": 1, "name": "person"}, {"id": 18, "name": "dog"}]
  })";
}

void make_coco_folder(const TempDir& dir) {
  const auto jpeg = testing::make_scene(40, 50, 1, 1).jpeg;
  write_file(dir / "images/a.jpg", jpeg);
  write_file(dir / "images/sub/b.jpg", jpeg);
  write_file(dir / "images/c.jpg", jpeg);
  write_file(dir / "instances.json", bytes_of(coco_json()));
}

TEST(CocoDetection, BoxesComeFromBboxWithContiguousClassesAndCrowdDropped) {
  const TempDir dir;
  make_coco_folder(dir);
  const Dataset dataset = Dataset::coco_detection(dir / "instances.json", dir / "images");
  EXPECT_EQ(dataset.source_size(), 3u);
  EXPECT_TRUE(dataset.fields().boxes);
  EXPECT_EQ(dataset.class_names(), (std::vector<std::string>{"person", "dog"}));
  EXPECT_EQ(dataset.source_path(1), (dir / "images/sub/b.jpg").string());
  const std::vector<Sample> samples = all_samples(dataset);
  ASSERT_EQ(samples.size(), 3u);
  ASSERT_EQ(samples[0].boxes.size(), 1u);  // the crowd box is dropped
  EXPECT_EQ(samples[0].boxes.boxes()[0], (Box{1, 2, 11, 22}));
  EXPECT_EQ(samples[0].boxes.classes()[0], 1);  // "dog", the second category by id
  ASSERT_EQ(samples[1].boxes.size(), 1u);       // the degenerate box (w = 0) is left out
  EXPECT_EQ(samples[1].boxes.classes()[0], 0);
  EXPECT_TRUE(samples[2].boxes.empty());
  EXPECT_EQ(samples[0].label, -1);
}

TEST(CocoDetection, CrowdBoxesKeptAreFlaggedAndOriginalIdsCanStay) {
  const TempDir dir;
  make_coco_folder(dir);
  const Dataset dataset =
      Dataset::coco_detection(dir / "instances.json", dir / "images",
                              {.crowd = CrowdBoxes::keep, .contiguous_classes = false, .skip_empty = true});
  EXPECT_EQ(dataset.source_size(), 2u);
  EXPECT_TRUE(dataset.class_names().empty());
  const std::vector<Sample> samples = all_samples(dataset);
  ASSERT_EQ(samples[0].boxes.size(), 2u);
  EXPECT_EQ(samples[0].boxes.classes()[0], 18);
  EXPECT_EQ(samples[0].boxes.crowd()[0], 0);
  EXPECT_EQ(samples[0].boxes.crowd()[1], 1);
  EXPECT_EQ(samples[0].boxes.classes()[1], 1);
}

TEST(CocoDetection, BadJsonNamesWhatIsWrong) {
  TempDir dir;
  const auto error_of = [&](const std::string& text) {
    write_file(dir / "bad.json", bytes_of(text));
    try {
      Dataset::coco_detection(dir / "bad.json", dir.path());
    } catch (const InvalidArgument& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("{").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"images": [], "annotations": []})").find("\"categories\""), std::string::npos);
  EXPECT_NE(error_of(R"({"images": [{"id": 1, "file_name": "a.jpg"}], "categories": [{"id": 1, "name": "x"}],
                         "annotations": [{"id": 5, "image_id": 2, "bbox": [0, 0, 1, 1], "category_id": 1}]})")
                .find("annotation 5 is of image 2"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"images": [{"id": 1, "file_name": "a.jpg"}], "categories": [{"id": 1, "name": "x"}],
                         "annotations": [{"id": 6, "image_id": 1, "bbox": [0, 0, 1, 1], "category_id": 4}]})")
                .find("category 4"),
            std::string::npos);
  EXPECT_THROW(Dataset::coco_detection(dir / "missing.json", dir.path()), IoError);
}

TEST(CocoDetection, AMissingImageFailsInTheReadStageNamingIt) {
  const TempDir dir;
  make_coco_folder(dir);
  std::filesystem::remove(dir / "images/c.jpg");
  SampleIterator it =
      Dataset::coco_detection(dir / "instances.json", dir / "images").with_options({.threads = 1}).begin();
  it.next();
  it.next();
  try {
    it.next();
    FAIL() << "read";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.stage(), "read");
    EXPECT_EQ(error.path(), (dir / "images/c.jpg").string());
  }
}

// ---- shards with several fields per sample ----

TarShardOptions field_shards(bool random_access) {
  TarShardOptions options;
  options.image_extensions = {"jpg", "png"};
  options.mask_extension = "mask.png";
  options.fields_extension = "json";
  options.random_access = random_access;
  options.shuffle_shards = false;
  options.parallel_shards = 1;
  return options;
}

std::string boxes_json(const BoxList& boxes, std::vector<std::int64_t> tags = {}) {
  nlohmann::json json;
  json["boxes"] = nlohmann::json::array();
  json["classes"] = nlohmann::json::array();
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const Box& b = boxes.boxes()[i];
    json["boxes"].push_back({b.x0, b.y0, b.x1, b.y1});
    json["classes"].push_back(boxes.classes()[i]);
  }
  json["tags"] = tags;
  return json.dump();
}

std::vector<testing::TarMember> scene_members(int count) {
  std::vector<testing::TarMember> members;
  for (int i = 0; i < count; ++i) {
    const testing::Scene scene = testing::make_scene(30, 40, 1 + i % 3, static_cast<std::uint64_t>(i + 1));
    const std::string key = "s" + std::to_string(i);
    members.push_back({key + ".jpg", scene.jpeg});
    members.push_back({key + ".mask.png", scene.mask_png});
    members.push_back(testing::text_member(key + ".json", boxes_json(scene.boxes, {i})));
    members.push_back(testing::text_member(key + ".cls", std::to_string(i)));
  }
  return members;
}

void expect_scene_samples(const std::vector<Sample>& samples, int count) {
  ASSERT_EQ(samples.size(), static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const testing::Scene scene = testing::make_scene(30, 40, 1 + i % 3, static_cast<std::uint64_t>(i + 1));
    const Sample& sample = samples[static_cast<std::size_t>(i)];
    EXPECT_EQ(sample.label, i);
    EXPECT_EQ(sample.boxes, scene.boxes);
    EXPECT_EQ(sample.tags, std::vector<std::int64_t>{i});
    EXPECT_EQ(std::memcmp(sample.mask().data, scene.mask.view().data, scene.mask.shape().bytes()), 0);
  }
}

TEST(FieldShards, StreamedAndReadAtRandomSamplesCarryTheirMaskAndBoxes) {
  TempDir dir;
  testing::write_tar(dir / "a.tar", scene_members(5));
  for (bool random_access : {false, true}) {
    const Dataset dataset = Dataset::tar_shards({(dir / "a.tar").string()}, field_shards(random_access));
    EXPECT_TRUE(dataset.fields().mask);
    EXPECT_TRUE(dataset.fields().boxes);
    expect_scene_samples(all_samples(dataset.map(ops::decode())), 5);
  }
}

TEST(FieldShards, OverHttpToo) {
  const std::vector<std::uint8_t> shard = testing::tar_bytes(scene_members(3));
  testing::HttpTestServer server(testing::serve_files({{"/a.tar", shard}}));
  expect_scene_samples(
      all_samples(Dataset::tar_shards({server.url("/a.tar")}, field_shards(false)).map(ops::decode())), 3);
}

TEST(FieldShards, AMissingMemberOrBadJsonFailsTheSampleByKind) {
  TempDir dir;
  std::vector<testing::TarMember> members = scene_members(3);
  members.erase(members.begin() + 1);  // s0 without its mask
  members[5] =
      testing::text_member("s1.json", R"({"boxes": [[1, 2, 3]], "classes": [1]})");  // s1: a box of 3
  testing::write_tar(dir / "a.tar", members);
  for (bool random_access : {false, true}) {
    SampleIterator it = Dataset::tar_shards({(dir / "a.tar").string()}, field_shards(random_access))
                            .map(ops::decode())
                            .with_options({.threads = 1, .on_error = OnError::skip})
                            .begin();
    std::size_t count = 0;
    while (it.next()) ++count;
    EXPECT_EQ(count, 1u);
    const PipelineStats stats = it.stats();
    EXPECT_EQ(stats.skip_reasons.at("read: no_mask"), 1u) << random_access;
    EXPECT_EQ(stats.skip_reasons.at("read: bad_fields"), 1u) << random_access;
  }
}

TEST(FieldShards, WithoutTheOptionsMaskAndJsonMembersArePassedOver) {
  TempDir dir;
  testing::write_tar(dir / "a.tar", scene_members(2));
  TarShardOptions plain;
  plain.parallel_shards = 1;
  const Dataset dataset = Dataset::tar_shards({(dir / "a.tar").string()}, plain);
  EXPECT_FALSE(dataset.fields().mask || dataset.fields().boxes);
  for (const Sample& sample : all_samples(dataset)) {
    EXPECT_TRUE(sample.encoded_mask.empty());
    EXPECT_TRUE(sample.boxes.empty());
  }
}

}  // namespace
}  // namespace conveyor
