// One rank of the rendezvous tests: meets the others through METHOD with the ranks of its environment
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), receives rank 0's 128 bytes (as an ncclUniqueId would
// travel) and prints them in hex, then passes three barriers, appending "enter RANK K" before and
// "leave RANK K" after barrier K to LOG (O_APPEND: the file's order is the order of the writes).
//
//   rendezvous_peer METHOD TIMEOUT_MS LOG
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "conveyor/ranks.h"
#include "conveyor/train/rendezvous.h"

namespace {

void log_line(const std::string& log, const std::string& line) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = line + "\n";
  if (::write(fd, text.data(), text.size()) < 0) std::perror("write");
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: rendezvous_peer METHOD TIMEOUT_MS LOG\n");
    return 2;
  }
  int rank = -1;
  try {
    const conveyor::Ranks ranks = conveyor::ranks_from_environment();
    rank = ranks.rank;
    conveyor::train::RendezvousOptions options;
    options.timeout = std::chrono::milliseconds(std::stoll(argv[2]));
    auto rendezvous = conveyor::train::connect_rendezvous(ranks, argv[1], options);
    std::vector<std::uint8_t> id;
    if (ranks.is_main())
      for (int i = 0; i < 128; ++i) id.push_back(static_cast<std::uint8_t>(i * 37 + 11));
    const std::vector<std::uint8_t> got = rendezvous->broadcast(id);
    std::string hex;
    for (const std::uint8_t byte : got) {
      char digits[3];
      std::snprintf(digits, sizeof digits, "%02x", byte);
      hex += digits;
    }
    std::printf("rank %d: %s\n", rank, hex.c_str());
    std::fflush(stdout);
    for (int k = 1; k <= 3; ++k) {
      log_line(argv[3], "enter " + std::to_string(rank) + " " + std::to_string(k));
      rendezvous->barrier();
      log_line(argv[3], "leave " + std::to_string(rank) + " " + std::to_string(k));
    }
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rank %d: %s\n", rank, error.what());
    return 1;
  }
}
