// One element on its way through the pipeline: who it is (index, epoch, seed, label, path), its encoded
// bytes, and its pixels, which the last op writes straight into the sample's slot of a batch buffer; and,
// when its source gives them, its other fields as typed fields (conveyor/fields/field.h): a mask (encoded,
// then class ids that go to a mask slot the same way), boxes with classes, multi-label tags, keypoints, or
// kinds of your own. fields() lists them all; the old names encoded_mask, boxes and tags refer to the first
// three.
#pragma once

#include <any>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/boxes.h"
#include "conveyor/defer.h"
#include "conveyor/fields.h"
#include "conveyor/fields/field_list.h"
#include "conveyor/fields/ping_pong_buffer.h"
#include "conveyor/image.h"
#include "conveyor/mask.h"
#include "conveyor/memory_budget.h"
#include "conveyor/random.h"

namespace conveyor {

namespace detail {
// Everything a Sample holds but the references to its inline fields: copied and moved as a whole, so that a
// copy's references are its own.
class SampleState {
 public:
  // ---- identity, set by the pipeline before any op runs ----
  std::uint64_t index = 0;  // position in the epoch's global order (after shuffle, before shard)
  std::uint64_t epoch = 0;
  std::uint64_t seed = 0;  // sample_seed(dataset seed, epoch, index): the only randomness ops may use
  std::int64_t label = -1;
  std::string path;                   // file path, or "<memory:N>" for in-memory sources
  std::vector<std::uint8_t> encoded;  // the bytes as read (reused from sample to sample)
  // Position of the op now running among the chain's maps and filters (0, 1, ...), set by the pipeline
  // before each one: random ops draw from rng(), so two ops of one kind in one chain draw independently.
  std::uint32_t op_position = 0;
  // A repeat that evens out the ranks' shares of an epoch (ShardRemainder::pad): the same element (index,
  // seed, pixels) as its original, to be left out of the loss.
  bool padding = false;

 protected:
  FieldList fields_;
  PingPongBuffer<Image, ImageView, ConstImageView, ImageShape> pixels_;
  MemoryBudget* decode_budget_ = nullptr;
  const FieldOptions* field_options_ = nullptr;
  DeferPolicy* defer_policy_ = nullptr;
  std::array<std::byte, kMaxDeferredDescriptor> descriptor_{};
  std::size_t descriptor_size_ = 0;
  bool deferred_ = false;
};
}  // namespace detail

class Sample : public detail::SampleState {
 public:
  Sample() = default;
  // Copies and moves carry every field; the references below stay this sample's own.
  Sample(const Sample& other) : SampleState(other) {}
  Sample(Sample&& other) noexcept : SampleState(std::move(other)) {}
  Sample& operator=(const Sample& other) {
    SampleState::operator=(other);
    return *this;
  }
  Sample& operator=(Sample&& other) noexcept {
    SampleState::operator=(std::move(other));
    return *this;
  }
  ~Sample() = default;

  // ---- the other fields: empty when the source gives none (conveyor/fields.h) ----
  // Every field of the sample, typed (conveyor/fields/field_list.h); field<T>() is the one of type T, added
  // empty on first use: sample.field<KeypointsField>().
  FieldList& fields() noexcept { return fields_; }
  const FieldList& fields() const noexcept { return fields_; }
  template <class T>
  T& field() {
    return fields_.get<T>();
  }
  template <class T>
  const T* find_field() const noexcept {
    return fields_.find<T>();
  }
  // Issue 35's names for the first three (the same objects as fields().mask().encoded, ...):
  std::vector<std::uint8_t>& encoded_mask = fields_.mask().encoded;  // the mask's PNG as read; empty: none
  // In the pixels of the current image (before the first op: of the image as stored). Geometric ops move
  // them with the image.
  BoxList& boxes = fields_.boxes().list;
  std::vector<std::int64_t>& tags =
      fields_.tags().tags;  // class ids of a multi-label sample (multi-hot rows)

  // The generator of the op now running, of kind `kind` (its stream constant):
  // Rng(seed, op_stream(kind, op_position)). The only randomness an op may use.
  Rng rng(std::uint64_t kind) const noexcept { return Rng(seed, op_stream(kind, op_position)); }

  // The current pixels; empty before the first op that produces an image.
  ConstImageView image() const noexcept;
  // The current pixels for ops that work in place (flip, distort).
  ImageView mutable_image() noexcept;

