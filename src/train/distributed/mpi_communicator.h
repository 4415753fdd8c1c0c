// The CPU's communicator: Open MPI, on a communicator of its own (a duplicate of MPI_COMM_WORLD, so that the
// program's own MPI messages never meet ours) that returns errors instead of ending the job, so that they
// reach the caller with their context.
//
// Every collective is nonblocking (MPI_Iallreduce, MPI_Ibcast, MPI_Ibarrier): a gradient bucket's
// all-reduce begins as soon as its last gradient is made, progress() moves it along between the backward
// pass's layers (Open MPI has no progress thread: a nonblocking collective advances inside MPI calls), and
// join() waits for all of them, polling with MPI_Testall against collective_timeout, so that a rank that
// died or hangs ends this one with a CollectiveError instead of a wait without end. MPI has no average:
// the sum is divided by the world size after the wait.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "conveyor/ranks.h"
#include "src/train/distributed/communicator.h"
#include "src/train/distributed/mpi_session.h"

namespace conveyor::train {

class MpiCommunicator final : public Communicator {
 public:
  // Joins MPI (MpiSession: throws InvalidArgument without an MPI launcher, or when MPI's world is not
  // `ranks`) and makes the communicator, a collective of every rank bounded by connect_timeout.
  MpiCommunicator(const Ranks& ranks, std::chrono::milliseconds connect_timeout,
                  std::chrono::milliseconds collective_timeout);
  ~MpiCommunicator() override;

  std::string describe() const override;
  void attach(nn::Context& context) override;
  void fork() override {}  // the CPU context's work is done when its calls return
  void all_reduce_average(void* data, std::size_t count, nn::DType type, const std::string& what) override;
  void broadcast(void* data, std::size_t count, nn::DType type, int root, const std::string& what) override;
  void join() override;
  void progress() override;
  void average_on_host(std::span<double> values) override;
  void barrier() override;
  void abandon() noexcept override;

 private:
  // A collective begun and not yet waited for.
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    float* average = nullptr;  // summed floats to divide by the world size once complete (null: none)
    std::size_t count = 0;
    std::string what;
  };

  void check_usable() const;
  // Starts one non-blocking collective per piece of at most 2^30 floats (MPI counts are ints), each waited
  // for by wait_all(): post(first float, count, request) calls `call` and returns its status; `average`:
  // divide by the world size once complete.
  using PostPiece = std::function<int(float* first, int count, MPI_Request* request)>;
  void post_in_pieces(void* data, std::size_t count, nn::DType type, const std::string& what, bool average,
                      const char* call, const PostPiece& post);
  // Waits for every pending collective, or throws CollectiveError (and abandons) after `limit`.
  void wait_all(std::chrono::milliseconds limit, const std::string& during);
  [[noreturn]] void fail(const std::string& message);
  std::string where() const;

  MpiSession& session_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::chrono::milliseconds collective_timeout_;
  std::vector<Pending> pending_;
  std::vector<MPI_Request> requests_;  // scratch for MPI_Testall, in pending_'s order
  bool failed_ = false;
  std::string failure_;
};

}  // namespace conveyor::train
