// Reading WebDataset samples from one tar shard: grouping members by key, labels, and every broken rule
// reported with the shard, the member and the byte offset.
#include "src/sources/tar_samples.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "src/sources/shard_read_error.h"
#include "support/tar_files.h"
#include "support/temp_dir.h"

namespace conveyor::detail {
namespace {

using testing::TarMember;
using testing::TempDir;
using testing::text_member;

std::vector<std::uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

TarSampleReader reader_for(const TempDir& dir, const std::vector<TarMember>& members, TarFormat format = {}) {
  const auto path = dir / "shard.tar";
  testing::write_tar(path, members);
  return TarSampleReader(open_file_stream(path.string()), std::move(format));
}

std::vector<StreamedSample> read_all(TarSampleReader& reader) {
  std::vector<StreamedSample> out;
  StreamedSample sample;
  while (reader.next(sample)) out.push_back(sample);
  return out;
}

TEST(TarSamples, GroupsConsecutiveMembersByKeyWithImageAndLabel) {
  TempDir dir;
  TarSampleReader reader = reader_for(dir, {{"a/x.jpg", bytes_of("JPEG-x")},
                                            text_member("a/x.cls", " 7\n"),
                                            text_member("a/x.json", "{}"),
                                            {"a/y.JPEG", bytes_of("JPEG-y")},
                                            text_member("a/y.cls", "12")});
  const std::vector<StreamedSample> samples = read_all(reader);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].bytes, bytes_of("JPEG-x"));
  EXPECT_EQ(samples[0].label, 7);
  EXPECT_EQ(samples[0].path, (dir / "shard.tar").string() + "#a/x.jpg");
  EXPECT_TRUE(samples[0].error_kind.empty()) << samples[0].error_reason;
  EXPECT_EQ(samples[1].bytes, bytes_of("JPEG-y"));
  EXPECT_EQ(samples[1].label, 12);
  EXPECT_EQ(reader.samples(), 2u);
}

TEST(TarSamples, TheKeyEndsAtTheFirstDotOfTheLastComponent) {
  TempDir dir;
  TarSampleReader reader =
      reader_for(dir, {{"v1.2/img.seg.jpg", bytes_of("J")}, text_member("v1.2/img.seg.cls", "3")},
                 TarFormat{{"seg.jpg"}, "seg.cls", 0});
  const std::vector<StreamedSample> samples = read_all(reader);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].label, 3);
  EXPECT_TRUE(samples[0].error_kind.empty()) << samples[0].error_reason;
}

TEST(TarSamples, DirectoriesAndNamesWithoutExtensionBelongToNoSample) {
  TempDir dir;
  TarMember folder{"a", {}, true};
  TarSampleReader reader = reader_for(dir, {folder,
                                            text_member("a/README", "hello"),
                                            text_member("a/.hidden.txt", "x"),
                                            {"a/x.jpg", bytes_of("J")},
                                            text_member("a/x.cls", "1")});
  const std::vector<StreamedSample> samples = read_all(reader);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_TRUE(samples[0].error_kind.empty()) << samples[0].error_reason;
}

TEST(TarSamples, WithoutALabelExtensionEveryLabelIsMinusOne) {
  TempDir dir;
  TarSampleReader reader =
      reader_for(dir, {{"x.jpg", bytes_of("J")}, {"y.jpg", bytes_of("K")}}, TarFormat{{"jpg"}, "", 0});
  const std::vector<StreamedSample> samples = read_all(reader);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[1].label, -1);
  EXPECT_TRUE(samples[1].error_kind.empty());
}

// The error of the only sample of a shard made of `members`.
StreamedSample only_sample(const std::vector<TarMember>& members, TarFormat format = {}) {
  TempDir dir;
  TarSampleReader reader = reader_for(dir, members, std::move(format));
  std::vector<StreamedSample> samples = read_all(reader);
  if (samples.size() != 1)
    throw std::runtime_error("expected one sample, got " + std::to_string(samples.size()));
  return samples[0];
}

