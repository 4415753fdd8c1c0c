// TarShardOptions::random_access: local, uncompressed shards located once and read sample by sample with
// pread(). The located bytes must be the members' bytes (long names included), the dataset must behave as a
// table (the image folder's batches, shuffled or not), and broken shards must fail or be counted by kind
// without stopping the dataset from being made. The format's per-sample rules are checked in both modes by
// tar_shards_test.cpp (TarShardsEitherWay).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "fixtures.h"
#include "support/tar_files.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using testing::number_of;
using testing::TarMember;
using testing::TempDir;
using testing::text_member;

TarShardOptions random_access() {
  TarShardOptions options;
  options.random_access = true;
  return options;
}

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(TarShardsRandomAccess, EverySampleComesOnceWithItsLabelAndNameInStoredOrder) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {5, 0, 7, 3});
  std::vector<std::uint64_t> numbers;
  std::vector<std::string> paths;
  for (const Sample& s : Dataset::tar_shards(shards, random_access()).with_options({.threads = 3})) {
    numbers.push_back(number_of(s));
    paths.push_back(s.path);
    EXPECT_EQ(s.label, static_cast<std::int64_t>(number_of(s) % 10));
  }
  std::vector<std::uint64_t> expected(15);
  for (std::uint64_t i = 0; i < expected.size(); ++i) expected[i] = i;
  EXPECT_EQ(numbers, expected) << "shard after shard, each in stored order";
  EXPECT_EQ(paths.front(), shards[0] + "#shard0/0.jpg");
  EXPECT_EQ(paths.back(), shards[3] + "#shard3/14.jpg");
  EXPECT_EQ(Dataset::tar_shards(shards, random_access()).source_size(), 15u);
}

TEST(TarShardsRandomAccess, MembersBehindLongNamesAndOddSizesAreReadExactly) {
  TempDir dir;
  // A name component over 100 bytes needs a pax header before the member's own; sizes off the 512-byte
  // blocks leave padding between the members.
  const std::string deep = "folder/" + std::string(150, 'k');
  std::vector<TarMember> members;
  std::vector<std::vector<std::uint8_t>> images;
  for (int i = 0; i < 6; ++i) {
    std::vector<std::uint8_t> image(static_cast<std::size_t>(1 + 700 * i));
    for (std::size_t b = 0; b < image.size(); ++b) image[b] = static_cast<std::uint8_t>(b * 7 + i);
    const std::string key = (i % 2 == 0 ? deep : "short") + std::to_string(i);
    members.push_back({key + ".jpg", image});
    members.push_back(text_member(key + ".cls", std::to_string(i)));
    images.push_back(std::move(image));
  }
  testing::write_tar(dir / "long.tar", members);
  std::map<std::int64_t, std::vector<std::uint8_t>> seen;
  for (const Sample& s :
       Dataset::tar_shards({(dir / "long.tar").string()}, random_access()).with_options({.threads = 2}))
    seen[s.label] = s.encoded;
  ASSERT_EQ(seen.size(), images.size());
  for (std::size_t i = 0; i < images.size(); ++i)
    EXPECT_EQ(seen[static_cast<std::int64_t>(i)], images[i]) << i;
}

TEST(TarShardsRandomAccess, ShuffledOrNotItGivesTheImageFoldersBatches) {
  TempDir dir;
  const std::filesystem::path root = testing::make_jpeg_folder(dir, 3, 5, 40, 48);
  const Dataset folder = Dataset::image_folder(root);
  // The folder's files in its order, over two shards.
  std::vector<TarMember> first, second;
  for (std::size_t i = 0; i < folder.source_size(); ++i) {
    const std::string path = folder.source_path(i);
    const std::string key = std::filesystem::relative(path, root).replace_extension().string();
    std::vector<TarMember>& shard = i < 7 ? first : second;
    shard.push_back({key + ".jpg", file_bytes(path)});
    shard.push_back(text_member(key + ".cls", std::to_string(folder.source_label(i))));
  }
  testing::write_tar(dir / "a.tar", first);
  testing::write_tar(dir / "b.tar", second);
  const Dataset shards =
      Dataset::tar_shards({(dir / "a.tar").string(), (dir / "b.tar").string()}, random_access());
  const auto batches = [](const Dataset& d) {
    return testing::checksum_of(d.repeat(2)
                                    .map(ops::decode_random_resized_crop(16))
                                    .map(ops::flip_horizontal(0.5))
                                    .with_options({.threads = 3, .seed = 8})
                                    .batch(4, ImageShape{16, 16, 3}));
  };
  EXPECT_EQ(batches(shards), batches(folder));
  EXPECT_EQ(batches(shards.shuffle()), batches(folder.shuffle()));
  EXPECT_NE(batches(shards.shuffle()), batches(shards));
  // Split as files are: each rank's share, shuffled over the whole epoch.
  const Ranks two{.rank = 1, .world_size = 2};
  EXPECT_EQ(batches(shards.shuffle().shard(two)), batches(folder.shuffle().shard(two)));
}

