// COCO keypoints (src/sources/coco_keypoints.cpp): a file whose categories list keypoint names carries them,
// read for exactly the annotations whose boxes the source keeps, K from the names, a mirror's swaps from
// "left"/"right" in them; an annotation without keypoints gets invisible ones; a malformed one is an error
// naming it. A file without names has no keypoints field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/fields/keypoints.h"
#include "conveyor/ops.h"
#include "support/scenes.h"
#include "support/temp_dir.h"
#include "support/test_images.h"

namespace conveyor {
namespace {

using testing::TempDir;
using testing::write_file;

std::vector<std::uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

std::string replaced(std::string text, const std::string& what, const std::string& with) {
  return text.replace(text.find(what), what.size(), with);
}

// Image 7 has a person (keypoints), a crowd and a dog without keypoints; image 3 a degenerate person (left
// out with its keypoints) and a person.
std::string keypoints_json(const std::string& person_keypoints = R"([10, 12, 2, 5, 6, 1, 0, 0, 0])") {
  return R"({
    "images": [{"id": 7, "file_name": "a.jpg", "width": 50, "height": 40},
               {"id": 3, "file_name": "b.jpg", "width": 50, "height": 40}],
    "annotations": [
      {"id": 1, "image_id": 7, "bbox": [1, 2, 10, 20], "category_id": 1, "num_keypoints": 2,
       "keypoints": )" +
         person_keypoints + R"(},
      {"id": 2, "image_id": 7, "bbox": [5, 5, 4, 4], "category_id": 1, "iscrowd": 1,
       "keypoints": [0, 0, 0, 0, 0, 0, 0, 0, 0]},
      {"id": 3, "image_id": 7, "bbox": [20, 20, 5, 5], "category_id": 18},
      {"id": 4, "image_id": 3, "bbox": [3, 3, 0, 5], "category_id": 1, "keypoints": [1, 1, 2, 2, 2, 2, 3, 3, 2]},
      {"id": 5, "image_id": 3, "bbox": [0, 0, 50, 40], "category_id": 1, "keypoints": [30, 20, 2, 25, 15, 2, 35, 15, 2]}],
    "categories": [{"id": 1, "name": "person", "keypoints": ["nose", "left_eye", "right_eye"]},
                   {"id": 18, "name": "dog"}]
  })";
}

void make_folder(const TempDir& dir, const std::string& json) {
  const auto jpeg = testing::make_scene(40, 50, 1, 1).jpeg;
  write_file(dir / "images/a.jpg", jpeg);
  write_file(dir / "images/b.jpg", jpeg);
  write_file(dir / "keypoints.json", bytes_of(json));
}

std::vector<Sample> all_samples(const Dataset& dataset) {
  std::vector<Sample> samples;
  for (const Sample& sample : dataset.with_options({.threads = 1})) samples.push_back(sample);
  return samples;
}

TEST(CocoKeypoints, AreReadForTheKeptBoxesWithKFromTheNames) {
  const TempDir dir;
  make_folder(dir, keypoints_json());
  const Dataset dataset = Dataset::coco_detection(dir / "keypoints.json", dir / "images");
  EXPECT_EQ(dataset.fields().names(), (std::vector<std::string>{"boxes", "keypoints"}));
  const std::vector<Sample> samples = all_samples(dataset);
  ASSERT_EQ(samples.size(), 2u);
  const KeypointsField* first = samples[0].find_field<KeypointsField>();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->points, 3);
  // The person and the dog (the crowd is dropped with its keypoints): the dog's are not labelled.
  ASSERT_EQ(samples[0].boxes.size(), 2u);
  EXPECT_EQ(first->values,
            (std::vector<Keypoint>{{10, 12, 2}, {5, 6, 1}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}));
  // The degenerate person is left out with its keypoints.
  const KeypointsField* second = samples[1].find_field<KeypointsField>();
  ASSERT_EQ(samples[1].boxes.size(), 1u);
  EXPECT_EQ(second->values, (std::vector<Keypoint>{{30, 20, 2}, {25, 15, 2}, {35, 15, 2}}));
  ASSERT_TRUE(second->flip_indices);
  EXPECT_EQ(*second->flip_indices, (std::vector<int>{0, 2, 1}));
}

TEST(CocoKeypoints, FollowTheImageThroughTheOps) {
  const TempDir dir;
  make_folder(dir, keypoints_json());
  const std::vector<Sample> samples =
      all_samples(Dataset::coco_detection(dir / "keypoints.json", dir / "images")
                      .map(ops::decode())
                      .map(ops::flip_horizontal(1.0)));
  // x -> 50 - x, and the eyes trade names.
  EXPECT_EQ(samples[1].find_field<KeypointsField>()->values,
            (std::vector<Keypoint>{{20, 20, 2}, {15, 15, 2}, {25, 15, 2}}));
}

TEST(CocoKeypoints, MalformedKeypointsNameTheirAnnotation) {
  for (const char* const bad :
       {R"([10, 12, 2, 5, 6])", R"([10, 12, 3, 5, 6, 1, 0, 0, 0])", R"([10, 12, 2, 5, "x", 1, 0, 0, 0])"}) {
    const TempDir dir;
    make_folder(dir, keypoints_json(bad));
    try {
      Dataset::coco_detection(dir / "keypoints.json", dir / "images");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("annotation 1"), std::string::npos) << error.what();
    }
  }
}

TEST(CocoKeypoints, CategoriesMustAgreeOnTheNames) {
  const TempDir dir;
  make_folder(dir, replaced(keypoints_json(), R"({"id": 18, "name": "dog"})",
                            R"({"id": 18, "name": "dog", "keypoints": ["nose", "tail"]})"));
  EXPECT_THROW(Dataset::coco_detection(dir / "keypoints.json", dir / "images"), InvalidArgument);
}

TEST(CocoKeypoints, AFileWithoutNamesHasNoKeypointsField) {
  const TempDir dir;
  make_folder(dir, replaced(keypoints_json(), R"(, "keypoints": ["nose", "left_eye", "right_eye"])", ""));
  const Dataset dataset = Dataset::coco_detection(dir / "keypoints.json", dir / "images");
  EXPECT_EQ(dataset.fields().names(), (std::vector<std::string>{"boxes"}));
  for (const Sample& sample : all_samples(dataset)) EXPECT_EQ(sample.find_field<KeypointsField>(), nullptr);
}

}  // namespace
}  // namespace conveyor
