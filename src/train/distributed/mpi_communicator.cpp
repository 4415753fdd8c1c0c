#include "src/train/distributed/mpi_communicator.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "conveyor/error.h"
#include "conveyor/train/data_parallel.h"
#include "src/train/distributed/timeout_text.h"

namespace conveyor::train {
namespace {

using Clock = std::chrono::steady_clock;

// MPI counts are ints: longer arrays travel in pieces of this many elements.
constexpr std::size_t kMaxPiece = std::size_t{1} << 30;

void require_float(nn::DType type, const std::string& what) {
  if (type != nn::DType::f32)
    throw InvalidArgument("data parallel (Open MPI): " + what +
                          " is not float32; the CPU reference computes in float32 only");
}

}  // namespace

MpiCommunicator::MpiCommunicator(const Ranks& ranks, std::chrono::milliseconds connect_timeout,
                                 std::chrono::milliseconds collective_timeout)
    : Communicator(ranks.rank, ranks.world_size),
      session_(MpiSession::of_this_process(ranks)),
      collective_timeout_(collective_timeout) {
  Pending dup{.what = "making the communicator (MPI_Comm_idup of MPI_COMM_WORLD)"};
  CONVEYOR_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &comm_, &dup.request), where());
  pending_.push_back(std::move(dup));
  wait_all(connect_timeout, "meeting the other ranks");
  CONVEYOR_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), where());
}

MpiCommunicator::~MpiCommunicator() {
  // An abandoned communicator may still have collectives in flight that other ranks never join: freeing
  // it could wait for them. MPI_Abort at the session's end takes it down instead.
  if (failed_ || comm_ == MPI_COMM_NULL) return;
  MPI_Comm_free(&comm_);
}

std::string MpiCommunicator::describe() const { return session_.library(); }

std::string MpiCommunicator::where() const {
  return "data parallel (Open MPI, rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ")";
}

void MpiCommunicator::attach(nn::Context& context) {
  if (context.device() >= 0)
    throw InvalidArgument(where() + ": MPI carries the CPU's collectives; a GPU trains through NCCL");
}

void MpiCommunicator::check_usable() const {
  if (failed_) throw CollectiveError(failure_);
}

void MpiCommunicator::fail(const std::string& message) {
  failed_ = true;
  failure_ = message;
  session_.abandoned();
  throw CollectiveError(message);
}

void MpiCommunicator::post_in_pieces(void* data, std::size_t count, nn::DType type, const std::string& what,
                                     bool average, const char* call, const PostPiece& post) {
  check_usable();
  require_float(type, what);
  auto* values = static_cast<float*>(data);
  for (std::size_t begin = 0; begin < count; begin += kMaxPiece) {
    const std::size_t piece = std::min(kMaxPiece, count - begin);
    Pending p{.average = average ? values + begin : nullptr, .count = piece, .what = what};
    check_mpi(post(values + begin, static_cast<int>(piece), &p.request), call, where() + ": " + what);
    pending_.push_back(std::move(p));
  }
}

void MpiCommunicator::all_reduce_average(void* data, std::size_t count, nn::DType type,
                                         const std::string& what) {
  post_in_pieces(data, count, type, what, true, "MPI_Iallreduce",
                 [&](float* first, int n, MPI_Request* request) {
                   return MPI_Iallreduce(MPI_IN_PLACE, first, n, MPI_FLOAT, MPI_SUM, comm_, request);
                 });
}

void MpiCommunicator::broadcast(void* data, std::size_t count, nn::DType type, int root,
                                const std::string& what) {
  post_in_pieces(data, count, type, what, false, "MPI_Ibcast",
                 [&](float* first, int n, MPI_Request* request) {
                   return MPI_Ibcast(first, n, MPI_FLOAT, root, comm_, request);
                 });
}

void MpiCommunicator::progress() {
  if (failed_ || pending_.empty()) return;
  requests_.clear();
  for (const Pending& p : pending_) requests_.push_back(p.request);
  int done = 0;
  CONVEYOR_MPI(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE),
               where() + ": moving the all-reduces along");
  // Completed requests became MPI_REQUEST_NULL: keep them so, the division waits for join().
  for (std::size_t i = 0; i < pending_.size(); ++i) pending_[i].request = requests_[i];
}

void MpiCommunicator::join() {
  check_usable();
  wait_all(collective_timeout_, "the step's collectives");
}

void MpiCommunicator::wait_all(std::chrono::milliseconds limit, const std::string& during) {
  if (pending_.empty()) return;
  const auto start = Clock::now();
  // Short naps while the collectives run: a few microseconds first (most complete at once), growing to a
  // millisecond, so that a long wait costs no core and a short one little latency.
  auto nap = std::chrono::microseconds(5);
  for (;;) {
    requests_.clear();
    for (const Pending& p : pending_) requests_.push_back(p.request);
    int done = 0;
    CONVEYOR_MPI(
        MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE),
        where() + ": " + during);
    for (std::size_t i = 0; i < pending_.size(); ++i) pending_[i].request = requests_[i];
    if (done) break;
    if (Clock::now() - start > limit) {
      std::string waiting;
      for (const Pending& p : pending_)
        if (p.request != MPI_REQUEST_NULL) waiting += (waiting.empty() ? "" : ", ") + p.what;
      fail(where() + ": " + during + " made no progress for " + timeout_text(limit) +
           ": another rank stopped taking part (it was killed, hangs, or was kept from the collectives for "
           "longer than the timeout); still waiting for: " +
           waiting);
    }
    std::this_thread::sleep_for(nap);
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(1));
  }
  const float scale = 1.0f / static_cast<float>(size());
  for (const Pending& p : pending_)
    if (p.average != nullptr)
      for (std::size_t i = 0; i < p.count; ++i) p.average[i] *= scale;
  pending_.clear();
}

void MpiCommunicator::average_on_host(std::span<double> values) {
  check_usable();
  Pending p{.what = "the average of " + std::to_string(values.size()) + " values"};
  CONVEYOR_MPI(MPI_Iallreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE,
                              MPI_SUM, comm_, &p.request),
               where() + ": " + p.what);
  pending_.push_back(std::move(p));
  wait_all(collective_timeout_, "averaging values over the ranks");
  for (double& v : values) v /= static_cast<double>(size());
}

void MpiCommunicator::barrier() {
  check_usable();
  Pending p{.what = "a barrier"};
  CONVEYOR_MPI(MPI_Ibarrier(comm_, &p.request), where() + ": a barrier");
  pending_.push_back(std::move(p));
  wait_all(collective_timeout_, "a barrier");
}

void MpiCommunicator::abandon() noexcept {
  if (failed_) return;
  failed_ = true;
  failure_ = where() + ": an earlier call failed part-way through a collective; make a new trainer";
  session_.abandoned();
}

}  // namespace conveyor::train