TEST(TarShardsRandomAccess, ATruncatedOrMissingShardKeepsItsWholeSamplesAndCountsOneFailure) {
  TempDir dir;
  std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {6, 6, 2});
  // Cut shard 0 inside its fourth sample's image (each sample: 512 + 512 image, 512 + 512 label).
  std::filesystem::resize_file(shards[0], 3 * 2048 + 700);
  std::filesystem::remove(shards[2]);
  const Dataset dataset = Dataset::tar_shards(shards, random_access());  // made despite both
  EXPECT_EQ(dataset.source_size(), 3u + 1u + 6u + 1u);
  SampleIterator it = dataset.with_options({.threads = 2, .on_error = OnError::skip}).begin();
  std::set<std::uint64_t> numbers;
  while (std::optional<Sample> sample = it.next()) numbers.insert(number_of(*sample));
  EXPECT_EQ(numbers, (std::set<std::uint64_t>{0, 1, 2, 6, 7, 8, 9, 10, 11}));
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.skip_reasons.at("read: truncated"), 1u);
  EXPECT_EQ(stats.skip_reasons.at("read: io"), 1u);
  try {
    for (const Sample& s : dataset.with_options({.threads = 2})) (void)s;
    FAIL() << "shard 0 is cut";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.path(), shards[0]);
    EXPECT_NE(error.reason().find(shards[0]), std::string::npos) << error.reason();
  }
}

TEST(TarShardsRandomAccess, AShardCutAfterItWasLocatedFailsItsReadAsTruncated) {
  TempDir dir;
  const std::vector<std::string> shards = testing::write_numbered_shards(dir.path(), {3});
  const Dataset dataset = Dataset::tar_shards(shards, random_access());
  std::filesystem::resize_file(shards[0], 2048 + 512 + 4);  // inside the second image's 8 bytes
  SampleIterator it = dataset.with_options({.threads = 1, .on_error = OnError::skip}).begin();
  std::vector<std::uint64_t> numbers;
  while (std::optional<Sample> sample = it.next()) numbers.push_back(number_of(*sample));
  EXPECT_EQ(numbers, (std::vector<std::uint64_t>{0}));
  EXPECT_EQ(it.stats().skip_reasons.at("read: truncated"), 2u);
}

TEST(TarShardsRandomAccess, UrlsCompressedShardsAndSeveralRanksAreRefused) {
  TempDir dir;
  const auto refused = [](const std::vector<std::string>& shards, const TarShardOptions& options,
                          const std::string& why) {
    try {
      Dataset::tar_shards(shards, options);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find(why), std::string::npos) << error.what();
    }
  };
  refused({"http://127.0.0.1:1/a.tar"}, random_access(), "is a URL");
  const std::vector<std::uint8_t> gz = testing::tar_bytes({text_member("a.jpg", "0")}, /*gzip=*/true);
  testing::write_file(dir / "a.tar.gz", gz);
  refused({(dir / "a.tar.gz").string()}, random_access(), "is compressed");
  TarShardOptions ranked = random_access();
  ranked.ranks = Ranks{.rank = 0, .world_size = 2};
  refused({(dir / "a.tar.gz").string()}, ranked, "shuffle().shard(ranks)");
}

}  // namespace
}  // namespace conveyor
