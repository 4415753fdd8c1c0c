// What the file system can do to a pipeline between listing and reading: files deleted or made unreadable,
// special files (FIFOs, sockets, directories) where an image was expected, empty folders, list files with
// malformed lines. Each failure names the file and the stage ("read"), and nothing hangs.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "support/permissions.h"
#include "support/temp_dir.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) {
  testing::write_file(path, std::vector<std::uint8_t>(text.begin(), text.end()));
}

// Runs a dataset of samples to the end with on_error = skip; returns the paths delivered.
std::vector<std::string> delivered_paths(const Dataset& dataset, PipelineStats* stats = nullptr) {
  SampleIterator it =
      dataset.map(ops::decode()).with_options({.threads = 2, .on_error = OnError::skip}).begin();
  std::vector<std::string> paths;
  while (std::optional<Sample> sample = it.next()) paths.push_back(sample->path);
  if (stats) *stats = it.stats();
  return paths;
}

// The PipelineError of running the dataset with on_error = fail, or nothing.
std::optional<PipelineError> failure_of(const Dataset& dataset) {
  SampleIterator it = dataset.map(ops::decode()).with_options({.threads = 2}).begin();
  try {
    while (it.next()) {
    }
  } catch (const PipelineError& error) {
    return error;
  }
  return std::nullopt;
}

class Files : public ::testing::Test {
 protected:
  fs::path image(const std::string& relative, std::uint64_t seed = 1) {
    const fs::path path = dir_ / relative;
    testing::write_file(path, testing::make_jpeg(16, 24, 3, seed));
    return path;
  }
  testing::TempDir dir_;
  testing::Watchdog watchdog_{std::chrono::seconds(20), "a file-system test"};
};

TEST_F(Files, AFileDeletedBetweenListingAndReadingFailsInTheReadStage) {
  image("cats/a.jpg", 1);
  const fs::path gone = image("cats/b.jpg", 2);
  image("cats/c.jpg", 3);
  const Dataset folder = Dataset::image_folder(dir_.path());
  ASSERT_EQ(folder.source_size(), 3u);
  fs::remove(gone);

  const std::optional<PipelineError> error = failure_of(folder);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->path(), gone.string());
  EXPECT_EQ(error->stage(), "read");
  EXPECT_NE(error->reason().find("No such file"), std::string::npos) << error->reason();

  PipelineStats stats;
  EXPECT_EQ(delivered_paths(folder, &stats),
            (std::vector<std::string>{(dir_ / "cats/a.jpg").string(), (dir_ / "cats/c.jpg").string()}));
  EXPECT_EQ(stats.skip_reasons, (std::map<std::string, std::uint64_t>{{"read: io", 1}}));
}

TEST_F(Files, AFileReplacedByADirectoryAfterListingFailsInTheReadStage) {
  const fs::path path = image("cats/a.jpg");
  const Dataset folder = Dataset::image_folder(dir_.path());
  fs::remove(path);
  fs::create_directory(path);
  const std::optional<PipelineError> error = failure_of(folder);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->path(), path.string());
  EXPECT_EQ(error->stage(), "read");
}

TEST_F(Files, AFileOverTheSizeLimitIsRefusedInTheReadStageBeforeItIsRead) {
  image("cats/a.jpg", 1);
  const fs::path big = dir_ / "cats/b.jpg";
  testing::write_file(big, std::vector<std::uint8_t>(5000, 0xFF));  // 5,000 bytes, not even a JPEG
  image("cats/c.jpg", 3);
  const std::uintmax_t small_size = fs::file_size(dir_ / "cats/a.jpg");
  ASSERT_LT(small_size, 4000u);
  const Dataset folder = Dataset::image_folder(dir_.path()).map(ops::decode());

  SampleIterator failing = folder.with_options({.threads = 2, .max_file_bytes = 4000}).begin();
  try {
    while (failing.next()) {
    }
    FAIL() << "the 5,000-byte file passed a 4,000-byte limit";
  } catch (const PipelineError& error) {
    EXPECT_EQ(error.path(), big.string());
    EXPECT_EQ(error.stage(), "read");  // refused by size, not by the decoder
    EXPECT_NE(error.reason().find("5000 bytes, over the limit of 4000"), std::string::npos) << error.reason();
  }

  SampleIterator skipping =
      folder.with_options({.threads = 2, .on_error = OnError::skip, .max_file_bytes = 4000}).begin();
  std::vector<std::string> paths;
  while (std::optional<Sample> sample = skipping.next()) paths.push_back(sample->path);
  EXPECT_EQ(paths,
            (std::vector<std::string>{(dir_ / "cats/a.jpg").string(), (dir_ / "cats/c.jpg").string()}));
  EXPECT_EQ(skipping.stats().skip_reasons, (std::map<std::string, std::uint64_t>{{"read: io", 1}}));

  // 0: no limit; the file is read and the decoder refuses it instead.
  SampleIterator unlimited =
      folder.with_options({.threads = 2, .on_error = OnError::skip, .max_file_bytes = 0}).begin();
  while (unlimited.next()) {
  }
  EXPECT_EQ(unlimited.stats().skipped, 1u);
  EXPECT_EQ(unlimited.stats().skip_reasons.count("read: io"), 0u);
}

