#include "src/device/gpu_stager.h"

#ifdef CONVEYOR_HAVE_CUDA

#include <string>

#include "conveyor/error.h"
#include "src/device/cuda_check.h"

namespace conveyor::detail {
namespace {

constexpr const char* kContext = "DeviceFeeder";
constexpr std::size_t kAlignment = 256;  // labels start on their own cache- and DMA-friendly boundary

std::size_t round_up(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// Page-locked memory is what the copy engine can read directly; ask CUDA rather than trust a flag.
bool is_page_locked(const void* host) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, host);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace

GpuStager::GpuStager(int device, int depth, cuda::DeviceMemoryPool* shared_pool)
    : device_(device), depth_(depth), pool_(shared_pool) {
  cuda::DeviceGuard guard(device_);
  if (pool_ == nullptr) {
    own_pool_ = std::make_unique<cuda::DeviceMemoryPool>(device_);
    pool_ = own_pool_.get();
  } else if (pool_->device() != device_) {
    throw InvalidArgument("DeviceFeeder on gpu:" + std::to_string(device_) +
                          " was given the memory pool of gpu:" + std::to_string(pool_->device()));
  }
  copy_.emplace();
  slots_.reserve(static_cast<std::size_t>(depth_));
  for (int i = 0; i < depth_; ++i) slots_.emplace_back();
  returner_ = std::thread([this] {
    // Without this, the thread's first CUDA call would bind (and create, on a multi-GPU machine, a
    // stray context on) device 0. A failure here shows up as a failed event wait below.
    cudaSetDevice(device_);
    return_batches();
  });
}

GpuStager::~GpuStager() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  returner_.join();  // it drains the queue first: every copy has finished and every batch is back
  try {
    cuda::DeviceGuard guard(device_);
    // The step may still read a slot: free each buffer in stream order after its `consumed` event.
    for (Slot& slot : slots_) {
      cudaStreamWaitEvent(copy_->get(), slot.consumed.get(), 0);
      slot.buffer.reset();
    }
    cudaStreamSynchronize(copy_->get());
  } catch (const Error&) {
    // A destructor cannot report; the CUDA context is broken if the guard failed.
  }
}

void GpuStager::rethrow_failure_locked() const {
  if (failure_) std::rethrow_exception(failure_);
}

void GpuStager::ensure_capacity(Slot& slot, std::size_t index, const Batch& batch) {
  const ImageShape shape = batch.sample_shape();
  const std::size_t capacity = std::max(batch.capacity(), batch.size());
  const std::size_t pixel_bytes = capacity * shape.bytes();
  const std::size_t label_bytes = capacity * sizeof(std::int64_t);
  if (slot.buffer && slot.pixel_capacity >= pixel_bytes &&
      slot.buffer.bytes() - slot.label_offset >= label_bytes)
    return;
  // The copy stream already waits for `consumed`, so freeing here (stream-ordered) cannot pull the
  // memory from under a step that still reads it.
  slot.buffer.reset();
  slot.pixel_capacity = 0;
  const std::string what = "DeviceFeeder ring slot " + std::to_string(index) + " (" +
                           std::to_string(capacity) + " x " + std::to_string(shape.height) + "x" +
                           std::to_string(shape.width) + "x" + std::to_string(shape.channels) +
                           " uint8 pixels + " + std::to_string(capacity) + " int64 labels)";
  slot.label_offset = round_up(pixel_bytes);
  slot.buffer = pool_->allocate(slot.label_offset + label_bytes, copy_->get(), what);
  slot.pixel_capacity = pixel_bytes;
  std::lock_guard lock(mutex_);
  ++stats_.allocations;
}

StagedBatch GpuStager::stage(Batch batch) {
  cuda::DeviceGuard guard(device_);
  const std::size_t index = static_cast<std::size_t>(next_ % static_cast<std::uint64_t>(depth_));
  Slot& slot = slots_[index];
  {
    // The previous copy into this slot was issued `depth` calls ago and has almost always finished; if not,
    // the copy engine is the bottleneck and waiting here is the right back-pressure.
    std::unique_lock lock(mutex_);
    rethrow_failure_locked();
    if (slot.in_flight) {
      ++stats_.host_waits;
      changed_.wait(lock, [&] { return !slot.in_flight || failure_; });
      rethrow_failure_locked();
    }
  }
  cudaStream_t stream = copy_->get();
  CONVEYOR_CUDA(cudaStreamWaitEvent(stream, slot.consumed.get(), 0), kContext);
  ensure_capacity(slot, index, batch);

  const std::span<const std::uint8_t> pixels = batch.pixels();
  const std::span<const std::int64_t> labels = batch.labels();
  auto* device_pixels = slot.buffer.as<std::uint8_t>();
  auto* device_labels = reinterpret_cast<std::int64_t*>(device_pixels + slot.label_offset);
  const bool pageable = !is_page_locked(pixels.data());
  try {
    slot.start.record(stream);
    CONVEYOR_CUDA(
        cudaMemcpyAsync(device_pixels, pixels.data(), pixels.size_bytes(), cudaMemcpyHostToDevice, stream),
        kContext);
    CONVEYOR_CUDA(
        cudaMemcpyAsync(device_labels, labels.data(), labels.size_bytes(), cudaMemcpyHostToDevice, stream),
        kContext);
    slot.ready.record(stream);
  } catch (...) {
    // Part of the batch may still be on its way: do not let its memory go back to the pool before that.
    cudaStreamSynchronize(stream);
    throw;
  }

  StagedBatch staged;
  staged.pixels = device_pixels;
  staged.labels = device_labels;
  staged.size = batch.size();
  staged.shape = batch.sample_shape();
  staged.on_device = true;
  staged.device = device_;
  staged.ready = slot.ready.get();
  staged.consumed = slot.consumed.get();
  {
    std::lock_guard lock(mutex_);
    slot.in_flight = true;
    ++stats_.batches;
    if (pageable) ++stats_.pageable;
    queue_.push_back({index, std::move(batch), pixels.size_bytes() + labels.size_bytes()});
  }
  changed_.notify_all();
  ++next_;
  return staged;
}

void GpuStager::return_batches() {
  for (;;) {
    InFlight item;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    Slot& slot = slots_[item.slot];
    float milliseconds = 0;
    std::exception_ptr failure;
    try {
      slot.ready.synchronize();
      milliseconds = cuda::Event::elapsed_ms(slot.start, slot.ready);
    } catch (...) {
      failure = std::current_exception();
    }
    // The copy is over (or the context is lost and nothing reads the memory any more): the pinned buffer
    // goes back to its pool now, on this thread, outside the lock.
    item.batch.release();
    {
      std::lock_guard lock(mutex_);
      slot.in_flight = false;
      if (failure) {
        if (!failure_) failure_ = failure;
      } else {
        ++stats_.copies;
        stats_.bytes += item.bytes;
        stats_.copy_seconds += milliseconds / 1000.0;
      }
    }
    changed_.notify_all();
  }
}

void GpuStager::synchronize() {
  cuda::DeviceGuard guard(device_);
  copy_->synchronize();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    if (failure_) return true;
    for (const Slot& slot : slots_)
      if (slot.in_flight) return false;
    return true;
  });
  rethrow_failure_locked();
}

FeederStats GpuStager::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace conveyor::detail

#endif  // CONVEYOR_HAVE_CUDA
