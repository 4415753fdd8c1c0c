// How the processes of a data-parallel job meet before their first collective: rank 0 shares a few bytes
// with every rank (NCCL's 128-byte ncclUniqueId, from which each rank then makes its communicator) and
// the ranks wait for one another at barriers. Two ways to meet, as torch.distributed's init methods:
//   "env://"              TCP on MASTER_ADDR:MASTER_PORT (the Ranks read from the environment)
//   "tcp://HOST:PORT"     TCP on HOST:PORT
//   "file:///shared/dir"  files in a folder every rank can see (a shared file system); the folder must
//                         be new for each job, or at least empty
//
//   const conveyor::Ranks ranks = conveyor::ranks_from_environment();
//   auto rendezvous = conveyor::train::connect_rendezvous(ranks);
//   ncclUniqueId id{};
//   if (ranks.is_main()) ncclGetUniqueId(&id);
//   const std::vector<std::uint8_t> bytes = rendezvous->broadcast(as_bytes(id));   // every rank
//
// Every wait is bounded by RendezvousOptions::timeout: a rank that never comes, or one that dies, ends in
// a RendezvousError naming the ranks that are missing, never in a hang.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ranks.h"

namespace conveyor::train {

// The ranks could not meet: who is missing or what went wrong, where, and after how long.
class RendezvousError : public Error {
 public:
  using Error::Error;
};

struct RendezvousOptions {
  // The longest any one step waits: meeting (all ranks connected), each broadcast, each barrier.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;

  // Rank 0's `bytes` on every rank: rank 0 passes them (and gets them back), the others pass nothing.
  // Every rank must call it, in the same order relative to barrier().
  virtual std::vector<std::uint8_t> broadcast(std::span<const std::uint8_t> bytes) = 0;
  // Returns once every rank has called barrier() as many times as this one.
  virtual void barrier() = 0;

  const Ranks& ranks() const noexcept { return ranks_; }

 protected:
  explicit Rendezvous(Ranks ranks) : ranks_(std::move(ranks)) {}

 private:
  Ranks ranks_;
};

// Meets the other ranks as `method` says (see the top of this file): returns once every rank has come,
// for TCP (rank 0 listens on all interfaces at the port; the others connect, retrying until it listens),
// at once for files. Throws RendezvousError on a timeout or a rank that does not belong (another world
// size, a rank twice), InvalidArgument for a method it does not know or missing MASTER_ADDR/MASTER_PORT.
std::unique_ptr<Rendezvous> connect_rendezvous(const Ranks& ranks, const std::string& method = "env://",
                                               const RendezvousOptions& options = {});

}  // namespace conveyor::train
