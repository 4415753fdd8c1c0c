// The make_shards tool: an ImageFolder tree packed into shards that read back as the same data set (same
// samples, labels and, with the shard order kept, the same batches), byte-identical from run to run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

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
                                   const std::string& megabytes) {
  return testing::run_process({testing::program_path("CONVEYOR_MAKE_SHARDS", CONVEYOR_MAKE_SHARDS), "--input",
                               input.string(), "--output", output.string(), "--shard-size", megabytes},
                              {}, std::chrono::seconds(60));
}

std::vector<std::uint8_t> contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::uint64_t batches_of(const Dataset& dataset) {
  return testing::checksum_of(dataset.map(ops::decode_random_resized_crop(16))
                                  .with_options({.threads = 3, .seed = 12})
                                  .batch(4, ImageShape{16, 16, 3}));
}

TEST(MakeShards, PacksAnImageFolderIntoShardsThatReadBackAsTheSameDataSet) {
  TempDir dir;
  const fs::path root = testing::make_jpeg_folder(dir, 3, 5, 48, 64);
  testing::write_file(root / "class_1" / "name.with.dots.jpg", testing::make_jpeg(40, 40, 3, 77));
  const testing::ProcessResult made = make_shards(root, dir / "shards", "0.01");  // about 10 KB per shard
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("16 samples of 3 classes in "), std::string::npos) << made.out;
  EXPECT_NE(made.out.find("shard-000000.tar  "), std::string::npos) << made.out;

  TarShardOptions options;
  options.shuffle_shards = false;
  options.parallel_shards = 1;  // the stored order (several shards at once interleave)
  const Dataset shards = Dataset::tar_shard_index((dir / "shards" / "shards.json").string(), options);
  EXPECT_EQ(shards.source_size(), 16u);
  std::size_t count = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir / "shards"))
    count += entry.path().extension() == ".tar";
  EXPECT_GT(count, 2u) << "the size limit splits the set";

  const Dataset folder = Dataset::image_folder(root);
  std::vector<std::string> paths;
  std::vector<std::int64_t> labels;
  for (const Sample& s : shards.with_options({.threads = 2})) {
    paths.push_back(s.path.substr(s.path.find('#') + 1));
    labels.push_back(s.label);
  }
  ASSERT_EQ(paths.size(), folder.source_size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(labels[i], folder.source_label(i));
    fs::path expected = fs::path(folder.source_path(i)).lexically_relative(root);
    std::string stem = expected.stem().string();
    std::replace(stem.begin(), stem.end(), '.', '_');
    EXPECT_EQ(paths[i], (expected.parent_path() / (stem + ".jpg")).generic_string());
  }
  EXPECT_EQ(batches_of(shards), batches_of(folder));

  const testing::ProcessResult again = make_shards(root, dir / "again", "0.01");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir / "shards"))
    EXPECT_EQ(contents(entry.path()), contents(dir / "again" / entry.path().filename())) << entry.path();
}

TEST(MakeShards, RefusesAFolderThatIsNotEmpty) {
  TempDir dir;
  const fs::path root = testing::make_jpeg_folder(dir, 1, 2);
  testing::write_file(dir / "out" / "old.txt", {});
  const testing::ProcessResult made = make_shards(root, dir / "out", "1");
  EXPECT_EQ(made.exit_code, 1);
  EXPECT_NE(made.err.find("is not empty"), std::string::npos) << made.err;
  const testing::ProcessResult bad = make_shards(root, dir / "other", "-3");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--shard-size"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace conveyor
