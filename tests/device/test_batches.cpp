#include "test_batches.h"

#include <algorithm>
#include <stdexcept>

#include "conveyor/random.h"

#ifdef CONVEYOR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace conveyor::testing {

// Owns the memory of one batch: page-locked through cudaHostAlloc when asked (and a GPU exists), plain
// heap memory otherwise.
struct RecordingBatchPool::Block {
  detail::BatchBuffer buffer;
  std::vector<std::uint8_t> pageable;
  std::vector<SampleInfo> samples;
  void* pinned = nullptr;

  Block(ImageShape shape, std::size_t capacity, HostMemory memory) {
    const std::size_t pixel_bytes = capacity * shape.bytes();
    const std::size_t bytes = pixel_bytes + capacity * sizeof(std::int64_t) + alignof(std::int64_t);
    std::uint8_t* base = nullptr;
#ifdef CONVEYOR_HAVE_CUDA
    if (memory == HostMemory::pinned) {
      if (cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault) != cudaSuccess)
        throw std::runtime_error("cudaHostAlloc failed in the test pool");
      base = static_cast<std::uint8_t*>(pinned);
    }
#else
    if (memory == HostMemory::pinned) throw std::runtime_error("pinned memory needs a CUDA build");
#endif
    if (base == nullptr) {
      pageable.resize(bytes);
      base = pageable.data();
    }
    const std::size_t label_offset =
        (pixel_bytes + alignof(std::int64_t) - 1) / alignof(std::int64_t) * alignof(std::int64_t);
    buffer.pixels = base;
    buffer.labels = reinterpret_cast<std::int64_t*>(base + label_offset);
    buffer.capacity = capacity;
    buffer.shape = shape;
    buffer.pinned = pinned != nullptr;
    samples.resize(capacity);
    buffer.samples = samples.data();
  }
  ~Block() {
#ifdef CONVEYOR_HAVE_CUDA
    if (pinned) cudaFreeHost(pinned);
#endif
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
};

RecordingBatchPool::RecordingBatchPool(ImageShape shape, std::size_t capacity, HostMemory memory)
    : shape_(shape), capacity_(capacity), memory_(memory) {}

RecordingBatchPool::~RecordingBatchPool() = default;

std::vector<std::uint8_t> RecordingBatchPool::expected_pixels(int id, std::size_t size, ImageShape shape) {
  std::vector<std::uint8_t> pixels(size * shape.bytes());
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<std::uint8_t>((i * 131 + static_cast<std::size_t>(id) * 71 + (i >> 8)) & 0xFF);
  return pixels;
}

std::vector<std::int64_t> RecordingBatchPool::expected_labels(int id, std::size_t size) {
  std::vector<std::int64_t> labels(size);
  for (std::size_t i = 0; i < size; ++i)
    labels[i] = static_cast<std::int64_t>(id) * 1000 + static_cast<std::int64_t>(i);
  return labels;
}

Batch RecordingBatchPool::make(int id, std::size_t size) {
  if (size > capacity_) throw std::invalid_argument("batch larger than the test pool's capacity");
  blocks_.push_back(std::make_unique<Block>(shape_, capacity_, memory_));
  detail::BatchBuffer* buffer = &blocks_.back()->buffer;
  const auto pixels = expected_pixels(id, size, shape_);
  const auto labels = expected_labels(id, size);
  std::copy(pixels.begin(), pixels.end(), buffer->pixels);
  std::copy(labels.begin(), labels.end(), buffer->labels);
  for (std::size_t i = 0; i < size; ++i)
    buffer->samples[i] = {.index = i, .epoch = 0, .seed = sample_seed(static_cast<std::uint64_t>(id), 0, i)};
  // The deleter stands where a real pool would take the buffer back; the memory itself stays in blocks_.
  std::shared_ptr<detail::BatchBuffer> handle(buffer, [this, id](detail::BatchBuffer*) {
    {
      std::lock_guard lock(mutex_);
      returned_.push_back(id);
    }
    changed_.notify_all();
  });
  return Batch(std::move(handle), size, static_cast<std::uint64_t>(id), 0);
}

bool RecordingBatchPool::returned(int id) const {
  std::lock_guard lock(mutex_);
  return std::find(returned_.begin(), returned_.end(), id) != returned_.end();
}

std::vector<int> RecordingBatchPool::returned_ids() const {
  std::lock_guard lock(mutex_);
  return returned_;
}

bool RecordingBatchPool::wait_returned(int id, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(
      lock, limit, [&] { return std::find(returned_.begin(), returned_.end(), id) != returned_.end(); });
}

}  // namespace conveyor::testing