TEST_F(Files, AnUnreadableFileFailsInTheReadStage) {
  const fs::path path = image("cats/locked.jpg");
  image("cats/open.jpg", 2);
  fs::permissions(path, fs::perms::none);
  if (::access(path.c_str(), R_OK) == 0) {
    ASSERT_FALSE(testing::permission_tests_required())
        << "uid " << ::geteuid() << " still reads a file with no permissions: this run was to deny it";
    GTEST_SKIP() << "running as root: permissions do not deny reads here (CI runs this test as an "
                    "unprivileged user through tests/support/run_unprivileged.sh)";
  }
  const std::optional<PipelineError> error = failure_of(Dataset::image_folder(dir_.path()));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->path(), path.string());
  EXPECT_EQ(error->stage(), "read");
  EXPECT_NE(error->reason().find("Permission denied"), std::string::npos) << error->reason();
  EXPECT_EQ(delivered_paths(Dataset::image_folder(dir_.path())).size(), 1u);
}

TEST_F(Files, AnUnreadableClassFolderIsSkippedWhenListing) {
  image("cats/a.jpg");
  image("dogs/b.jpg");
  fs::permissions(dir_ / "dogs", fs::perms::none);
  if (::access((dir_ / "dogs").c_str(), R_OK) == 0) {
    ASSERT_FALSE(testing::permission_tests_required())
        << "uid " << ::geteuid() << " still lists a folder with no permissions: this run was to deny it";
    GTEST_SKIP() << "running as root: permissions do not deny listing here (CI runs this test as an "
                    "unprivileged user through tests/support/run_unprivileged.sh)";
  }
  const Dataset folder = Dataset::image_folder(dir_.path());
  ASSERT_EQ(folder.source_size(), 1u);
  EXPECT_EQ(folder.source_path(0), (dir_ / "cats/a.jpg").string());
  EXPECT_EQ(folder.class_names(), (std::vector<std::string>{"cats", "dogs"}));
}

// Opening a FIFO for reading blocks until a writer comes; a list file may name one, and reading it must
// fail at once instead of hanging the worker (and with it the iterator's destructor).
TEST_F(Files, AFifoInAListFileFailsInsteadOfBlocking) {
  image("a.jpg");
  ASSERT_EQ(::mkfifo((dir_ / "pipe.jpg").c_str(), 0644), 0);
  image("b.jpg", 2);
  write_text(dir_ / "list.txt", "a.jpg 0\npipe.jpg 1\nb.jpg 2\n");
  const Dataset list = Dataset::list_file(dir_ / "list.txt");
  const std::optional<PipelineError> error = failure_of(list);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->path(), (dir_ / "pipe.jpg").string());
  EXPECT_EQ(error->stage(), "read");
  EXPECT_NE(error->reason().find("not a regular file"), std::string::npos) << error->reason();
  EXPECT_EQ(delivered_paths(list).size(), 2u);
}

TEST_F(Files, ASocketOrADirectoryInAListFileFailsInTheReadStage) {
  image("a.jpg");
  fs::create_directory(dir_ / "folder.jpg");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string socket_path = (dir_ / "socket.jpg").string();
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  socket_path.copy(address.sun_path, socket_path.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ::close(fd);
  write_text(dir_ / "list.txt", "folder.jpg 0\nsocket.jpg 1\na.jpg 2\n");
  PipelineStats stats;
  EXPECT_EQ(delivered_paths(Dataset::list_file(dir_ / "list.txt"), &stats),
            std::vector<std::string>{(dir_ / "a.jpg").string()});
  EXPECT_EQ(stats.skip_reasons, (std::map<std::string, std::uint64_t>{{"read: io", 2}}));
}

TEST_F(Files, NonUtf8NamesAreListedReadAndReportedByteForByte) {
  const fs::path good = image("cl\xe4sse/b\xfcro\xff.jpg");
  const fs::path bad = dir_ / "cl\xe4sse" / "\xc3\x28_broken.jpg";  // an invalid UTF-8 sequence
  testing::write_file(bad, std::vector<std::uint8_t>{0xFF, 0xD8, 0xFF});
  const Dataset folder = Dataset::image_folder(dir_.path());
  EXPECT_EQ(folder.class_names(), std::vector<std::string>{"cl\xe4sse"});
  const std::optional<PipelineError> error = failure_of(folder);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->path(), bad.string());
  EXPECT_NE(std::string(error->what()).find(bad.string()), std::string::npos);
  EXPECT_EQ(delivered_paths(folder), std::vector<std::string>{good.string()});
}

