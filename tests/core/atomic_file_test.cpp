// AtomicFile: the target holds the old content or the new one, never a part; nothing is left behind.
#include "conveyor/atomic_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "conveyor/error.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t entries(const std::filesystem::path& folder) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder)) ++n;
  return n;
}

TEST(AtomicFile, ReplacesTheTargetWholeOnCommit) {
  const testing::TempDir dir;
  write_file_atomically(dir / "state.json", "old");
  AtomicFile file(dir / "state.json");
  file.write("new ");
  EXPECT_EQ(read(dir / "state.json"), "old");  // nothing changes before the commit
  file.write("content");
  file.commit();
  EXPECT_EQ(read(dir / "state.json"), "new content");
  EXPECT_EQ(entries(dir.path()), 1u);  // the temporary is gone
}

TEST(AtomicFile, WithoutACommitTheTargetIsUntouchedAndTheTemporaryRemoved) {
  const testing::TempDir dir;
  write_file_atomically(dir / "state.json", "old");
  {
    AtomicFile file(dir / "state.json");
    file.write("half of it");
  }
  EXPECT_EQ(read(dir / "state.json"), "old");
  EXPECT_EQ(entries(dir.path()), 1u);
}

TEST(AtomicFile, AFolderThatDoesNotExistIsAnIoErrorNamingTheFile) {
  const testing::TempDir dir;
  try {
    write_file_atomically(dir / "missing" / "state.json", "x");
    FAIL() << "expected an IoError";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("missing/state.json"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace conveyor
