// The file rendezvous: files in a folder every rank can see. A broadcast is rank 0 writing
// "broadcast-<k>" under a temporary name and linking it into place (so that no rank reads half of it, and
// so that an old one from an earlier job is found, not overwritten); a barrier is every rank creating
// "barrier-<k>-rank-<r>" (exclusively: an old one means the folder is not new) and waiting until all
// exist. The files stay: the last barrier's may still be looked for by a slower rank. Waits look at the
// folder every millisecond, backing off to 50 ms: shared file systems do not all deliver change
// notifications, so looking again is the portable way.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "src/train/distributed/rendezvous_factory.h"

namespace conveyor::train::detail {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class FileRendezvous final : public Rendezvous {
 public:
  FileRendezvous(const Ranks& ranks, fs::path folder, const RendezvousOptions& options)
      : Rendezvous(ranks), folder_(std::move(folder)), timeout_(options.timeout) {
    where_ = "rendezvous in " + folder_.string() + " (rank " + std::to_string(ranks.rank) + " of " +
             std::to_string(ranks.world_size) + ")";
    std::error_code error;
    fs::create_directories(folder_, error);
    if (error) throw RendezvousError(where_ + ": cannot make the folder: " + error.message());
  }

  std::vector<std::uint8_t> broadcast(std::span<const std::uint8_t> data) override {
    const int step = ++broadcasts_;
    const fs::path path = folder_ / ("broadcast-" + std::to_string(step));
    if (ranks().is_main()) {
      publish(path, data);
      return {data.begin(), data.end()};
    }
    const Clock::time_point deadline = Clock::now() + timeout_;
    if (!wait_until([&] { return fs::exists(path); }, deadline))
      throw RendezvousError(where_ + ": rank 0's broadcast " + std::to_string(step) +
                            " did not come within " + std::to_string(timeout_.count()) + " ms");
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> out{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.eof() && in.fail()) throw RendezvousError(where_ + ": cannot read " + path.string());
    return out;
  }

  void barrier() override {
    const int step = ++barriers_;
    const auto file = [&](int rank) {
      return folder_ / ("barrier-" + std::to_string(step) + "-rank-" + std::to_string(rank));
    };
    const int fd = ::open(file(ranks().rank).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw RendezvousError(
          where_ + ": cannot create " + file(ranks().rank).string() + ": " + std::strerror(errno) +
          (errno == EEXIST ? " (the folder holds an earlier job's files: use a new one)" : ""));
    }
    ::close(fd);
    const Clock::time_point deadline = Clock::now() + timeout_;
    std::vector<int> missing;
    const bool all = wait_until(
        [&] {
          missing.clear();
          for (int rank = 0; rank < ranks().world_size; ++rank)
            if (!fs::exists(file(rank))) missing.push_back(rank);
          return missing.empty();
        },
        deadline);
    if (!all)
      throw RendezvousError(where_ + ": rank" + (missing.size() > 1 ? "s " : " ") + rank_list(missing) +
                            " did not reach barrier " + std::to_string(step) + " within " +
                            std::to_string(timeout_.count()) + " ms");
  }

 private:
  void publish(const fs::path& path, std::span<const std::uint8_t> data) const {
    const fs::path temporary = path.string() + ".partial-" + std::to_string(::getpid());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
      out.flush();
      if (!out) throw RendezvousError(where_ + ": cannot write " + temporary.string());
    }
    const int status = ::link(temporary.c_str(), path.c_str());
    const int error = errno;
    fs::remove(temporary);
    if (status != 0)
      throw RendezvousError(
          where_ + ": cannot publish " + path.string() + ": " + std::strerror(error) +
          (error == EEXIST ? " (the folder holds an earlier job's files: use a new one)" : ""));
  }

  // Looks until `done` holds or the deadline passes.
  template <class Done>
  static bool wait_until(Done&& done, Clock::time_point deadline) {
    auto delay = std::chrono::milliseconds(1);
    for (;;) {
      if (done()) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::min<Clock::duration>(delay, deadline - Clock::now()));
      delay = std::min(delay * 2, std::chrono::milliseconds(50));
    }
  }

  const fs::path folder_;
  const std::chrono::milliseconds timeout_;
  std::string where_;
  int broadcasts_ = 0;
  int barriers_ = 0;
};

}  // namespace

std::unique_ptr<Rendezvous> make_file_rendezvous(const Ranks& ranks, const std::filesystem::path& folder,
                                                 const RendezvousOptions& options) {
  return std::make_unique<FileRendezvous>(ranks, folder, options);
}

}  // namespace conveyor::train::detail
