#include "src/train/distributed/nccl_handle.h"

#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "conveyor/train/data_parallel.h"
#include "src/device/cuda_handles.h"
#include "src/train/distributed/timeout_text.h"

namespace conveyor::train {
namespace {

using Clock = std::chrono::steady_clock;

// "<NCCL's name of the error>: <its last message>" for `comm` (which may be null).
std::string nccl_text(ncclResult_t status, ncclComm_t comm) {
  std::string text = ncclGetErrorString(status);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += std::string(": ") + last;
  return text;
}

}  // namespace

NcclId make_nccl_id() {
  ncclUniqueId id{};
  const ncclResult_t status = ncclGetUniqueId(&id);
  if (status != ncclSuccess)
    throw CollectiveError("ncclGetUniqueId failed in data parallel (making the NCCL id): " +
                          nccl_text(status, nullptr) + " (NCCL " + nccl_version() + ")");
  NcclId bytes{};
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z since 2.9.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

NcclHandle::NcclHandle(const NcclId& id, int size, int rank, int device,
                       std::chrono::milliseconds connect_timeout, std::chrono::milliseconds call_timeout,
                       std::string where)
    : device_(device), call_timeout_(call_timeout), where_(std::move(where)) {
  ncclUniqueId unique{};
  std::memcpy(&unique, id.data(), sizeof unique);
  cuda::DeviceGuard guard(device);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every call returns at once; wait_ready_locked() bounds the waits
  std::unique_lock lock(mutex_);
  const ncclResult_t status = ncclCommInitRankConfig(&comm_, size, unique, rank, &config);
  if (status != ncclSuccess && status != ncclInProgress) {
    const std::string text = nccl_text(status, comm_);
    abort_locked("");
    throw CollectiveError(where_ + ": ncclCommInitRankConfig failed: " + text + " (NCCL " + nccl_version() +
                          "; NCCL_DEBUG=WARN prints more)");
  }
  try {
    wait_ready_locked(connect_timeout, "meeting the other ranks (ncclCommInitRankConfig)");
  } catch (...) {
    abandoned_ = true;
    throw;
  }
}

NcclHandle::~NcclHandle() {
  std::unique_lock lock(mutex_);
  if (comm_ == nullptr) return;
  try {
    cuda::DeviceGuard guard(device_);
    if (abandoned_ || !failure_.empty()) {
      abort_locked("the communicator was abandoned");
      return;
    }
    // Finalizing flushes what was issued and waits for the other ranks to do the same: bounded, since a
    // rank that left would keep it waiting.
    const ncclResult_t status = ncclCommFinalize(comm_);
    if (status == ncclSuccess || status == ncclInProgress)
      wait_ready_locked(call_timeout_, "finalizing the communicator");
    else
      abort_locked("ncclCommFinalize failed");
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    comm_ = nullptr;
  } catch (...) {
    // wait_ready_locked aborted the communicator; nothing to report from a destructor.
  }
}

void NcclHandle::wait_ready_locked(std::chrono::milliseconds limit, const std::string& what) {
  const auto start = Clock::now();
  auto nap = std::chrono::microseconds(20);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t status = ncclCommGetAsyncError(comm_, &state);
    if (status != ncclSuccess)
      fail_locked(what + ": ncclCommGetAsyncError failed: " + nccl_text(status, comm_));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) fail_locked(what + ": " + nccl_text(state, comm_));
    if (Clock::now() - start > limit)
      fail_locked(what + " did not finish within " + timeout_text(limit) +
                  (what.find("meeting") != std::string::npos
                       ? ": not every rank joined (a rank that did not start or died, a wrong world size, or "
                         "rank 0's bootstrap address out of reach)"
                       : ": another rank stopped taking part"));
    std::this_thread::sleep_for(nap);
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(2));
  }
}

void NcclHandle::fail_locked(const std::string& reason) {
  const std::string message =
      where_ + ": " + reason + " (NCCL " + nccl_version() + "; NCCL_DEBUG=WARN prints more)";
  abort_locked(message);
  throw CollectiveError(message);
}

void NcclHandle::abort_locked(const std::string& reason) noexcept {
  if (failure_.empty()) failure_ = reason.empty() ? where_ + ": the communicator was aborted" : reason;
  if (comm_ == nullptr) return;
  ncclCommAbort(comm_);  // frees it: never used again
  comm_ = nullptr;
}

void NcclHandle::run(const char* call, const std::string& what,
                     const std::function<ncclResult_t(ncclComm_t)>& issue) {
  std::unique_lock lock(mutex_);
  if (!failure_.empty()) throw CollectiveError(failure_);
  const ncclResult_t status = issue(comm_);
  if (status == ncclSuccess) return;
  if (status != ncclInProgress)
    fail_locked(std::string(call) + " failed in " + what + ": " + nccl_text(status, comm_));
  wait_ready_locked(call_timeout_, std::string(call) + " in " + what);
}

std::string NcclHandle::async_error() {
  std::unique_lock lock(mutex_);
  if (comm_ == nullptr) return "";
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return "ncclCommGetAsyncError failed";
  if (state == ncclSuccess || state == ncclInProgress) return "";
  return nccl_text(state, comm_);
}

void NcclHandle::abort(const std::string& reason) noexcept {
  std::unique_lock lock(mutex_);
  abort_locked(reason);
}

void NcclHandle::abandon() noexcept {
  std::unique_lock lock(mutex_);
  abandoned_ = true;
}

std::string NcclHandle::failure() const {
  std::unique_lock lock(mutex_);
  return failure_;
}

}  // namespace conveyor::train
