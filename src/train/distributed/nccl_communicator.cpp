#include "src/train/distributed/nccl_communicator.h"

#include <cstring>
#include <set>
#include <utility>

#include "conveyor/error.h"
#include "src/device/cuda_handles.h"

namespace conveyor::train {

void throw_nccl_error(ncclResult_t status, const char* call, const std::string& context, ncclComm_t comm,
                      const char* file, int line) {
  std::string text = std::string(call) + " failed in " + context + " (" + file + ":" + std::to_string(line) +
                     "): " + ncclGetErrorString(status);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += std::string(": ") + last;
  text += " (NCCL " + nccl_version() + "; NCCL_DEBUG=WARN prints more)";
  throw DeviceError(text);
}

NcclId make_nccl_id() {
  ncclUniqueId id{};
  CONVEYOR_NCCL(ncclGetUniqueId(&id), "data parallel (making the NCCL id)", nullptr);
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

NcclCommunicator::NcclCommunicator(const NcclId& id, int world_size, int rank, int device)
    : device_(device), rank_(rank), size_(world_size) {
  ncclUniqueId unique{};
  std::memcpy(&unique, id.data(), sizeof unique);
  cuda::DeviceGuard guard(device);
  CONVEYOR_NCCL(ncclCommInitRank(&comm_, world_size, unique, rank),
                "data parallel (rank " + std::to_string(rank) + " of " + std::to_string(world_size) +
                    " joining on GPU " + std::to_string(device) + ")",
                nullptr);
}

std::vector<NcclCommunicator> NcclCommunicator::for_devices(const std::vector<int>& devices) {
  if (devices.empty()) throw InvalidArgument("data parallel: no device given");
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    throw InvalidArgument("data parallel: a device is given twice (NCCL takes one rank per GPU)");
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  CONVEYOR_NCCL(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()),
                "data parallel (one process, " + std::to_string(devices.size()) + " GPUs)", nullptr);
  std::vector<NcclCommunicator> out;
  out.reserve(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i)
    out.push_back(
        NcclCommunicator(comms[i], devices[i], static_cast<int>(i), static_cast<int>(devices.size())));
  return out;
}

NcclCommunicator::~NcclCommunicator() { reset(); }

NcclCommunicator::NcclCommunicator(NcclCommunicator&& other) noexcept
    : comm_(std::exchange(other.comm_, nullptr)),
      device_(other.device_),
      rank_(other.rank_),
      size_(other.size_),
      failed_(other.failed_) {}

NcclCommunicator& NcclCommunicator::operator=(NcclCommunicator&& other) noexcept {
  if (this != &other) {
    reset();
    comm_ = std::exchange(other.comm_, nullptr);
    device_ = other.device_, rank_ = other.rank_, size_ = other.size_, failed_ = other.failed_;
  }
  return *this;
}

void NcclCommunicator::reset() noexcept {
  if (comm_ == nullptr) return;
  // Destroying waits for the other ranks (ncclCommFinalize inside): right after a clean run, a hang after
  // a failure. Abort ends the local side at once.
  if (failed_)
    ncclCommAbort(comm_);
  else
    ncclCommDestroy(comm_);
  comm_ = nullptr;
}

}  // namespace conveyor::train
