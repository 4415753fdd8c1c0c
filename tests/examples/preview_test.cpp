// examples/preview: for each format, IIII.png (RGB, size x size), IIII.mask.png when the data has masks (the
// same size, class ids), IIII.json with the label, boxes and classes in output pixels (and the keypoints of
// each box when the data has them), and sheet.png; the boxes stay on their classes' mask pixels. The data is
// make_fields's, over small test photos.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "conveyor/ops/decode_png.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/test_images.h"

namespace conveyor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr int kSize = 48, kCount = 5;

std::vector<std::uint8_t> contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

testing::ProcessResult run(const std::vector<std::string>& args) {
  return testing::run_process(args, {}, std::chrono::seconds(60));
}

// A photo folder and make_fields's three layouts over it, once for every test.
class Preview : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 4; ++i)
        testing::write_file(
            dir_->path() / "photos" / ("class_" + std::to_string(c)) / (std::to_string(i) + ".jpg"),
            testing::make_jpeg(90, 120, 3, static_cast<std::uint64_t>(c * 10 + i)));
    const testing::ProcessResult made = run(
        {testing::program_path("CONVEYOR_MAKE_FIELDS", CONVEYOR_MAKE_FIELDS), "--input",
         (dir_->path() / "photos").string(), "--out", (dir_->path() / "fields").string(), "--threads", "1"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  static void TearDownTestSuite() { delete dir_; }

  static fs::path at(const std::string& name) { return dir_->path() / name; }

  // Runs preview and checks what every format writes; returns the JSON of each sample.
  static std::vector<nlohmann::json> preview(const std::string& format, const fs::path& data, bool masks,
                                             const std::vector<std::string>& extra = {}) {
    const fs::path out = at("out-" + format);
    std::vector<std::string> args{testing::program_path("CONVEYOR_PREVIEW", CONVEYOR_PREVIEW),
                                  "--data",
                                  data.string(),
                                  "--format",
                                  format,
                                  "--size",
                                  std::to_string(kSize),
                                  "--count",
                                  std::to_string(kCount),
                                  "--seed",
                                  "3",
                                  "--out",
                                  out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::ProcessResult shown = run(args);
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    std::vector<nlohmann::json> jsons;
    for (int i = 0; i < kCount; ++i) {
      char name[8];
      std::snprintf(name, sizeof name, "%04d", i);
      const Image image = ops::decode_png(contents(out / (std::string(name) + ".png")), ops::ColorMode::keep);
      EXPECT_EQ(image.shape(), (ImageShape{kSize, kSize, 3})) << format << " " << name;
      const fs::path mask_path = out / (std::string(name) + ".mask.png");
      EXPECT_EQ(fs::exists(mask_path), masks) << format << " " << name;
      nlohmann::json json = nlohmann::json::parse(contents(out / (std::string(name) + ".json")));
      EXPECT_TRUE(json.contains("label") && json["boxes"].is_array() && json["classes"].is_array()) << json;
      EXPECT_EQ(json["boxes"].size(), json["classes"].size());
      for (const auto& box : json["boxes"]) {
        EXPECT_GE(box[0].get<double>(), 0);
        EXPECT_LE(box[2].get<double>(), kSize);
        EXPECT_LE(box[3].get<double>(), kSize);
      }
      if (masks) {
        const Mask mask = ops::decode_png_mask(contents(mask_path));
        EXPECT_EQ(mask.shape(), (MaskShape{kSize, kSize, MaskType::uint8}));
        // Each box holds pixels of its class in the mask.
        for (std::size_t b = 0; b < json["boxes"].size(); ++b) {
          const auto& box = json["boxes"][b];
          const auto cls = json["classes"][b].get<std::uint32_t>();
          int inside = 0;
          for (int y = static_cast<int>(box[1].get<double>());
               y < static_cast<int>(std::ceil(box[3].get<double>())); ++y)
            for (int x = static_cast<int>(box[0].get<double>());
                 x < static_cast<int>(std::ceil(box[2].get<double>())); ++x)
              inside += mask.view().at(std::min(y, kSize - 1), std::min(x, kSize - 1)) == cls ? 1 : 0;
          EXPECT_GT(inside, 0) << format << " " << name << " box " << b;
        }
      }
      jsons.push_back(std::move(json));
    }
    EXPECT_FALSE(fs::exists(out / "0005.png"));
    const Image sheet = ops::decode_png(contents(out / "sheet.png"));
    EXPECT_EQ(sheet.channels(), 3);
    EXPECT_GE(sheet.width(), 3 * kSize);  // 5 samples: 3 columns, 2 rows
    EXPECT_GE(sheet.height(), 2 * kSize);
    return jsons;
  }

  static TempDir* dir_;
};

TempDir* Preview::dir_ = nullptr;

std::size_t box_count(const std::vector<nlohmann::json>& jsons) {
  std::size_t n = 0;
  for (const auto& json : jsons) n += json["boxes"].size();
  return n;
}

TEST_F(Preview, FolderWritesImagesAndLabelsWithoutMasksOrBoxes) {
  const auto jsons = preview("folder", at("photos"), false);
  EXPECT_EQ(box_count(jsons), 0u);
  EXPECT_EQ(jsons[0]["label"], 0);
}

TEST_F(Preview, SegmentationWritesMasks) { preview("segmentation", at("fields"), true); }

TEST_F(Preview, CocoWritesBoxes) {
  EXPECT_GT(box_count(preview("coco", at("fields/images"), false,
                              {"--annotations", at("fields/instances.json").string()})),
            0u);
}

TEST_F(Preview, CocoWithKeypointsWritesThemPerBoxInOutputPixels) {
  const auto jsons =
      preview("coco", at("fields/images"), false, {"--annotations", at("fields/keypoints.json").string()});
  std::size_t visible = 0;
  for (const auto& json : jsons) {
    ASSERT_TRUE(json.contains("keypoints")) << json;
    ASSERT_EQ(json["keypoints"].size(), json["boxes"].size()) << json;
    for (std::size_t b = 0; b < json["keypoints"].size(); ++b) {
      ASSERT_EQ(json["keypoints"][b].size(), 3u) << json;
      for (const auto& point : json["keypoints"][b]) {
        if (point[2].get<double>() == 0) continue;
        ++visible;
        EXPECT_GE(point[0].get<double>(), json["boxes"][b][0].get<double>() - 1e-3) << json;
        EXPECT_LE(point[0].get<double>(), json["boxes"][b][2].get<double>() + 1e-3) << json;
        EXPECT_GE(point[1].get<double>(), json["boxes"][b][1].get<double>() - 1e-3) << json;
        EXPECT_LE(point[1].get<double>(), json["boxes"][b][3].get<double>() + 1e-3) << json;
      }
    }
  }
  EXPECT_GT(visible, 0u);
  // A set without keypoints writes none.
  for (const auto& json :
       preview("coco", at("fields/images"), false, {"--annotations", at("fields/instances.json").string()}))
    EXPECT_FALSE(json.contains("keypoints")) << json;
}

TEST_F(Preview, ShardsWriteMasksAndBoxes) {
  EXPECT_GT(box_count(preview("shards", at("fields/shards/shard-{000000..000000}.tar"), true)), 0u);
}

TEST_F(Preview, ABadFormatOrAMissingAnnotationsFileIsAnError) {
  const std::string preview_program = testing::program_path("CONVEYOR_PREVIEW", CONVEYOR_PREVIEW);
  const auto bad =
      run({preview_program, "--data", at("fields").string(), "--format", "voc", "--out", at("x").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("voc"), std::string::npos) << bad.err;
  const auto coco =
      run({preview_program, "--data", at("fields").string(), "--format", "coco", "--out", at("x").string()});
  EXPECT_EQ(coco.exit_code, 1);
  EXPECT_NE(coco.err.find("--annotations"), std::string::npos) << coco.err;
}

}  // namespace
}  // namespace conveyor
