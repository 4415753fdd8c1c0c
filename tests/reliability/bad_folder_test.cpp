// A whole ImageFolder tree as users find them: every case of the catalogue spread over class folders,
// names that are not UTF-8, directories named .jpg, symbolic-link loops, dangling links, links to good
// images, an empty class, files of other types. The listing holds exactly the regular .jpg/.jpeg files;
// with on_error = skip every good image arrives exactly once per epoch and every bad one is counted with
// its reason, exactly; with on_error = fail the first bad file in order stops the epoch.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bad_inputs.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

namespace fs = std::filesystem;
using testing::FileCase;

struct Expected {
  std::int64_t label;
  const FileCase* file;  // the case it was written from
};

class MessyFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path root = dir_.path();
    const std::vector<std::string> classes = {"class_a", "class_b", "class_c_empty", "class_d"};
    for (const std::string& name : classes) fs::create_directories(root / name);
    const std::int64_t label_of[] = {0, 1, 3};  // class_c_empty (label 2) stays empty
    const fs::path homes[] = {root / "class_a", root / "class_b" / "nested" / "deeper", root / "class_d"};
    for (std::size_t i = 0; i < cases_.size(); ++i) {
      // Every third name is not valid UTF-8 (Latin-1 bytes), which POSIX file names allow.
      const std::string stem = i % 3 == 1 ? cases_[i].name + "_caf\xe9\xff" : cases_[i].name;
      const std::string extension = i % 4 == 3 ? ".JPEG" : ".jpg";
      add(homes[i % 3] / (stem + extension), label_of[i % 3], cases_[i]);
    }
    // A link to a good image is an image of its own (its own path); a directory named .jpg is not, but
    // the images inside it are.
    const FileCase& first_good =
        *std::find_if(cases_.begin(), cases_.end(), [](const FileCase& c) { return c.good(); });
    fs::create_symlink(root / "class_a" / (first_good.name + ".jpg"), root / "class_d" / "link_to_good.jpg");
    expected_[(root / "class_d" / "link_to_good.jpg").string()] = {3, &first_good};
    fs::create_directories(root / "class_d" / "folder.jpg");
    add(root / "class_d" / "folder.jpg" / "inside.jpg", 3, first_good);
    // Loops and dead ends that a walk must neither follow nor list.
    fs::create_directory_symlink("..", root / "class_a" / "parent_loop");
    fs::create_directory_symlink(".", root / "class_b" / "nested" / "self_loop.jpg");
    fs::create_symlink("cycle_b.jpg", root / "class_a" / "cycle_a.jpg");
    fs::create_symlink("cycle_a.jpg", root / "class_a" / "cycle_b.jpg");
    fs::create_symlink("missing.jpg", root / "class_a" / "dangling.jpg");
    fs::create_directory_symlink(root / "class_a", root / "link_class");  // not a class
    // Not images: other extensions, special files, files outside any class.
    testing::write_file(root / "class_a" / "notes.txt", first_good.bytes);
    testing::write_file(root / "class_a" / "picture.png", first_good.bytes);
    testing::write_file(root / "root_level.jpg", first_good.bytes);
    ASSERT_EQ(::mkfifo((root / "class_b" / "fifo.jpg").c_str(), 0644), 0);
    make_socket(root / "class_d" / "socket.jpg");
  }

  void add(const fs::path& path, std::int64_t label, const FileCase& c) {
    testing::write_file(path, c.bytes);
    expected_[path.string()] = {label, &c};
  }

  // A listening Unix socket's file: bound, then the descriptor closed (the file stays).
  static void make_socket(const fs::path& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string name = path.string();
    ASSERT_LT(name.size(), sizeof address.sun_path);
    name.copy(address.sun_path, name.size());
    const int bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
    ::close(fd);
    ASSERT_EQ(bound, 0);
  }

  std::size_t count(bool good) const {
    return static_cast<std::size_t>(std::count_if(
        expected_.begin(), expected_.end(), [good](const auto& e) { return e.second.file->good() == good; }));
  }

  testing::TempDir dir_;
  std::vector<FileCase> cases_ = testing::file_cases();
  std::map<std::string, Expected> expected_;  // path -> label and case
};

TEST_F(MessyFolder, TheListingHoldsExactlyTheRegularJpegFilesOfTheClassFolders) {
  const testing::Watchdog watchdog(std::chrono::seconds(10), "listing a folder with loops");
  const Dataset folder = Dataset::image_folder(dir_.path());
  EXPECT_EQ(folder.class_names(),
            (std::vector<std::string>{"class_a", "class_b", "class_c_empty", "class_d"}));
  std::map<std::string, std::int64_t> listed, wanted;
  for (std::size_t i = 0; i < folder.source_size(); ++i)
    listed[folder.source_path(i)] = folder.source_label(i);
  for (const auto& [path, e] : expected_) wanted[path] = e.label;
  EXPECT_EQ(listed, wanted);
  EXPECT_EQ(folder.source_size(), expected_.size()) << "nothing is listed twice";
}