void expect_error(const StreamedSample& sample, const std::string& kind, const std::string& fragment) {
  EXPECT_EQ(sample.error_kind, kind);
  EXPECT_NE(sample.error_reason.find(fragment), std::string::npos) << sample.error_reason;
  EXPECT_NE(sample.error_reason.find("shard.tar"), std::string::npos) << sample.error_reason;
  EXPECT_NE(sample.error_reason.find(" at byte "), std::string::npos) << sample.error_reason;
}

TEST(TarSamples, ASampleWithoutAnImageIsAnError) {
  expect_error(only_sample({text_member("README.txt", "read me")}), "no_image",
               "member 'README.txt' at byte 0: sample 'README' has no image member (it has .txt)");
  expect_error(only_sample({text_member("k.cls", "1")}), "no_image", "sample 'k' has no image member");
}

TEST(TarSamples, ASampleWithoutItsLabelMemberHasLabelMinusOne) {
  const StreamedSample sample = only_sample({{"k.jpg", bytes_of("J")}, text_member("k.json", "{}")});
  EXPECT_TRUE(sample.error_kind.empty()) << sample.error_reason;
  EXPECT_EQ(sample.label, -1);
  EXPECT_EQ(sample.bytes, bytes_of("J"));
}

TEST(TarSamples, AMissingLabelIsAnErrorOnlyWhenLabelsAreRequired) {
  TarFormat format;
  format.require_label = true;
  expect_error(only_sample({{"k.jpg", bytes_of("J")}}, format), "no_label",
               "sample 'k' has no '.cls' label member");
}

TEST(TarSamples, ABadLabelIsAnError) {
  expect_error(only_sample({{"k.jpg", bytes_of("J")}, text_member("k.cls", "cat")}), "bad_label",
               "member 'k.cls' at byte 1024: 'cat' is not a decimal integer label");
  expect_error(only_sample({{"k.jpg", bytes_of("J")}, text_member("k.cls", "12x")}), "bad_label", "'12x'");
  expect_error(only_sample({{"k.jpg", bytes_of("J")}, text_member("k.cls", std::string(100, '1'))}),
               "bad_label", "100 bytes is no label");
}

TEST(TarSamples, TwoMembersWithOneExtensionOrTwoImagesAreAnError) {
  expect_error(only_sample({{"k.jpg", bytes_of("J")}, {"k.jpg", bytes_of("K")}, text_member("k.cls", "1")}),
               "duplicate_member", "sample 'k' has two '.jpg' members");
  expect_error(only_sample({{"k.jpg", bytes_of("J")}, {"k.jpeg", bytes_of("K")}, text_member("k.cls", "1")}),
               "duplicate_member", "a second image of sample 'k'");
}

TEST(TarSamples, AKeyThatComesBackIsAnErrorOnItsSecondSample) {
  TempDir dir;
  TarSampleReader reader = reader_for(dir, {{"a.jpg", bytes_of("1")},
                                            text_member("a.cls", "1"),
                                            {"b.jpg", bytes_of("2")},
                                            text_member("b.cls", "2"),
                                            {"a.jpg", bytes_of("3")},
                                            text_member("a.cls", "3")});
  const std::vector<StreamedSample> samples = read_all(reader);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_TRUE(samples[0].error_kind.empty());
  EXPECT_TRUE(samples[1].error_kind.empty());
  expect_error(samples[2], "duplicate_key", "key 'a' already had a sample at byte 0");
}

TEST(TarSamples, AnImageOverTheLimitIsRefusedWithoutReadingIt) {
  const StreamedSample sample =
      only_sample({{"k.jpg", std::vector<std::uint8_t>(5000, 1)}, text_member("k.cls", "1")},
                  TarFormat{{"jpg"}, "cls", 4096});
  expect_error(sample, "too_large", "5000 bytes, over the limit of 4096");
  EXPECT_TRUE(sample.bytes.empty());
}

