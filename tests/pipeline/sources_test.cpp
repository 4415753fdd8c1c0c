// Sources: which elements a dataset starts from, and the "read" stage that loads their bytes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "fixtures.h"
#include "support/permissions.h"
#include "support/temp_dir.h"
#include "support/test_images.h"

namespace conveyor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_file;

std::vector<std::uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

std::vector<Sample> all_samples(const Dataset& dataset) {
  std::vector<Sample> samples;
  for (const Sample& sample : dataset.with_options({.threads = 2})) samples.push_back(sample);
  return samples;
}

TEST(ImageFolder, ClassesAreSortedSubFoldersAndLabelsFollowThem) {
  TempDir dir;
  write_file(dir / "zebra" / "b.jpg", bytes_of("z-b"));
  write_file(dir / "ant" / "a.JPEG", bytes_of("a-a"));
  write_file(dir / "ant" / "nested" / "deeper" / "c.jpeg", bytes_of("a-c"));
  write_file(dir / "mole" / "x.Jpg", bytes_of("m-x"));
  const Dataset dataset = Dataset::image_folder(dir.path());
  EXPECT_EQ(dataset.class_names(), (std::vector<std::string>{"ant", "mole", "zebra"}));
  ASSERT_EQ(dataset.source_size(), 4u);
  const std::vector<Sample> samples = all_samples(dataset);
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[0].path, (dir / "ant" / "a.JPEG").string());
  EXPECT_EQ(samples[1].path, (dir / "ant" / "nested" / "deeper" / "c.jpeg").string());
  EXPECT_EQ(samples[2].path, (dir / "mole" / "x.Jpg").string());
  EXPECT_EQ(samples[3].path, (dir / "zebra" / "b.jpg").string());
  EXPECT_EQ(samples[0].label, 0);
  EXPECT_EQ(samples[1].label, 0);
  EXPECT_EQ(samples[2].label, 1);
  EXPECT_EQ(samples[3].label, 2);
  EXPECT_EQ(samples[3].encoded, bytes_of("z-b"));
}

TEST(ImageFolder, ListsOnlyRegularJpegFiles) {
  TempDir dir;
  write_file(dir / "cat" / "keep.jpg", bytes_of("keep"));
  write_file(dir / "cat" / "notes.txt", bytes_of("no"));
  write_file(dir / "cat" / "picture.png", bytes_of("no"));
  write_file(dir / "cat" / "jpg", bytes_of("no"));
  fs::create_directories(dir / "cat" / "folder.jpg");  // a directory named like an image
  write_file(dir / "cat" / "folder.jpg" / "inside.jpg", bytes_of("inside"));
  write_file(dir / "loose.jpg", bytes_of("not in a class"));
  const std::vector<Sample> samples = all_samples(Dataset::image_folder(dir.path()));
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].path, (dir / "cat" / "folder.jpg" / "inside.jpg").string());
  EXPECT_EQ(samples[1].path, (dir / "cat" / "keep.jpg").string());
}

TEST(ImageFolder, SymlinkLoopsAndDanglingLinksAreNeitherFollowedNorListed) {
  TempDir dir;
  write_file(dir / "dog" / "a.jpg", bytes_of("a"));
  fs::create_directory_symlink(dir / "dog", dir / "dog" / "loop");   // a directory loop
  fs::create_directory_symlink(dir.path(), dir / "dog" / "up.jpg");  // a directory link named .jpg
  fs::create_symlink(dir / "dog" / "missing.jpg", dir / "dog" / "dangling.jpg");
  fs::create_symlink(dir / "dog" / "self.jpg", dir / "dog" / "self.jpg");  // a file link loop
  fs::create_directory_symlink(dir / "dog", dir / "alias");                // a class folder link
  fs::create_symlink(dir / "dog" / "a.jpg", dir / "dog" / "link.jpg");     // a link to a real image counts
  const Dataset dataset = Dataset::image_folder(dir.path());
  EXPECT_EQ(dataset.class_names(), (std::vector<std::string>{"dog"}));
  const std::vector<Sample> samples = all_samples(dataset);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].path, (dir / "dog" / "a.jpg").string());
  EXPECT_EQ(samples[1].path, (dir / "dog" / "link.jpg").string());
}

TEST(ImageFolder, UnreadableSubFoldersAreSkipped) {
  TempDir dir;
  write_file(dir / "ok" / "a.jpg", bytes_of("a"));
  write_file(dir / "ok" / "locked" / "b.jpg", bytes_of("b"));
  fs::permissions(dir / "ok" / "locked", fs::perms::none);
  if (::access((dir / "ok" / "locked").c_str(), R_OK) == 0) {
    ASSERT_FALSE(testing::permission_tests_required())
        << "uid " << ::geteuid() << " still lists a folder with no permissions: this run was to deny it";
    GTEST_SKIP() << "running as root: permissions do not deny listing here (CI runs this test as an "
                    "unprivileged user through tests/support/run_unprivileged.sh)";
  }
  const std::vector<Sample> samples = all_samples(Dataset::image_folder(dir.path()));
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].path, (dir / "ok" / "a.jpg").string());
}