// The message of the InvalidArgument that image_folder(root) throws; a test failure when it throws none.
std::string refusal_of(const fs::path& root) {
  try {
    Dataset::image_folder(root);
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  ADD_FAILURE() << "image_folder('" << root.string() << "') accepted a folder without images";
  return {};
}

TEST_F(Files, EmptyFoldersAreRefusedWithAReason) {
  const std::string root = dir_.path().string();
  const std::string no_class = refusal_of(dir_.path());
  EXPECT_NE(no_class.find("'" + root + "'"), std::string::npos) << no_class;
  EXPECT_NE(no_class.find("no .jpg/.jpeg image"), std::string::npos) << no_class;
  fs::create_directories(dir_ / "cats");
  fs::create_directories(dir_ / "dogs" / "empty" / "deeper");
  const std::string no_image = refusal_of(dir_.path());
  EXPECT_NE(no_image.find("'" + root + "'"), std::string::npos) << no_image;
  EXPECT_NE(no_image.find("no .jpg/.jpeg image"), std::string::npos) << no_image;
  EXPECT_THROW(Dataset::image_folder(dir_ / "missing"), IoError);
}

TEST_F(Files, AnEmptyClassKeepsItsLabelAndYieldsNothing) {
  image("a_cats/1.jpg");
  fs::create_directories(dir_ / "b_empty");
  image("c_dogs/2.jpg", 2);
  const Dataset folder = Dataset::image_folder(dir_.path());
  EXPECT_EQ(folder.class_names(), (std::vector<std::string>{"a_cats", "b_empty", "c_dogs"}));
  ASSERT_EQ(folder.source_size(), 2u);
  EXPECT_EQ(folder.source_label(0), 0);
  EXPECT_EQ(folder.source_label(1), 2);
}

TEST_F(Files, AnEmptyListFileIsAnEmptyDatasetThatEndsAtOnce) {
  write_text(dir_ / "empty.txt", "");
  write_text(dir_ / "comments.txt", "# nothing here\n\n   \n");
  for (const char* name : {"empty.txt", "comments.txt"}) {
    const Dataset list = Dataset::list_file(dir_ / name);
    EXPECT_EQ(list.source_size(), 0u);
    SampleIterator samples = list.map(ops::decode()).begin();
    EXPECT_FALSE(samples.next());
    BatchIterator given_shape = list.map(ops::decode()).batch(4, ImageShape{16, 24, 3}).begin();
    EXPECT_FALSE(given_shape.next());
    BatchIterator probed_shape = list.map(ops::decode()).batch(4).begin();  // no first element to probe
    EXPECT_FALSE(probed_shape.next());
  }
}

TEST_F(Files, MalformedListFileLinesAreRefusedNamingTheLine) {
  image("a.jpg");
  const std::vector<std::string> malformed = {
      "a.jpg",                               // no label
      "a.jpg cat",                           // not a number
      "a.jpg -1",                            // negative
      "a.jpg 3x",                            // trailing garbage
      "a.jpg 1.5",                           // not an integer
      "a.jpg 99999999999999999999999",       // out of range
      " 7",                                  // no path
      std::string("a.jpg\0evil.jpg 1", 16),  // a NUL inside the path: no file can have that name
  };
  for (const std::string& line : malformed) {
    write_text(dir_ / "list.txt", "# header\na.jpg 0\n\n" + line + "\na.jpg 1\n");
    try {
      Dataset::list_file(dir_ / "list.txt");
      ADD_FAILURE() << "accepted '" << line << "'";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("line 4"), std::string::npos) << error.what();
    }
  }
}

TEST_F(Files, APathWithANulByteIsRefusedAsAFileList) {
  image("a.jpg");
  const std::string with_nul = (dir_ / "a.jpg").string() + std::string("\0.png", 5);
  EXPECT_THROW(Dataset::files({with_nul}), InvalidArgument);  // it would read a.jpg under another name
}

TEST_F(Files, ListFilesAcceptCarriageReturnsSpacesInPathsAndAbsolutePaths) {
  const fs::path spaced = image("with space.jpg");
  const fs::path elsewhere = image("sub/abs.jpg", 2);
  write_text(dir_ / "list.txt", "with space.jpg 4\r\n\t" + elsewhere.string() + "\t7  \r\n");
  const Dataset list = Dataset::list_file(dir_ / "list.txt");
  ASSERT_EQ(list.source_size(), 2u);
  EXPECT_EQ(list.source_path(0), spaced.string());
  EXPECT_EQ(list.source_label(0), 4);
  EXPECT_EQ(list.source_path(1), elsewhere.string());
  EXPECT_EQ(list.source_label(1), 7);
  EXPECT_EQ(delivered_paths(list).size(), 2u);
}

TEST_F(Files, AMissingListFileIsAnIoError) {
  EXPECT_THROW(Dataset::list_file(dir_ / "missing.txt"), IoError);
  fs::create_directory(dir_ / "a_folder.txt");
  EXPECT_THROW(Dataset::list_file(dir_ / "a_folder.txt"), IoError);
}

}  // namespace
}  // namespace conveyor
