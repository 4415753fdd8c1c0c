// conveyor::read_file: the read stage's way of loading a file, public for code that reads files itself.
#include "conveyor/read_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using testing::TempDir;
using testing::write_file;

std::vector<std::uint8_t> pattern(std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 3);
  return bytes;
}

std::string message_of(const std::string& path, std::vector<std::uint8_t>& bytes, std::size_t max_bytes) {
  try {
    read_file(path.c_str(), bytes, max_bytes);
  } catch (const IoError& error) {
    return error.what();
  }
  ADD_FAILURE() << "reading " << path << " did not throw IoError";
  return {};
}

TEST(ReadFile, GivesTheWholeFileAndReusesTheBufferForSmallerOnes) {
  TempDir dir;
  const std::vector<std::uint8_t> big = pattern(300'000), small = pattern(1'000);
  write_file(dir / "big.jpg", big);
  write_file(dir / "small.jpg", small);
  std::vector<std::uint8_t> bytes;
  read_file((dir / "big.jpg").c_str(), bytes);
  EXPECT_EQ(bytes, big);
  const std::uint8_t* storage = bytes.data();
  read_file(dir / "small.jpg", bytes);  // the std::filesystem::path overload
  EXPECT_EQ(bytes, small);
  EXPECT_EQ(bytes.data(), storage) << "a smaller file reallocated the buffer";
}

TEST(ReadFile, AnEmptyFileGivesNoBytes) {
  TempDir dir;
  write_file(dir / "empty.jpg", {});
  std::vector<std::uint8_t> bytes = pattern(10);
  read_file(dir / "empty.jpg", bytes);
  EXPECT_TRUE(bytes.empty());
}

TEST(ReadFile, AMissingFileIsAnIoErrorNamingThePathAndTheReason) {
  TempDir dir;
  std::vector<std::uint8_t> bytes;
  const std::string path = (dir / "missing.jpg").string();
  const std::string message = message_of(path, bytes, 0);
  EXPECT_NE(message.find("cannot open '" + path + "'"), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST(ReadFile, AFifoFailsAtOnceInsteadOfWaitingForAWriter) {
  TempDir dir;
  const std::string path = (dir / "pipe.jpg").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  testing::Watchdog watchdog(std::chrono::seconds(20), "read_file on a FIFO");
  std::vector<std::uint8_t> bytes;
  const std::string message = message_of(path, bytes, 0);
  EXPECT_NE(message.find("'" + path + "' is not a regular file"), std::string::npos) << message;
}

TEST(ReadFile, ADirectoryIsNotARegularFile) {
  TempDir dir;
  std::vector<std::uint8_t> bytes;
  const std::string message = message_of(dir.path().string(), bytes, 0);
  EXPECT_NE(message.find("is not a regular file"), std::string::npos) << message;
}

TEST(ReadFile, AFileOverTheLimitIsRefusedBeforeAnyOfItIsRead) {
  TempDir dir;
  write_file(dir / "big.jpg", pattern(5000));
  std::vector<std::uint8_t> bytes = pattern(3);
  const std::string message = message_of((dir / "big.jpg").string(), bytes, 4000);
  EXPECT_NE(message.find("5000 bytes, over the limit of 4000"), std::string::npos) << message;
  EXPECT_EQ(bytes, pattern(3)) << "the buffer was touched";
  read_file(dir / "big.jpg", bytes, 5000);  // a file exactly at the limit is read
  EXPECT_EQ(bytes, pattern(5000));
}

}  // namespace
}  // namespace conveyor