TEST(ImageFolder, MissingRootIsAnIoErrorAndAnEmptyTreeIsInvalid) {
  TempDir dir;
  EXPECT_THROW(Dataset::image_folder(dir / "nope"), IoError);
  fs::create_directories(dir / "empty_class");
  EXPECT_THROW(Dataset::image_folder(dir.path()), InvalidArgument);
}

TEST(ListFile, PathsAreRelativeToTheRootAndMayContainSpaces) {
  TempDir dir;
  write_file(dir / "data" / "a.jpg", bytes_of("A"));
  write_file(dir / "data" / "my photo.jpg", bytes_of("B"));
  write_file(dir / "abs.jpg", bytes_of("C"));
  const std::string list =
      "# path label\n\ndata/a.jpg 3\r\n  data/my photo.jpg\t7  \n" + (dir / "abs.jpg").string() + " 0\n";
  write_file(dir / "lists" / "train.txt", bytes_of(list));
  const std::vector<Sample> samples =
      all_samples(Dataset::list_file(dir / "lists" / "train.txt", dir.path()));
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].path, (dir / "data" / "a.jpg").string());
  EXPECT_EQ(samples[0].label, 3);
  EXPECT_EQ(samples[1].encoded, bytes_of("B"));
  EXPECT_EQ(samples[1].label, 7);
  EXPECT_EQ(samples[2].path, (dir / "abs.jpg").string());
}

TEST(ListFile, RootDefaultsToTheListFilesFolder) {
  TempDir dir;
  write_file(dir / "set" / "x.jpg", bytes_of("X"));
  write_file(dir / "set" / "list.txt", bytes_of("x.jpg 1\n"));
  const std::vector<Sample> samples = all_samples(Dataset::list_file(dir / "set" / "list.txt"));
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].encoded, bytes_of("X"));
}

TEST(ListFile, AMalformedLineIsNamedByItsNumber) {
  TempDir dir;
  for (const std::string bad : {"a.jpg\n", "a.jpg cat\n", "a.jpg 3x\n", "a.jpg -1\n", " 4\n"}) {
    write_file(dir / "list.txt", bytes_of("# header\nok.jpg 1\n" + bad));
    try {
      Dataset::list_file(dir / "list.txt");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("line 3"), std::string::npos) << error.what();
    }
  }
  EXPECT_THROW(Dataset::list_file(dir / "missing.txt"), IoError);
}

TEST(Files, LabelsMustMatchThePaths) {
  EXPECT_THROW(Dataset::files({"a.jpg", "b.jpg"}, {1}), InvalidArgument);
  EXPECT_EQ(Dataset::files({"a.jpg", "b.jpg"}).source_size(), 2u);
}

TEST(Files, UnlabelledFilesHaveLabelMinusOne) {
  TempDir dir;
  write_file(dir / "a.jpg", bytes_of("a"));
  const std::vector<Sample> samples = all_samples(Dataset::files({(dir / "a.jpg").string()}));
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].label, -1);
}

TEST(Memory, BuffersAreNamedByTheirPosition) {
  const std::vector<Sample> samples =
      all_samples(Dataset::memory({bytes_of("one"), bytes_of("two")}, {4, 5}));
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[1].path, "<memory:1>");
  EXPECT_EQ(samples[1].encoded, bytes_of("two"));
  EXPECT_EQ(samples[1].label, 5);
  EXPECT_THROW(Dataset::memory({bytes_of("x")}, {1, 2}), InvalidArgument);
}

TEST(Read, AMissingFileFailsInTheReadStageWithPathAndReason) {
  TempDir dir;
  const std::string missing = (dir / "gone.jpg").string();
  SampleIterator it = Dataset::files({missing}).begin();
  try {
    it.next();
    FAIL() << "no error";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.path(), missing);
    EXPECT_EQ(error.stage(), "read");
    EXPECT_NE(error.reason().find("No such file or directory"), std::string::npos) << error.reason();
  }
  EXPECT_FALSE(it.next().has_value());  // the iterator ends after a failure
}

TEST(Read, ADirectoryIsNotARegularFile) {
  TempDir dir;
  SampleIterator it = Dataset::files({dir.path().string()}).begin();
  EXPECT_THROW(it.next(), PipelineError);
}

TEST(Read, ReadsRealJpegsWhole) {
  TempDir dir;
  const std::vector<std::uint8_t> jpeg = testing::make_jpeg(40, 60, 3, 5);
  write_file(dir / "c" / "p.jpg", jpeg);
  const std::vector<Sample> samples = all_samples(Dataset::image_folder(dir.path()));
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].encoded, jpeg);
}

}  // namespace
}  // namespace conveyor
