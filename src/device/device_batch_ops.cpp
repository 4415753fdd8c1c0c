// What can be done with a DeviceBatch besides reading it: normalize it, export it (DLPack), and, with
// CUDA's types, pick the streams that read it (conveyor/cuda/stream.h).
#include <string>

#include "conveyor/cuda/dlpack.h"
#include "conveyor/cuda/normalize.h"
#include "conveyor/dlpack.h"
#include "conveyor/error.h"
#include "src/device/feeder_backend.h"
#ifdef CONVEYOR_HAVE_CUDA
#include "conveyor/cuda/stream.h"
#include "src/device/cuda_handles.h"
#include "src/device/gpu_feeder.h"
#include "src/device/normalize.h"
#endif

namespace conveyor {
namespace {

const detail::SlotHold& hold_of(const DeviceBatch& batch, const char* what) {
  const detail::SlotHold* hold = detail::DeviceBatchAccess::hold(batch);
  if (hold == nullptr)
    throw InvalidArgument(std::string(what) + ": the DeviceBatch is empty (released or moved from)");
  return *hold;
}

#ifdef CONVEYOR_HAVE_CUDA
detail::GpuFeeder& gpu_backend(detail::FeederBackend& backend, const char* what) {
  auto* gpu = dynamic_cast<detail::GpuFeeder*>(&backend);
  if (gpu == nullptr)
    throw InvalidArgument(std::string(what) + ": the feeder (or batch) is on the CPU, not on a GPU");
  return *gpu;
}
#endif

}  // namespace

void normalize(const DeviceBatch& batch, const ops::NormalizeParams& params, void* out) {
  const detail::SlotHold& hold = hold_of(batch, "normalize");
  if (!batch.on_device()) {
    ops::normalize_batch(batch.pixels().as<const std::uint8_t>(), batch.size(), batch.sample_shape(), params,
                         out);
    return;
  }
#ifdef CONVEYOR_HAVE_CUDA
  detail::GpuFeeder& gpu = gpu_backend(hold.backend(), "normalize");
  cuda::normalize(batch, params, out, gpu.consumer_of(hold.slot()));
#else
  (void)hold;
  throw DeviceError("normalize: a batch on a GPU in a build without CUDA");
#endif
}

DLManagedTensor* to_dlpack_pixels(const DeviceBatch& batch) {
  hold_of(batch, "to_dlpack_pixels");
  return to_dlpack(batch.pixels(), batch.share_hold());
}

DLManagedTensor* to_dlpack_labels(const DeviceBatch& batch) {
  hold_of(batch, "to_dlpack_labels");
  return to_dlpack(batch.labels(), batch.share_hold());
}

DLManagedTensor* to_dlpack_images(const DeviceBatch& batch) {
  hold_of(batch, "to_dlpack_images");
  if (!batch.images())
    throw InvalidArgument(
        "to_dlpack_images: the feeder made no normalized images (set FeederOptions::normalize)");
  return to_dlpack(batch.images(), batch.share_hold());
}

#ifdef CONVEYOR_HAVE_CUDA
namespace cuda {

cudaStream_t consumer_stream(const DeviceFeeder& feeder) {
  return gpu_backend(detail::DeviceBatchAccess::backend(feeder), "consumer_stream").consumer_stream();
}

void set_consumer_stream(DeviceFeeder& feeder, cudaStream_t stream) {
  gpu_backend(detail::DeviceBatchAccess::backend(feeder), "set_consumer_stream").set_consumer_stream(stream);
}

void read_on(const DeviceBatch& batch, cudaStream_t stream) {
  const detail::SlotHold& hold = hold_of(batch, "read_on");
  gpu_backend(hold.backend(), "read_on").read_on(hold.slot(), stream);
}

void normalize(const DeviceBatch& batch, const ops::NormalizeParams& params, void* out, cudaStream_t stream) {
  const detail::SlotHold& hold = hold_of(batch, "normalize");
  detail::GpuFeeder& gpu = gpu_backend(hold.backend(), "normalize");
  DeviceGuard guard(gpu.device());
  gpu.read_on(hold.slot(), stream);
  ops::normalize_batch_cuda(batch.pixels().as<const std::uint8_t>(), batch.size(), batch.sample_shape(),
                            params, out, stream);
}

}  // namespace cuda
#endif

}  // namespace conveyor
