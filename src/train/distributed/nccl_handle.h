// RAII owner of one NCCL communicator, made nonblocking (ncclConfig_t::blocking = 0) so that no NCCL call
// can hold the host without end: a call that answers ncclInProgress is polled with ncclCommGetAsyncError
// against a deadline, and whatever does not finish in time is aborted (ncclCommAbort) and becomes a
// CollectiveError that says what, where and what NCCL said. Several threads may use one handle: calls,
// polls and the abort are serialised, and nothing touches the communicator after it was aborted.
#pragma once

#include <nccl.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace conveyor::train {

// NCCL's unique id as the bytes MPI_Bcast carries.
using NcclId = std::array<std::uint8_t, sizeof(ncclUniqueId)>;
// ncclGetUniqueId: a fresh id whose root listens in this process, or, with NCCL_COMM_ID set, the id of
// that address (the same on every rank).
NcclId make_nccl_id();

// The NCCL library this process loaded, "2.28.9".
std::string nccl_version();

class NcclHandle {
 public:
  // Rank `rank` of `size` on CUDA device `device` (made current for the call) joins the communicator of
  // `id`. Returns when every rank has joined; throws CollectiveError when NCCL fails or not every rank has
  // joined after `connect_timeout` (a rank that never started, a wrong world size, an unreachable rank 0).
  // Later calls that answer ncclInProgress wait at most `call_timeout`. `where` names the rank in errors.
  NcclHandle(const NcclId& id, int size, int rank, int device, std::chrono::milliseconds connect_timeout,
             std::chrono::milliseconds call_timeout, std::string where);
  // Flushes and frees the communicator (ncclCommFinalize, polled, then ncclCommDestroy), or, after a
  // failure or abandon(), aborts it without waiting for the other ranks.
  ~NcclHandle();
  NcclHandle(const NcclHandle&) = delete;
  NcclHandle& operator=(const NcclHandle&) = delete;

  // Runs `issue` with the communicator (an NCCL call on it) and waits for it when it answers
  // ncclInProgress. Throws CollectiveError, the communicator aborted, when the call or the wait fails or
  // the communicator was aborted before.
  void run(const char* call, const std::string& what, const std::function<ncclResult_t(ncclComm_t)>& issue);

  // From any thread: an error NCCL found on its own (a peer's connection lost), as "<error>: <NCCL's last
  // message>"; empty while healthy. Never waits on the communicator for longer than a call in progress.
  std::string async_error();
  // From any thread: aborts the communicator (its kernels stop, the streams go on) for `reason`, which
  // every later run() throws.
  void abort(const std::string& reason) noexcept;
  // The destructor will abort instead of finalizing (the process leaves a collective half-done).
  void abandon() noexcept;
  // The reason of an abort, or empty.
  std::string failure() const;

  int device() const noexcept { return device_; }
  const std::string& where() const noexcept { return where_; }

 private:
  // With the mutex held: polls until the communicator leaves ncclInProgress; throws (aborting) on an error
  // or after `limit`.
  void wait_ready_locked(std::chrono::milliseconds limit, const std::string& what);
  [[noreturn]] void fail_locked(const std::string& reason);
  void abort_locked(const std::string& reason) noexcept;

  mutable std::mutex mutex_;
  ncclComm_t comm_ = nullptr;
  int device_ = -1;
  std::chrono::milliseconds call_timeout_;
  std::string where_;
  std::string failure_;  // set once aborted
  bool abandoned_ = false;
};

}  // namespace conveyor::train