TEST_F(MessyFolder, SkipDeliversEveryGoodImageOncePerEpochAndCountsEveryBadOne) {
  std::map<std::string, int> wanted_paths;
  std::map<std::string, std::uint64_t> wanted_reasons;
  for (const auto& [path, e] : expected_) {
    if (e.file->good())
      wanted_paths[path] = 2;
    else
      wanted_reasons[e.file->skip_key()] += 2;
  }
  ASSERT_GE(count(false), 15u);
  for (const int threads : {1, 2, 4}) {
    for (const bool deterministic : {true, false}) {
      const testing::Watchdog watchdog(std::chrono::seconds(30), "skip over a messy folder");
      SampleIterator it =
          testing::with_ops(Dataset::image_folder(dir_.path()).shuffle(64, 3).repeat(2),
                            testing::decode_chain())
              .with_options(
                  {.threads = threads, .deterministic = deterministic, .on_error = OnError::skip, .seed = 9})
              .begin();
      std::map<std::string, int> delivered;
      while (std::optional<Sample> sample = it.next()) {
        ++delivered[sample->path];
        EXPECT_EQ(sample->label, expected_.at(sample->path).label);
        EXPECT_EQ(sample->image().shape(), testing::kOutputShape);
      }
      EXPECT_EQ(delivered, wanted_paths) << threads << " threads, deterministic " << deterministic;
      const PipelineStats stats = it.stats();
      EXPECT_EQ(stats.skipped, 2 * count(false));
      EXPECT_EQ(stats.elements_out, 2 * count(true));
      EXPECT_EQ(stats.elements_in, 2 * expected_.size());
      EXPECT_EQ(stats.skip_reasons, wanted_reasons);
      ASSERT_EQ(stats.skipped_samples.size(), 2 * count(false));
      for (const SkippedSample& s : stats.skipped_samples) {
        const FileCase& c = *expected_.at(s.path).file;
        EXPECT_FALSE(c.good()) << s.path;
        EXPECT_EQ(s.stage, c.stage) << s.path;
        EXPECT_NE(s.reason.find("(" + c.kind + ")"), std::string::npos) << s.path << ": " << s.reason;
      }
    }
  }
}

TEST_F(MessyFolder, SkipFillsBatchesWithExactlyTheGoodLabels) {
  std::map<std::int64_t, std::size_t> wanted;
  for (const auto& [path, e] : expected_)
    if (e.file->good()) ++wanted[e.label];
  const testing::Watchdog watchdog(std::chrono::seconds(30), "batches over a messy folder");
  BatchIterator it = testing::with_ops(Dataset::image_folder(dir_.path()), testing::decode_chain())
                         .with_options({.threads = 3, .on_error = OnError::skip})
                         .batch(4)
                         .prefetch(1)
                         .begin();
  std::map<std::int64_t, std::size_t> labels;
  std::vector<std::size_t> sizes;
  while (std::optional<Batch> batch = it.next()) {
    for (const std::int64_t label : batch->labels()) ++labels[label];
    sizes.push_back(batch->size());
    const PipelineStats stats = it.stats();
    EXPECT_LE(stats.pool_buffers, stats.pool_capacity);
  }
  EXPECT_EQ(labels, wanted);
  ASSERT_FALSE(sizes.empty());
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i)
    EXPECT_EQ(sizes[i], 4u) << "skips leave no hole in a batch";
  EXPECT_EQ(it.stats().skipped, count(false));
}

TEST_F(MessyFolder, FailStopsAtTheFirstBadFileInOrderAfterEveryGoodOneBeforeIt) {
  const Dataset folder = Dataset::image_folder(dir_.path());
  std::vector<std::string> good_before;
  std::string first_bad;
  for (std::size_t i = 0; i < folder.source_size() && first_bad.empty(); ++i) {
    const std::string path = folder.source_path(i);
    if (expected_.at(path).file->good())
      good_before.push_back(path);
    else
      first_bad = path;
  }
  ASSERT_FALSE(first_bad.empty());
  const FileCase& bad = *expected_.at(first_bad).file;
  const testing::Watchdog watchdog(std::chrono::seconds(30), "fail over a messy folder");
  SampleIterator it = testing::with_ops(folder, testing::decode_chain()).with_options({.threads = 4}).begin();
  std::vector<std::string> delivered;
  try {
    while (std::optional<Sample> sample = it.next()) delivered.push_back(sample->path);
    FAIL() << "no error";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.path(), first_bad);
    EXPECT_EQ(error.stage(), bad.stage);
    EXPECT_NE(error.reason().find("(" + bad.kind + ")"), std::string::npos) << error.reason();
  }
  EXPECT_EQ(delivered, good_before);
  EXPECT_FALSE(it.next());
}

TEST_F(MessyFolder, TheCropChainSkipsExactlyTheFilesNoWindowOfWhichDecodes) {
  // Leave out the files cut inside a baseline scan: whether their window decodes depends on the draw.
  std::vector<std::string> paths;
  std::size_t good = 0, bad = 0;
  for (const auto& [path, e] : expected_) {
    if (!e.file->fails_every_window) continue;
    paths.push_back(path);
    (e.file->good() ? good : bad) += 1;
  }
  const testing::Watchdog watchdog(std::chrono::seconds(30), "crop chain over a messy folder");
  BatchIterator it = testing::with_ops(Dataset::files(paths), testing::crop_chain())
                         .with_options({.threads = 2, .on_error = OnError::skip})
                         .batch(3)
                         .begin();
  std::size_t delivered = 0;
  while (std::optional<Batch> batch = it.next()) delivered += batch->size();
  EXPECT_EQ(delivered, good);
  EXPECT_EQ(it.stats().skipped, bad);
}

}  // namespace
}  // namespace conveyor
