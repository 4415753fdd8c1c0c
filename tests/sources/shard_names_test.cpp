// Naming shards: brace patterns and globs (expand_shard_pattern), and wids shard indexes.
#include <gtest/gtest.h>

#include "conveyor/error.h"
#include "conveyor/shards.h"
#include "src/sources/shard_set.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using Names = std::vector<std::string>;

TEST(ShardPattern, ARangeKeepsTheWidthOfItsBounds) {
  EXPECT_EQ(expand_shard_pattern("d/shard-{000008..000011}.tar"),
            (Names{"d/shard-000008.tar", "d/shard-000009.tar", "d/shard-000010.tar", "d/shard-000011.tar"}));
  EXPECT_EQ(expand_shard_pattern("s{8..10}.tar"), (Names{"s8.tar", "s9.tar", "s10.tar"}));
  EXPECT_EQ(expand_shard_pattern("s{7..7}.tar"), (Names{"s7.tar"}));
}

TEST(ShardPattern, ListsAndSeveralBracesExpandLeftToRight) {
  EXPECT_EQ(expand_shard_pattern("{train,val}-{0..1}.tar"),
            (Names{"train-0.tar", "train-1.tar", "val-0.tar", "val-1.tar"}));
  EXPECT_EQ(expand_shard_pattern("plain.tar"), (Names{"plain.tar"}));
}

TEST(ShardPattern, UrlsAreExpandedButNeverGlobbed) {
  EXPECT_EQ(expand_shard_pattern("https://host/data/shard-{00..02}.tar?sig=a*b"),
            (Names{"https://host/data/shard-00.tar?sig=a*b", "https://host/data/shard-01.tar?sig=a*b",
                   "https://host/data/shard-02.tar?sig=a*b"}));
}

TEST(ShardPattern, GlobsMatchExistingFilesInSortedOrder) {
  testing::TempDir dir;
  for (const char* name : {"b-2.tar", "a-1.tar", "a-3.tar", "other.txt"}) testing::write_file(dir / name, {});
  const std::string root = dir.path().string();
  EXPECT_EQ(expand_shard_pattern(root + "/*.tar"),
            (Names{root + "/a-1.tar", root + "/a-3.tar", root + "/b-2.tar"}));
  EXPECT_EQ(expand_shard_pattern(root + "/{a,b}-?.tar"),
            (Names{root + "/a-1.tar", root + "/a-3.tar", root + "/b-2.tar"}));
  EXPECT_THROW(expand_shard_pattern(root + "/*.tgz"), IoError);
}

TEST(ShardPattern, RejectsBrokenPatterns) {
  for (const std::string bad : {"s{0..3.tar", "s0..3}.tar", "s{a..b}.tar", "s{5..2}.tar", "s{x}.tar",
                                "{{0..1}}", "s{0..99999999999}.tar", ""})
    EXPECT_THROW(expand_shard_pattern(bad), InvalidArgument) << bad;
}

TEST(ShardIndex, ReadsAWidsIndexResolvingRelativeUrls) {
  const std::string json = R"({"__kind__": "wids-shard-index-v1", "wids_version": 1, "shardlist": [
      {"url": "shard-000000.tar", "nsamples": 10, "filesize": 1234},
      {"url": "sub/shard-000001.tar", "nsamples": 3},
      {"url": "/abs/shard.tar", "nsamples": 0},
      {"url": "http://other/s.tar"}]})";
  const std::vector<detail::ShardInfo> local = detail::parse_shard_index(json, "/data/set/index.json");
  ASSERT_EQ(local.size(), 4u);
  EXPECT_EQ(local[0].location, "/data/set/shard-000000.tar");
  EXPECT_EQ(local[0].samples, std::optional<std::uint64_t>(10));
  EXPECT_EQ(local[1].location, "/data/set/sub/shard-000001.tar");
  EXPECT_EQ(local[2].location, "/abs/shard.tar");
  EXPECT_EQ(local[2].samples, std::optional<std::uint64_t>(0));
  EXPECT_EQ(local[3].location, "http://other/s.tar");
  EXPECT_FALSE(local[3].samples.has_value());
  EXPECT_EQ(detail::parse_shard_index(json, "https://host/set/index.json")[1].location,
            "https://host/set/sub/shard-000001.tar");
  EXPECT_EQ(detail::parse_shard_index(json, "http://host")[0].location, "http://host/shard-000000.tar");
  EXPECT_EQ(detail::parse_shard_index(json, "index.json")[0].location, "shard-000000.tar");
}

TEST(ShardIndex, RejectsWhatIsNotAnIndex) {
  const auto message = [](const std::string& json) -> std::string {
    try {
      detail::parse_shard_index(json, "idx.json");
    } catch (const InvalidArgument& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(message("{not json").find("shard index 'idx.json': not JSON"), std::string::npos);
  EXPECT_NE(message(R"({"shards": []})").find("no \"shardlist\" array"), std::string::npos);
  EXPECT_NE(message(R"({"shardlist": []})").find("the shard list is empty"), std::string::npos);
  EXPECT_NE(message(R"({"shardlist": [{"nsamples": 3}]})").find("shardlist[0] has no \"url\""),
            std::string::npos);
  EXPECT_NE(
      message(R"({"shardlist": [{"url": "a.tar", "nsamples": -1}]})").find("not a non-negative integer"),
      std::string::npos);
  EXPECT_NE(
      message(R"({"shardlist": [{"url": "a.tar", "nsamples": "3"}]})").find("not a non-negative integer"),
      std::string::npos);
}

}  // namespace
}  // namespace conveyor
