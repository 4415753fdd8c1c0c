#include "src/device/augment/gpu_augmenter.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/error.h"
#include "src/device/cuda_check.h"
#include "src/device/device_bound_memory.h"

namespace conveyor::cuda {
namespace {

constexpr const char* kAugmenterContext = "GPU augmentation";

void check_options(const GpuAugmentOptions& options) {
  if (options.depth < 1) throw InvalidArgument("GpuAugmenter: depth must be at least 1");
  // Bad draw options are refused now rather than at the first batch.
  const std::uint64_t seed = 0;
  SampleAugment probe;
  draw_augment_params({&seed, 1}, 3, options.draws, {&probe, 1});
  for (int c = 0; c < 3; ++c)
    if (!(options.normalize.std[c] != 0.f) || !std::isfinite(options.normalize.std[c]))
      throw InvalidArgument("GpuAugmenter: std of channel " + std::to_string(c) +
                            " must be finite and non-zero");
}

}  // namespace

GpuAugmenter::GpuAugmenter(int device, DeviceMemoryPool& pool, GpuAugmentOptions options)
    : device_(device), pool_(&pool), pinned_(with_device(pinned_host_memory(), device)), options_(options) {
  check_options(options_);
  if (pool.device() != device)
    throw InvalidArgument("GpuAugmenter on gpu:" + std::to_string(device) +
                          " was given the memory pool of gpu:" + std::to_string(pool.device()));
  DeviceGuard guard(device_);
  own_.emplace();
  slots_.reserve(static_cast<std::size_t>(options_.depth));
  for (int i = 0; i < options_.depth; ++i) slots_.emplace_back();
}

GpuAugmenter::~GpuAugmenter() {
  try {
    DeviceGuard guard(device_);
    // The buffers are freed on own_, not behind the callers' kernels: wait for those kernels first.
    for (Slot& slot : slots_)
      if (slot.used) slot.done.synchronize();
  } catch (const Error&) {
    // A destructor cannot report; the context is broken if this failed.
  }
}

void GpuAugmenter::ensure_capacity(Slot& slot, std::size_t count) {
  if (slot.capacity >= count) return;
  slot.params.reset();
  slot.sums.reset();
  slot.pinned = detail::HostAllocation(count * sizeof(SampleAugment), pinned_);
  std::uninitialized_default_construct_n(reinterpret_cast<SampleAugment*>(slot.pinned.data()), count);
  slot.params = pool_->allocate(count * sizeof(SampleAugment), own_->get(), "GPU augmentation parameters");
  slot.sums =
      pool_->allocate(count * 3 * sizeof(std::uint64_t), own_->get(), "GPU augmentation channel sums");
  // Stream-ordered allocations are usable on other streams once their own stream has passed them. This
  // happens when a batch is larger than any before, not per batch.
  own_->synchronize();
  slot.capacity = count;
}

void GpuAugmenter::run(const DeviceImages& in, std::span<const std::uint64_t> seeds, void* out,
                       cudaStream_t stream) {
  if (seeds.size() != in.count)
    throw InvalidArgument("GpuAugmenter: " + std::to_string(seeds.size()) + " seeds for " +
                          std::to_string(in.count) + " images");
  if (in.count == 0) return;
  DeviceGuard guard(device_);
  Slot& slot = slots_[static_cast<std::size_t>(next_++ % static_cast<std::uint64_t>(slots_.size()))];
  if (slot.used) slot.done.synchronize();  // the kernels of `depth` batches ago have finished reading it
  ensure_capacity(slot, in.count);
  auto* host = reinterpret_cast<SampleAugment*>(slot.pinned.data());
  const std::span<SampleAugment> params(host, in.count);
  draw_augment_params(seeds, in.shape.channels, options_.draws, params);
  const bool any_contrast =
      std::any_of(params.begin(), params.end(), [](const SampleAugment& p) { return p.color.has_contrast; });
  CONVEYOR_CUDA(
      cudaMemcpyAsync(slot.params.data(), host, params.size_bytes(), cudaMemcpyHostToDevice, stream),
      kAugmenterContext);
  try {
    fused_augment(in, slot.params.as<SampleAugment>(), any_contrast, slot.sums.as<std::uint64_t>(),
                  options_.normalize, out, stream, options_.blocks_per_image);
  } catch (...) {
    slot.done.record(stream);  // the copy above may still read the pinned buffer
    slot.used = true;
    throw;
  }
  slot.done.record(stream);
  slot.used = true;
}

}  // namespace conveyor::cuda