TEST(TarSamples, ATruncatedMemberStopsTheShardNamingMemberAndOffset) {
  TempDir dir;
  std::vector<std::uint8_t> tar = testing::tar_bytes({{"a.jpg", std::vector<std::uint8_t>(3000, 1)},
                                                      text_member("a.cls", "1"),
                                                      {"b.jpg", std::vector<std::uint8_t>(3000, 2)},
                                                      text_member("b.cls", "2")});
  // a.jpg: header at 0, data 512..3512 (blocks to 3584); a.cls: 3584 + 1024; b.jpg's header at 4608.
  tar.resize(4608 + 512 + 1000);  // in the middle of b.jpg's data
  testing::write_file(dir / "cut.tar", tar);
  TarSampleReader reader(open_file_stream((dir / "cut.tar").string()), TarFormat{});
  StreamedSample sample;
  ASSERT_TRUE(reader.next(sample));
  EXPECT_TRUE(sample.error_kind.empty());
  try {
    reader.next(sample);
    FAIL() << "a truncated member must throw";
  } catch (const ShardReadError& error) {
    EXPECT_EQ(error.kind(), "truncated");
    const std::string message = error.what();
    EXPECT_NE(message.find("cut.tar': member 'b.jpg' at byte 4608"), std::string::npos) << message;
    EXPECT_NE(message.find("end at 6120"), std::string::npos) << message;
  }
}

// Reading the shard at `path` fails with a ShardReadError of `kind` whose message holds `fragment`.
void expect_shard_fails(const std::string& path, const std::string& kind, const std::string& fragment) {
  try {
    TarSampleReader reader(open_file_stream(path), TarFormat{});
    StreamedSample sample;
    reader.next(sample);
    ADD_FAILURE() << "'" << path << "' was read";
  } catch (const ShardReadError& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(TarSamples, BytesThatAreNoTarAreRefused) {
  TempDir dir;
  testing::write_file(dir / "noise.tar", std::vector<std::uint8_t>(2000, 0x5A));
  expect_shard_fails((dir / "noise.tar").string(), "not_tar", "noise.tar");
}

TEST(TarSamples, AMissingFileIsAnIoError) {
  expect_shard_fails("/nonexistent/conveyor/shard.tar", "io",
                     "cannot open '/nonexistent/conveyor/shard.tar'");
}

TEST(TarSamples, SkipPassesOverSamplesAndAtEndSeesTheLastOne) {
  TempDir dir;
  testing::write_numbered_shards(dir.path(), {5});
  TarSampleReader reader(open_file_stream((dir / "shard-000000.tar").string()), TarFormat{});
  EXPECT_EQ(reader.skip(3), 3u);
  StreamedSample sample;
  ASSERT_TRUE(reader.next(sample));
  EXPECT_EQ(sample.label, 3);
  EXPECT_FALSE(reader.at_end());
  ASSERT_TRUE(reader.next(sample));
  EXPECT_EQ(sample.label, 4);
  EXPECT_TRUE(reader.at_end());
  EXPECT_FALSE(reader.next(sample));
  EXPECT_EQ(reader.skip(10), 0u);
  EXPECT_EQ(reader.samples(), 5u);
}

TEST(TarSamples, ACompressedShardIsDecompressedAsItIsRead) {
  TempDir dir;
  testing::write_file(dir / "shard.tar.gz",
                      testing::tar_bytes({{"a.jpg", bytes_of("JPEG-a")},
                                          text_member("a.cls", "4"),
                                          {"b.jpg", std::vector<std::uint8_t>(70000, 3)},
                                          text_member("b.cls", "5")},
                                         /*gzip=*/true));
  TarSampleReader reader(open_file_stream((dir / "shard.tar.gz").string()), TarFormat{});
  const std::vector<StreamedSample> samples = read_all(reader);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].bytes, bytes_of("JPEG-a"));
  EXPECT_EQ(samples[0].label, 4);
  EXPECT_EQ(samples[1].bytes, std::vector<std::uint8_t>(70000, 3));
  EXPECT_EQ(samples[1].label, 5);
}

TEST(TarSamples, AFolderIsNoShard) {
  TempDir dir;
  std::filesystem::create_directories(dir / "folder.tar");
  expect_shard_fails((dir / "folder.tar").string(), "io", "folder.tar' is not a regular file");
}

TEST(TarSamples, AnEmptyFileIsNoTarArchive) {
  TempDir dir;
  testing::write_file(dir / "empty.tar", {});
  expect_shard_fails((dir / "empty.tar").string(), "not_tar", "empty.tar");
}

}  // namespace
}  // namespace conveyor::detail
