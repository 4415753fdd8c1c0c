// The rendezvous across real processes: 2-4 copies of rendezvous_peer meet over TCP on the loopback
// address or through a folder, get rank 0's bytes, and pass barriers together; a rank that never comes
// ends every other rank in an error that names it, within the timeout.
#include "conveyor/train/rendezvous.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <sstream>

#include "barrier_log.h"
#include "conveyor/error.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/watchdog.h"

namespace conveyor::train {
namespace {

using testing::ChildProcess;
using testing::expect_barriers_held;
using testing::ProcessResult;
using testing::TempDir;

// A port nobody listens on now (the kernel's choice for a socket bound to port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string expected_hex() {
  std::string hex;
  for (int i = 0; i < 128; ++i) {
    char digits[3];
    std::snprintf(digits, sizeof digits, "%02x",
                  static_cast<unsigned>(static_cast<std::uint8_t>(i * 37 + 11)));
    hex += digits;
  }
  return hex;
}

// Runs `ranks` (a subset of 0..world-1) of a job, the last with a world of `world_of_last` when that is
// not 0; `port` 0: no MASTER_ADDR/MASTER_PORT. Returns each rank's result.
std::map<int, ProcessResult> run_job(int world, const std::vector<int>& ranks, const std::string& method,
                                     int port, int timeout_ms, const std::string& log,
                                     int world_of_last = 0) {
  std::map<int, std::unique_ptr<ChildProcess>> children;
  for (const int rank : ranks) {
    const int this_world = world_of_last != 0 && rank == ranks.back() ? world_of_last : world;
    std::vector<std::string> environment{"RANK=" + std::to_string(rank),
                                         "WORLD_SIZE=" + std::to_string(this_world)};
    if (port != 0) {  // TCP; the file rendezvous needs no address
      environment.push_back("MASTER_ADDR=127.0.0.1");
      environment.push_back("MASTER_PORT=" + std::to_string(port));
    }
    children[rank] = std::make_unique<ChildProcess>(
        std::vector<std::string>{testing::program_path("CONVEYOR_RENDEZVOUS_PEER", CONVEYOR_RENDEZVOUS_PEER),
                                 method, std::to_string(timeout_ms), log},
        environment);
  }
  std::map<int, ProcessResult> results;
  for (auto& [rank, child] : children)
    results[rank] = child->wait(std::chrono::milliseconds(3 * timeout_ms + 20'000));
  return results;
}

void expect_all_met(const std::map<int, ProcessResult>& results) {
  for (const auto& [rank, result] : results) {
    EXPECT_EQ(result.exit_code, 0) << "rank " << rank << ": " << result.err;
    EXPECT_EQ(result.out, "rank " + std::to_string(rank) + ": " + expected_hex() + "\n") << "rank " << rank;
  }
}

TEST(TcpRendezvous, RanksMeetShareRankZerosBytesAndPassBarriersTogether) {
  testing::Watchdog watchdog(std::chrono::seconds(120), "TCP rendezvous");
  for (const int world : {2, 3, 4}) {
    TempDir dir;
    const std::string log = (dir / "barriers.log").string();
    std::vector<int> ranks;
    for (int rank = world - 1; rank >= 0; --rank) ranks.push_back(rank);  // rank 0 starts last
    expect_all_met(run_job(world, ranks, "env://", free_port(), 20'000, log));
    expect_barriers_held(log, world);
  }
}

TEST(FileRendezvous, RanksMeetShareRankZerosBytesAndPassBarriersTogether) {
  testing::Watchdog watchdog(std::chrono::seconds(120), "file rendezvous");
  for (const int world : {2, 4}) {
    TempDir dir;
    const std::string log = (dir / "barriers.log").string();
    const std::string method = "file://" + (dir / "meet").string();
    std::vector<int> ranks;
    for (int rank = world - 1; rank >= 0; --rank) ranks.push_back(rank);
    expect_all_met(run_job(world, ranks, method, 0, 20'000, log));
    expect_barriers_held(log, world);
  }
}

TEST(TcpRendezvous, ARankThatNeverComesEndsTheOthersWithAnErrorNamingIt) {
  testing::Watchdog watchdog(std::chrono::seconds(60), "TCP rendezvous, a rank missing");
  TempDir dir;
  const int port = free_port();
  const auto started = std::chrono::steady_clock::now();
  std::map<int, ProcessResult> results = run_job(3, {0, 1}, "env://", port, 1500, (dir / "log").string());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  EXPECT_EQ(results[0].exit_code, 1);
  EXPECT_NE(results[0].err.find("rendezvous on 127.0.0.1:" + std::to_string(port) +
                                " (rank 0 of 3): 1 of 2 ranks did not connect within 1500 ms: rank 2"),
            std::string::npos)
      << results[0].err;
  EXPECT_EQ(results[1].exit_code, 1);
  // Rank 1 waits for rank 0 with the same 1500 ms: it sees rank 0 close, or (on a loaded machine, when its
  // own clock runs out first) rank 0 not answer; either way the error names rank 0 and the broadcast.
  const bool closed =
      results[1].err.find("rank 0 closed its connection during broadcast 1") != std::string::npos;
  const bool silent =
      results[1].err.find("rank 0 did not answer in time during broadcast 1") != std::string::npos;
  EXPECT_TRUE(closed || silent) << results[1].err;
}

TEST(TcpRendezvous, WithoutRankZeroTheOthersGiveUpAtTheTimeout) {
  testing::Watchdog watchdog(std::chrono::seconds(60), "TCP rendezvous, no rank 0");
  TempDir dir;
  std::map<int, ProcessResult> results = run_job(2, {1}, "env://", free_port(), 1000, (dir / "log").string());
  EXPECT_EQ(results[1].exit_code, 1);
  EXPECT_NE(results[1].err.find("could not reach rank 0 within 1000 ms"), std::string::npos)
      << results[1].err;
}

TEST(TcpRendezvous, ARankOfAnotherWorldIsRefused) {
  testing::Watchdog watchdog(std::chrono::seconds(60), "TCP rendezvous, world sizes differ");
  TempDir dir;
  std::map<int, ProcessResult> results =
      run_job(2, {0, 1}, "env://", free_port(), 5000, (dir / "log").string(), /*world_of_last=*/3);
  EXPECT_EQ(results[0].exit_code, 1);
  EXPECT_NE(results[0].err.find("rank 1 says the world has 3 ranks, rank 0 says 2"), std::string::npos)
      << results[0].err;
  EXPECT_EQ(results[1].exit_code, 1);
}

TEST(FileRendezvous, ARankThatNeverComesEndsTheBarrierWithAnErrorNamingIt) {
  testing::Watchdog watchdog(std::chrono::seconds(60), "file rendezvous, a rank missing");
  TempDir dir;
  const std::string method = "file://" + (dir / "meet").string();
  std::map<int, ProcessResult> results = run_job(3, {0, 1}, method, 0, 1500, (dir / "log").string());
  for (const int rank : {0, 1}) {
    EXPECT_EQ(results[rank].exit_code, 1);
    EXPECT_NE(results[rank].err.find("rank 2 did not reach barrier 1 within 1500 ms"), std::string::npos)
        << results[rank].err;
  }
}

TEST(FileRendezvous, AFolderFromAnEarlierJobIsRefused) {
  testing::Watchdog watchdog(std::chrono::seconds(60), "file rendezvous, old folder");
  TempDir dir;
  const std::string method = "file://" + (dir / "meet").string();
  expect_all_met(run_job(2, {0, 1}, method, 0, 10'000, (dir / "log").string()));
  std::map<int, ProcessResult> again = run_job(2, {0, 1}, method, 0, 2000, (dir / "log2").string());
  EXPECT_EQ(again[0].exit_code, 1);
  EXPECT_NE(again[0].err.find("earlier job's files"), std::string::npos) << again[0].err;
}

TEST(Rendezvous, OneRankNeedsNobody) {
  const std::unique_ptr<Rendezvous> alone = connect_rendezvous(Ranks{});
  const std::vector<std::uint8_t> bytes{1, 2, 3};
  EXPECT_EQ(alone->broadcast(bytes), bytes);
  alone->barrier();
  EXPECT_EQ(alone->ranks().world_size, 1);
}

TEST(Rendezvous, RejectsMethodsItDoesNotKnowAndMissingAddresses) {
  Ranks two;
  two.world_size = 2;
  EXPECT_THROW(connect_rendezvous(two, "env://"), InvalidArgument);  // no MASTER_ADDR / MASTER_PORT
  EXPECT_THROW(connect_rendezvous(two, "nccl://x"), InvalidArgument);
  EXPECT_THROW(connect_rendezvous(two, "tcp://host"), InvalidArgument);
  EXPECT_THROW(connect_rendezvous(two, "tcp://host:99999"), InvalidArgument);
  EXPECT_THROW(connect_rendezvous(two, "file://"), InvalidArgument);
  two.rank = 2;
  EXPECT_THROW(connect_rendezvous(two, "tcp://127.0.0.1:1"), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::train
