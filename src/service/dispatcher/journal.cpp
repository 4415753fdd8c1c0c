#include "src/service/dispatcher/journal.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "conveyor/error.h"

namespace conveyor::service::detail {
namespace {

constexpr std::size_t kFrame = 8;  // u32 length, u32 XXH32

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path) {
  throw IoError("dispatcher journal '" + path.string() + "': " + what + ": " + std::strerror(errno));
}

}  // namespace

Journal::Journal(const std::filesystem::path& folder,
                 const std::function<void(const v1::JournalRecord&)>& apply)
    : path_(folder / "journal") {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) throw IoError("dispatcher work dir '" + folder.string() + "': " + error.message());
  std::vector<char> bytes;
  {
    std::ifstream in(path_, std::ios::binary);
    if (in) bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::size_t at = 0;
  while (bytes.size() - at >= kFrame) {
    std::uint32_t length = 0, sum = 0;
    std::memcpy(&length, bytes.data() + at, 4);
    std::memcpy(&sum, bytes.data() + at + 4, 4);
    if (length > bytes.size() - at - kFrame) break;  // cut short by a crash
    const char* body = bytes.data() + at + kFrame;
    v1::JournalRecord record;
    if (XXH32(body, length, 0) != sum || !record.ParseFromArray(body, static_cast<int>(length))) break;
    apply(record);
    ++replayed_;
    at += kFrame + length;
  }
  cut_bytes_ = bytes.size() - at;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);  // tokens' hashes: the owner's only
  if (fd_ < 0) fail("cannot open", path_);
  if (::ftruncate(fd_, static_cast<off_t>(at)) != 0 || ::lseek(fd_, static_cast<off_t>(at), SEEK_SET) < 0) {
    ::close(fd_);
    fail("cannot cut its damaged tail", path_);
  }
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const v1::JournalRecord& record) {
  const std::string body = record.SerializeAsString();
  std::string frame(kFrame, '\0');
  const auto length = static_cast<std::uint32_t>(body.size());
  const std::uint32_t sum = XXH32(body.data(), body.size(), 0);
  std::memcpy(frame.data(), &length, 4);
  std::memcpy(frame.data() + 4, &sum, 4);
  frame += body;
  for (std::size_t written = 0; written < frame.size();) {
    const ssize_t n = ::write(fd_, frame.data() + written, frame.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot append", path_);
    written += static_cast<std::size_t>(n);
  }
  if (::fdatasync(fd_) != 0) fail("cannot sync", path_);
}

}  // namespace conveyor::service::detail
