#include "src/device/sm_partition.h"

#include <cuda_runtime.h>

#include <string>

#include "conveyor/error.h"

namespace conveyor::cuda {
namespace {

// One of the driver's entry points, by name and the CUDA version that introduced its signature.
template <class Function>
Function driver_function(const char* name, unsigned version) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t status = cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault, &found);
  if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || function == nullptr)
    throw DeviceError(std::string("SM partition: the CUDA driver has no ") + name +
                      " (green contexts need a driver of CUDA 12.4 or later)");
  return reinterpret_cast<Function>(function);
}

void check(CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  const char* name = "unknown error";
  try {
    const auto error_name = driver_function<PFN_cuGetErrorName_v6000>("cuGetErrorName", 6000);
    error_name(status, &name);
  } catch (const DeviceError&) {
    // keep "unknown error"
  }
  throw DeviceError(std::string("SM partition: ") + call + " failed: " + name + " (" + std::to_string(status) + ")");
}

}  // namespace

SmPartition::SmPartition(int device, int sms) {
  if (sms < 1) throw InvalidArgument("SM partition: at least 1 SM, not " + std::to_string(sms));
  const auto device_get = driver_function<PFN_cuDeviceGet_v2000>("cuDeviceGet", 2000);
  const auto get_resource = driver_function<PFN_cuDeviceGetDevResource_v12040>("cuDeviceGetDevResource", 12040);
  const auto split = driver_function<PFN_cuDevSmResourceSplitByCount_v12040>("cuDevSmResourceSplitByCount", 12040);
  const auto describe = driver_function<PFN_cuDevResourceGenerateDesc_v12040>("cuDevResourceGenerateDesc", 12040);
  const auto create = driver_function<PFN_cuGreenCtxCreate_v12040>("cuGreenCtxCreate", 12040);
  const auto as_context = driver_function<PFN_cuCtxFromGreenCtx_v12040>("cuCtxFromGreenCtx", 12040);
  push_ = driver_function<PFN_cuCtxPushCurrent_v4000>("cuCtxPushCurrent", 4000);
  pop_ = driver_function<PFN_cuCtxPopCurrent_v4000>("cuCtxPopCurrent", 4000);
  destroy_ = driver_function<PFN_cuGreenCtxDestroy_v12040>("cuGreenCtxDestroy", 12040);
  CUdevice handle = 0;
  check(device_get(&handle, device), "cuDeviceGet");
  CUdevResource all{};
  check(get_resource(handle, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
  device_sms_ = static_cast<int>(all.sm.smCount);
  if (sms >= device_sms_)
    throw InvalidArgument("SM partition: " + std::to_string(sms) + " SMs of gpu:" + std::to_string(device) +
                          "'s " + std::to_string(device_sms_) + " leave none to the rest");
  CUdevResource part{}, rest{};
  unsigned groups = 1;
  check(split(&part, &groups, &all, &rest, 0, static_cast<unsigned>(sms)), "cuDevSmResourceSplitByCount");
  if (groups != 1) throw DeviceError("SM partition: the driver made no group of " + std::to_string(sms) + " SMs");
  sms_ = static_cast<int>(part.sm.smCount);
  CUdevResourceDesc description = nullptr;
  check(describe(&description, &part, 1), "cuDevResourceGenerateDesc");
  check(create(&green_, description, handle, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
  try {
    check(as_context(&context_, green_), "cuCtxFromGreenCtx");
  } catch (...) {
    destroy_(green_);
    throw;
  }
}

SmPartition::~SmPartition() { destroy_(green_); }

std::string SmPartition::description() const {
  return std::to_string(sms_) + " of " + std::to_string(device_sms_) + " SMs (a green context)";
}

PartitionGuard::PartitionGuard(const SmPartition* partition) : partition_(partition) {
  if (partition_ != nullptr) check(partition_->push_(partition_->context_), "cuCtxPushCurrent");
}

PartitionGuard::~PartitionGuard() {
  CUcontext popped = nullptr;
  if (partition_ != nullptr) partition_->pop_(&popped);
}

}  // namespace conveyor::cuda
