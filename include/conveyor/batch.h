// A batch of fixed-size samples: NHWC uint8 pixels and int64 labels in one buffer from a bounded pool
// (page-locked when a GPU is present). The buffer goes back to its pool when the last Batch handle dies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "conveyor/image.h"
#include "conveyor/tensor.h"

namespace conveyor {

// Who one sample of a batch is: where it stands in the epoch's order and the seed of its randomness, so
// that work done after batching (GPU-side augmentation, logs, resume) can tell samples apart exactly.
struct SampleInfo {
  std::uint64_t index = 0;  // position in the epoch's global order (after shuffle, before shard)
  std::uint64_t epoch = 0;
  std::uint64_t seed = 0;  // sample_seed(pipeline seed, epoch, index)
  bool padding = false;    // a repeated element that only fills a batch (not new data)
};

namespace detail {
// The memory behind a batch. Owned by a BatchPool; a Batch holds it through a shared_ptr whose
// deleter hands it back to the pool.
struct BatchBuffer {
  std::uint8_t* pixels = nullptr;  // capacity * shape.bytes()
  std::int64_t* labels = nullptr;  // capacity
  SampleInfo* samples = nullptr;   // capacity
  std::size_t capacity = 0;
  ImageShape shape;
  bool pinned = false;  // page-locked: eligible for asynchronous copies to a GPU
};
}  // namespace detail

class Batch {
 public:
  Batch() = default;
  Batch(std::shared_ptr<detail::BatchBuffer> buffer, std::size_t size, std::uint64_t sequence,
        std::uint64_t epoch) noexcept
      : buffer_(std::move(buffer)), size_(size), sequence_(sequence), epoch_(epoch) {}

  Batch(Batch&&) noexcept = default;
  Batch& operator=(Batch&&) noexcept = default;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  explicit operator bool() const noexcept { return buffer_ != nullptr; }
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return buffer_ ? buffer_->capacity : 0; }
  ImageShape sample_shape() const noexcept { return buffer_ ? buffer_->shape : ImageShape{}; }
  bool pinned() const noexcept { return buffer_ && buffer_->pinned; }
  // 0, 1, 2, ... in delivery order; epoch of the batch's first sample.
  std::uint64_t sequence() const noexcept { return sequence_; }
  std::uint64_t epoch() const noexcept { return epoch_; }

  // size() samples, contiguous NHWC.
  std::span<const std::uint8_t> pixels() const noexcept {
    return buffer_ ? std::span<const std::uint8_t>(buffer_->pixels, size_ * buffer_->shape.bytes())
                   : std::span<const std::uint8_t>();
  }
  std::span<const std::int64_t> labels() const noexcept {
    return buffer_ ? std::span<const std::int64_t>(buffer_->labels, size_) : std::span<const std::int64_t>();
  }
  // Who each of the size() samples is.
  std::span<const SampleInfo> samples() const noexcept {
    return buffer_ ? std::span<const SampleInfo>(buffer_->samples, size_) : std::span<const SampleInfo>();
  }
  ConstImageView image(std::size_t i) const noexcept {
    return ConstImageView(buffer_->pixels + i * buffer_->shape.bytes(), buffer_->shape);
  }

  // The same as tensors: pixels (N, H, W, C) uint8 and labels (N) int64, in host memory.
  TensorView pixel_tensor() const noexcept;
  TensorView label_tensor() const noexcept;
  // Keeps the batch's memory from going back to its pool while the returned reference lives (for views
  // handed to other libraries, e.g. conveyor/dlpack.h). The pool's bound counts such buffers as held.
  std::shared_ptr<const void> share_memory() const noexcept { return buffer_; }

  // Gives the buffer back to its pool now (also done by the destructor).
  void release() noexcept {
    buffer_.reset();
    size_ = 0;
  }

 private:
  std::shared_ptr<detail::BatchBuffer> buffer_;
  std::size_t size_ = 0;
  std::uint64_t sequence_ = 0;
  std::uint64_t epoch_ = 0;
};

// Ordinary (pageable) host memory for one batch, for code that fills batches itself, as the naive
// feed-per-step loop does. batch() makes a Batch handle on it; the memory lives while either exists.
class PageableBatchBuffer {
 public:
  PageableBatchBuffer(std::size_t capacity, ImageShape shape);

  std::size_t capacity() const noexcept;
  ImageShape shape() const noexcept;
  // Where sample i's pixels go, and the labels.
  ImageView slot(std::size_t i) const noexcept;
  std::span<std::int64_t> labels() const noexcept;
  // Who each sample is (index, epoch, seed), for work after batching that draws per-sample randomness.
  std::span<SampleInfo> samples() const noexcept;
  // A Batch of the first `size` samples.
  Batch batch(std::size_t size, std::uint64_t sequence = 0, std::uint64_t epoch = 0) const;

 private:
  struct Storage;
  std::shared_ptr<Storage> storage_;
};

}  // namespace conveyor
