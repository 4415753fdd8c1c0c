// A batch of fixed-size samples: NHWC uint8 pixels and int64 labels in one buffer from a bounded pool
// (page-locked when a GPU is present). The buffer goes back to its pool when the last Batch handle dies.
// When the samples have other fields (conveyor/fields.h) the batch holds them too, in the same memory:
// masks stacked (N, H, W), boxes padded to (N, M, 4) with classes (N, M), crowd flags (N, M) and counts
// (N), multi-hot labels (N, K).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "conveyor/boxes.h"
#include "conveyor/defer.h"
#include "conveyor/image.h"
#include "conveyor/mask.h"
#include "conveyor/tensor.h"

namespace conveyor {

// Who one sample of a batch is: where it stands in the epoch's order and the seed of its randomness, so
// that work done after batching (GPU-side augmentation, logs, resume) can tell samples apart exactly.
struct SampleInfo {
  std::uint64_t index = 0;  // position in the epoch's global order (after shuffle, before shard)
  std::uint64_t epoch = 0;
  std::uint64_t seed = 0;  // sample_seed(pipeline seed, epoch, index)
  bool padding = false;    // a repeated element that only fills a batch (not new data)
  // Its op deferred it (conveyor/defer.h): the slot holds no pixels yet; a stage after batching makes them
  // from Batch::deferred_bytes and deferred_descriptor (DeviceFeeder does it before handing the batch on).
  bool deferred = false;
};

namespace detail {
// What the op that deferred the sample of one slot left: its encoded bytes (swapped in from the sample, so
// nothing is copied and the capacity is reused) and its descriptor.
struct DeferredSlot {
  std::vector<std::uint8_t> encoded;
  std::array<std::byte, kMaxDeferredDescriptor> descriptor{};
  std::size_t descriptor_size = 0;
};

// A complete batch's boxes, padded to max_boxes per sample (the batch's most, or BatchOptions::max_boxes).
struct PackedBoxes {
  Box* boxes = nullptr;  // [N, max_boxes] boxes (as floats [N, max_boxes, 4]), zeros past a sample's count
  std::int64_t* classes = nullptr;  // [N, max_boxes], -1 past a sample's count
  std::uint8_t* crowd = nullptr;    // [N, max_boxes]
  std::int64_t* counts = nullptr;   // [N]
  std::size_t max_boxes = 0;
};

// Room for packed boxes, owned by the buffer's pool (page-locked like the rest when the pool is): it grows
// when a batch has more boxes per sample than the buffer had room for, and is kept for later batches.
class BoxStorage {
 public:
  virtual ~BoxStorage() = default;
  // Pointers for `samples` samples of up to max_boxes boxes each (never null, also for 0 boxes).
  virtual PackedBoxes reserve(std::size_t samples, std::size_t max_boxes) = 0;
};

// The memory behind a batch. Owned by a BatchPool; a Batch holds it through a shared_ptr whose
// deleter hands it back to the pool.
struct BatchBuffer {
  std::uint8_t* pixels = nullptr;  // capacity * shape.bytes()
  std::int64_t* labels = nullptr;  // capacity
  SampleInfo* samples = nullptr;   // capacity
  std::size_t capacity = 0;
  ImageShape shape;
  bool pinned = false;               // page-locked: eligible for asynchronous copies to a GPU
  DeferredSlot* deferred = nullptr;  // capacity entries, or null where nothing may be deferred

  // ---- other fields (conveyor/fields.h); null when the batch has none ----
  std::uint8_t* masks = nullptr;  // capacity * mask_shape.bytes()
  MaskShape mask_shape;
  std::uint8_t* multi_hot = nullptr;  // capacity * num_classes
  std::size_t num_classes = 0;
  BoxList* boxes = nullptr;         // capacity entries: each slot's boxes until the batch is complete
  std::size_t fixed_max_boxes = 0;  // 0: each batch pads to its own most
  BoxStorage* box_storage = nullptr;
  PackedBoxes packed;  // the delivered batch's boxes (set when it is complete)
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
    return buffer_ && buffer_->samples ? std::span<const SampleInfo>(buffer_->samples, size_)
                                       : std::span<const SampleInfo>();
  }
  // Samples whose op deferred them (samples()[i].deferred): how many, and what the op left for sample i
  // (empty spans for a sample that is not deferred).
  std::size_t deferred_count() const noexcept;
  std::span<const std::uint8_t> deferred_bytes(std::size_t i) const noexcept;
  std::span<const std::byte> deferred_descriptor(std::size_t i) const noexcept;
  ConstImageView image(std::size_t i) const noexcept {
    return ConstImageView(buffer_->pixels + i * buffer_->shape.bytes(), buffer_->shape);
  }

  // The same as tensors: pixels (N, H, W, C) uint8 and labels (N) int64, in host memory.
  TensorView pixel_tensor() const noexcept;
  TensorView label_tensor() const noexcept;

  // ---- other fields (conveyor/fields.h): empty views when the batch has none ----
  bool has_masks() const noexcept { return buffer_ && buffer_->masks; }
  MaskShape mask_shape() const noexcept { return has_masks() ? buffer_->mask_shape : MaskShape{}; }
  ConstMaskView mask(std::size_t i) const noexcept {
    return ConstMaskView(buffer_->masks + i * buffer_->mask_shape.bytes(), buffer_->mask_shape);
  }
  // (N, H, W) uint8 or uint16 class ids.
  TensorView mask_tensor() const noexcept;
  bool has_boxes() const noexcept { return buffer_ && buffer_->boxes; }
  // M: boxes per sample in the padded tensors.
  std::size_t max_boxes() const noexcept { return has_boxes() ? buffer_->packed.max_boxes : 0; }
  // Sample i's boxes (its count of them), classes and crowd flags.
  std::span<const Box> boxes(std::size_t i) const noexcept;
  std::span<const std::int64_t> box_classes(std::size_t i) const noexcept;
  // (N, M, 4) float32 x0, y0, x1, y1 in the batch's pixels; (N, M) int64 classes (-1 padding); (N, M) uint8
  // crowd flags; (N) int64 counts.
  TensorView box_tensor() const noexcept;
  TensorView box_class_tensor() const noexcept;
  TensorView box_crowd_tensor() const noexcept;
  TensorView box_count_tensor() const noexcept;
  bool has_multi_hot() const noexcept { return buffer_ && buffer_->multi_hot; }
  // (N, K) uint8: 1 where the sample has the tag (BatchOptions::num_classes = K).
  TensorView multi_hot_tensor() const noexcept;
  // Keeps the batch's memory from going back to its pool while the returned reference lives (for views
  // handed to other libraries, e.g. conveyor/dlpack.h). The pool's bound counts such buffers as held.
  std::shared_ptr<const void> share_memory() const noexcept { return buffer_; }

  // The same batch numbered `sequence`, for code that merges batches from several makers (a data service's
  // client: its workers' and its own cores') and numbers them in the order it hands them out.
  Batch renumbered(std::uint64_t sequence) && noexcept {
    const std::size_t size = size_;
    size_ = 0;
    return Batch(std::move(buffer_), size, sequence, epoch_);
  }

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
