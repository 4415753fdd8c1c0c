// make_shards preparing a data set (issue 36, as FFCV does): images re-encoded at a maximum side and a
// quality, or stored decoded (PPM members), read back through the ordinary shard readers and decode ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "conveyor/dataset.h"
#include "conveyor/ops.h"
#include "fixtures.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/test_images.h"

namespace conveyor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

testing::ProcessResult make_shards(const fs::path& input, const fs::path& output,
                                   std::vector<std::string> preparation) {
  std::vector<std::string> args{testing::program_path("CONVEYOR_MAKE_SHARDS", CONVEYOR_MAKE_SHARDS),
                                "--input", input.string(), "--output", output.string()};
  args.insert(args.end(), preparation.begin(), preparation.end());
  return testing::run_process(args, {}, std::chrono::seconds(60));
}

// A folder of two classes, large (200 x 150) and small (48 x 64) images alternating.
fs::path mixed_folder(const TempDir& dir) {
  for (int i = 0; i < 8; ++i) {
    const bool large = i % 2 == 0;
    testing::write_file(
        dir / "in" / ("class_" + std::to_string(i % 2)) / ("image_" + std::to_string(i) + ".jpg"),
        testing::make_jpeg(large ? 150 : 48, large ? 200 : 64, 3, 300 + static_cast<std::uint64_t>(i)));
  }
  return dir / "in";
}

// Every sample of the shards in `folder`: its member name and bytes, in stored order.
std::vector<std::pair<std::string, std::vector<std::uint8_t>>> members(const fs::path& folder) {
  TarShardOptions options;
  options.shuffle_shards = false;
  options.parallel_shards = 1;
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> out;
  for (const Sample& s :
       Dataset::tar_shard_index((folder / "shards.json").string(), options).with_options({.threads = 1}))
    out.emplace_back(s.path.substr(s.path.find('#') + 1), s.encoded);
  return out;
}

std::vector<std::uint8_t> bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

nlohmann::json index_of(const fs::path& folder) {
  std::ifstream in(folder / "shards.json");
  return nlohmann::json::parse(in);
}

TEST(PreparedShards, MaxSideShrinksTheLargerImagesAndReencodesEveryOneAtTheQualityAsked) {
  TempDir dir;
  const fs::path root = mixed_folder(dir);
  const testing::ProcessResult made = make_shards(root, dir / "q", {"--max-side", "100", "--quality", "80"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("prepared (max side 100, JPEG quality 80)"), std::string::npos) << made.out;
  const auto samples = members(dir / "q");
  ASSERT_EQ(samples.size(), 8u);
  for (const auto& [name, bytes] : samples) {
    EXPECT_TRUE(name.ends_with(".jpg")) << name;
    const Image image = ops::decode_jpeg(bytes);
    const bool large = name.find("image_0") != std::string::npos ||
                       name.find("image_2") != std::string::npos ||
                       name.find("image_4") != std::string::npos || name.find("image_6") != std::string::npos;
    EXPECT_EQ(image.shape(), large ? (ImageShape{75, 100, 3}) : (ImageShape{48, 64, 3})) << name;
  }
  const nlohmann::json prepared = index_of(dir / "q").at("prepared");
  EXPECT_EQ(prepared.at("max_side"), 100);
  EXPECT_EQ(prepared.at("quality"), 80);
  EXPECT_EQ(prepared.at("store"), "jpeg");
  EXPECT_LT(prepared.at("image_bytes").get<double>(), prepared.at("input_image_bytes").get<double>());
  EXPECT_GE(prepared.at("seconds").get<double>(), 0.0);
}

TEST(PreparedShards, RawStoresDecodedPixelsThatThePipelineReadsWithoutDecoding) {
  TempDir dir;
  const fs::path root = mixed_folder(dir);
  const testing::ProcessResult made = make_shards(root, dir / "raw", {"--max-side", "40", "--store", "raw"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto samples = members(dir / "raw");
  ASSERT_EQ(samples.size(), 8u);
  const Dataset folder = Dataset::image_folder(root);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& [name, bytes] = samples[i];
    ASSERT_TRUE(name.ends_with(".ppm")) << name;
    const ConstImageView stored = ops::read_raw_image(bytes);
    EXPECT_EQ(std::max(stored.width, stored.height), 40) << name;
    // The original decoded and shrunk the same way: the stored pixels are exactly those.
    const Image original = ops::decode_jpeg(bytes_of(folder.source_path(i)));
    Image shrunk(stored.height, stored.width, 3);
    ops::resize(original.view(), shrunk.view(), ops::Interpolation::area);
    EXPECT_EQ(testing::max_abs_diff(stored, shrunk.view()), 0) << name;
  }
  // Read as any shards are: random crops of the stored pixels, every batch full.
  TarShardOptions options;
  options.random_access = true;
  std::vector<std::size_t> sizes;
  testing::checksum_of(Dataset::tar_shard_index((dir / "raw" / "shards.json").string(), options)
                           .shuffle()
                           .map(ops::decode_random_resized_crop(16))
                           .with_options({.threads = 3, .seed = 2})
                           .batch(4, ImageShape{16, 16, 3}),
                       &sizes);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4, 4}));
  EXPECT_EQ(index_of(dir / "raw").at("prepared").at("store"), "raw");
}

TEST(PreparedShards, TheSameSettingsGiveTheSameShardsAtAnyThreadCount) {
  TempDir dir;
  const fs::path root = mixed_folder(dir);
  ASSERT_EQ(make_shards(root, dir / "one", {"--max-side", "90", "--threads", "1"}).exit_code, 0);
  ASSERT_EQ(make_shards(root, dir / "three", {"--max-side", "90", "--threads", "3"}).exit_code, 0);
  for (const fs::directory_entry& entry : fs::directory_iterator(dir / "one")) {
    if (entry.path().extension() != ".tar") continue;
    EXPECT_EQ(bytes_of(entry.path()), bytes_of(dir / "three" / entry.path().filename()))
        << entry.path().filename();
  }
}

TEST(PreparedShards, WithoutPreparationTheShardsHoldTheFilesOwnBytesAndNoPreparedEntry) {
  TempDir dir;
  const fs::path root = mixed_folder(dir);
  ASSERT_EQ(make_shards(root, dir / "plain", {}).exit_code, 0);
  const Dataset folder = Dataset::image_folder(root);
  const auto samples = members(dir / "plain");
  ASSERT_EQ(samples.size(), folder.source_size());
  for (std::size_t i = 0; i < samples.size(); ++i)
    EXPECT_EQ(samples[i].second, bytes_of(folder.source_path(i))) << samples[i].first;
  EXPECT_FALSE(index_of(dir / "plain").contains("prepared"));
}

}  // namespace
}  // namespace conveyor