  // Where an op that produces an image of `shape` must write it. This is the batch slot reserved for
  // this sample when `shape` is the batch's sample shape and the current image does not already live
  // there; otherwise the scratch image that does not hold the current pixels. Call publish() once the
  // pixels are written.
  ImageView output(ImageShape shape);
  // Makes the image last handed out by output() the current image.
  void publish();

  // True when the current pixels are in the batch slot, so the batch stage has nothing to copy.
  bool in_slot() const noexcept { return pixels_.in_slot(); }

  // The decoded mask (fields().mask()), as image() / output() / publish() for pixels: empty until an op
  // decodes encoded_mask; mask_output(shape) is the batch's mask slot when `shape` is the batch's mask shape.
  ConstMaskView mask() const noexcept { return fields_.mask().mask(); }
  MaskView mutable_mask() noexcept { return fields_.mask().mutable_mask(); }
  MaskView mask_output(MaskShape shape) { return fields_.mask().output(shape); }
  void publish_mask() { fields_.mask().publish(); }
  bool mask_in_slot() const noexcept { return fields_.mask().in_slot(); }
  // The rules geometric ops follow for masks and boxes: PipelineOptions::fields inside a pipeline, the
  // defaults outside.
  const FieldOptions& field_options() const noexcept;

  // A decode that is about to allocate `bytes` (estimated from its header) takes them from the pipeline's
  // decode-memory budget first (PipelineOptions::decode_memory_budget): this may wait for other decodes to
  // finish. Keep the reservation until the decode's big buffers are freed. Outside a pipeline: no budget.
  MemoryBudget::Reservation reserve_decode_memory(std::size_t bytes) const {
    return decode_budget_ ? decode_budget_->reserve(bytes) : MemoryBudget::Reservation();
  }

  // ---- deferring the pixels to a stage after batching (conveyor/defer.h) ----
  // The policy to ask, when the op running now may defer this sample; null otherwise.
  DeferPolicy* defer_policy() const noexcept { return defer_policy_; }
  // Leaves this sample's pixels to the stage after batching: the pipeline keeps `encoded` and
  // `descriptor` with the batch and writes no pixels into the slot. Only while defer_policy() is set;
  // throws InvalidArgument otherwise or when the descriptor is longer than kMaxDeferredDescriptor.
  void defer(std::span<const std::byte> descriptor);
  bool deferred() const noexcept { return deferred_; }
  std::span<const std::byte> deferred_descriptor() const noexcept {
    return {descriptor_.data(), descriptor_size_};
  }

  // ---- used by the pipeline ----
  // Reserves `slot` (a view into a batch buffer) for this sample's final pixels; an empty view unbinds.
  void bind_slot(ImageView slot) noexcept { pixels_.bind_slot(slot); }
  ImageView slot() const noexcept { return pixels_.slot(); }
  // The same for the sample's mask slot (batches whose samples have masks; the batch binds every field's).
  void bind_mask_slot(MaskView slot) noexcept { fields_.mask().bind_slot(slot); }
  MaskView mask_slot() const noexcept { return fields_.mask().slot(); }
  // The rules field_options() returns (null: the defaults); they must outlive the sample's processing.
  void set_field_options(const FieldOptions* options) noexcept { field_options_ = options; }
  // The budget reserve_decode_memory() draws from (null: none); it must outlive the sample's processing.
  void set_decode_budget(MemoryBudget* budget) noexcept { decode_budget_ = budget; }
  // Offers deferral to the op about to run (null: none).
  void offer_defer(DeferPolicy* policy) noexcept { defer_policy_ = policy; }
  // Forgets the pixels and the slot but keeps every allocation for the next sample.
  void recycle() noexcept;
};

}  // namespace conveyor

#include <functional>

namespace conveyor {

// A named step that transforms one sample in place (decode, crop, flip, ...). The name appears in
// errors ("stage 'decode_random_resized_crop' failed on 'a.jpg': ...") and in the pipeline's stats.
struct SampleOp {
  std::string name;
  std::function<void(Sample&)> apply;
  // The op's parameters, for code that runs the same op elsewhere (its GPU twin); empty for most ops.
  std::any spec = {};
  // The name of its GPU twin (conveyor/cuda/gpu_twins.h), which place_pixel_ops looks up in the feeder's
  // registry to run the op on the GPU instead ("flip_horizontal", "distort", a user's); empty: none.
  std::string gpu_twin = {};
};

}  // namespace conveyor
