// A batch of fixed-size samples: NHWC uint8 pixels and int64 labels in one buffer from a bounded pool
// (page-locked when a GPU is present). The buffer goes back to its pool when the last Batch handle dies.
// When the samples have other fields (conveyor/fields.h) the batch holds them too, in the pool's memory, as
// named tensors (fields()): each field type says how it stacks or pads (masks (N, H, W), boxes padded to
// (N, M, 4) with classes, crowd flags and counts, multi-hot labels (N, K), ...). The accessors named after
// issue 35's fields (mask_tensor(), box_tensor(), ...) find those tensors by name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "conveyor/boxes.h"
#include "conveyor/defer.h"
#include "conveyor/image.h"
#include "conveyor/mask.h"
#include "conveyor/tensor.h"

namespace conveyor {

// How Dataset::batch lays out a batch besides its size.
struct BatchOptions {
  // The samples' image shape; nullopt: the shape of the first element that makes it through the maps (which
  // runs once more for that).
  std::optional<ImageShape> sample_shape = std::nullopt;
  // Leave out the last batch when it is smaller.
  bool drop_remainder = false;
  // Masks (when the source gives them): stacked (N, H, W) at the image's height and width. Their type is the
  // first element's; with a given sample_shape, this one. An element whose mask differs fails in the
  // "batch" stage.
  MaskType mask_type = MaskType::uint8;
  // Boxes (when the source gives them): padded to (N, M, 4). 0: M is each batch's most boxes in one sample
  // (so M changes from batch to batch); M > 0: fixed, and an element with more boxes fails in the "batch"
  // stage.
  std::size_t max_boxes = 0;
  // Multi-label tags as multi-hot rows (N, num_classes) uint8; 0: no multi-hot field (an element with
  // tags then fails in the "batch" stage, and so does a tag outside 0..num_classes-1).
  std::size_t num_classes = 0;
};

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

// How a field's tensor is padded to one shape for the whole batch: along dimension `dim`, a sample's entries
// past its own count hold `value`; the counts are the (N) int64 tensor of the batch named `counts`.
struct TensorPadding {
  int dim = -1;  // -1: not padded (every sample has the same shape)
  double value = 0;
  std::string_view counts = {};
};

// One tensor of a batch's fields, with what a consumer (a DLPack user, a codec that sends batches over a
// network) needs to use it without knowing the field: e.g. the boxes field gives "boxes" (N, M, 4) float32
// padded along dimension 1 with 0, its counts in "box_counts".
struct BatchTensor {
  std::string_view field;  // the field kind it belongs to ("mask", "boxes", ...)
  std::string_view name;   // unique in its batch ("masks", "boxes", "box_classes", ...)
  TensorView view;
  TensorPadding padding = {};
  // Moves with the image (masks, boxes): a geometric op after batching would have to move it too.
  bool follows_geometry = false;
};

namespace detail {
// What the op that deferred the sample of one slot left: its encoded bytes (swapped in from the sample, so
// nothing is copied and the capacity is reused) and its descriptor.
struct DeferredSlot {
  std::vector<std::uint8_t> encoded;
  std::array<std::byte, kMaxDeferredDescriptor> descriptor{};
  std::size_t descriptor_size = 0;
};

class FieldColumns;  // the pipeline's storage of a buffer's fields (src/memory/field_columns.h)

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

  // ---- other fields (conveyor/fields.h) ----
  // Where the pipeline keeps each slot's fields until the batch is complete (null: no fields), and the
  // complete batch's field tensors, set when it is delivered (their capacity kept from batch to batch).
  FieldColumns* fields = nullptr;
  std::vector<BatchTensor> field_tensors;
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

  // ---- other fields (conveyor/fields.h) ----
  // Every tensor of the batch's fields, in host memory, each with its field, name, shape and padding: what a
  // consumer iterates to send or hand on a batch without naming a field. Empty for a batch without fields.
  std::span<const BatchTensor> fields() const noexcept {
    return buffer_ ? std::span<const BatchTensor>(buffer_->field_tensors) : std::span<const BatchTensor>();
  }
  // The field tensor named `name`, or null.
  const BatchTensor* field(std::string_view name) const noexcept;
  // Its view; an empty one when the batch has no such tensor.
  TensorView field_tensor(std::string_view name) const noexcept {
    const BatchTensor* tensor = field(name);
    return tensor ? tensor->view : TensorView{};
  }

  // Issue 35's accessors, over the tensors above ("masks", "boxes", ...): empty views when the batch has
  // none.
  bool has_masks() const noexcept { return field("masks") != nullptr; }
  MaskShape mask_shape() const noexcept;
  ConstMaskView mask(std::size_t i) const noexcept;
  // (N, H, W) uint8 or uint16 class ids.
  TensorView mask_tensor() const noexcept { return field_tensor("masks"); }
  bool has_boxes() const noexcept { return field("boxes") != nullptr; }
  // M: boxes per sample in the padded tensors.
  std::size_t max_boxes() const noexcept;
  // Sample i's boxes (its count of them), classes and crowd flags.
  std::span<const Box> boxes(std::size_t i) const noexcept;
  std::span<const std::int64_t> box_classes(std::size_t i) const noexcept;
  // (N, M, 4) float32 x0, y0, x1, y1 in the batch's pixels; (N, M) int64 classes (-1 padding); (N, M) uint8
  // crowd flags; (N) int64 counts.
  TensorView box_tensor() const noexcept { return field_tensor("boxes"); }
  TensorView box_class_tensor() const noexcept { return field_tensor("box_classes"); }
  TensorView box_crowd_tensor() const noexcept { return field_tensor("box_crowd"); }
  TensorView box_count_tensor() const noexcept { return field_tensor("box_counts"); }
  bool has_multi_hot() const noexcept { return field("multi_hot") != nullptr; }
  // (N, K) uint8: 1 where the sample has the tag (BatchOptions::num_classes = K).
  TensorView multi_hot_tensor() const noexcept { return field_tensor("multi_hot"); }
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
