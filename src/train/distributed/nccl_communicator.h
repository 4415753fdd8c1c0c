// RAII owner of an NCCL communicator, and the one way to check NCCL calls.
#pragma once

#include <nccl.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace conveyor::train {

// Throws DeviceError("<call> failed in <context> (<file>:<line>): <NCCL's error>: <its last message>").
[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* call, const std::string& context,
                                   ncclComm_t comm, const char* file, int line);

inline void check_nccl(ncclResult_t status, const char* call, const std::string& context, ncclComm_t comm,
                       const char* file, int line) {
  if (status != ncclSuccess) throw_nccl_error(status, call, context, comm, file, line);
}

// NCCL's unique id as the bytes a rendezvous carries.
using NcclId = std::array<std::uint8_t, sizeof(ncclUniqueId)>;
NcclId make_nccl_id();

// The NCCL library this process loaded, "2.28.9".
std::string nccl_version();

class NcclCommunicator {
 public:
  // Rank `rank` of `world_size` on CUDA device `device` (made current for the call). Blocks until every
  // rank has called it with the same id.
  NcclCommunicator(const NcclId& id, int world_size, int rank, int device);
  // One communicator per device, ranks in the order given, for one process driving them all
  // (ncclCommInitAll).
  static std::vector<NcclCommunicator> for_devices(const std::vector<int>& devices);

  // Waits for the communicator's work and frees it (ncclCommDestroy), or, after mark_failed(), ends what
  // is still running or waiting without waiting for the other ranks (ncclCommAbort).
  ~NcclCommunicator();
  NcclCommunicator(NcclCommunicator&& other) noexcept;
  NcclCommunicator& operator=(NcclCommunicator&& other) noexcept;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  ncclComm_t get() const noexcept { return comm_; }
  int device() const noexcept { return device_; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  // A collective of this communicator failed or was left half-done: the destructor must not wait for the
  // other ranks.
  void mark_failed() noexcept { failed_ = true; }

 private:
  NcclCommunicator(ncclComm_t comm, int device, int rank, int size) noexcept
      : comm_(comm), device_(device), rank_(rank), size_(size) {}
  void reset() noexcept;

  ncclComm_t comm_ = nullptr;
  int device_ = -1, rank_ = 0, size_ = 1;
  bool failed_ = false;
};

}  // namespace conveyor::train

// CONVEYOR_NCCL(ncclAllReduce(...), "gradient bucket 3", comm) — comm may be null (no last message then).
#define CONVEYOR_NCCL(call, context, comm) \
  ::conveyor::train::check_nccl((call), #call, (context), (comm), __FILE__, __LINE__)
