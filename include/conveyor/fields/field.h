// A field of a sample, as a type (torchvision v2's tv_tensors): a mask, boxes, tags, keypoints, or a kind of
// your own. Each type says, in its own files, everything the library does with it:
//   - how a geometric change (a crop window, a mirror, a resize, padding) moves it: move();
//   - how it is checked when read (check_read) and opened with the image by the decoding ops;
//   - how it is batched: a FieldBatch per batch buffer that stacks or pads it into named tensors, which
//     Python sees through DLPack by those names.
// The pipeline, the batch assembler, the pools, the device feeder and the Python module iterate over a
// sample's fields (conveyor/fields/field_list.h) and a batch's field tensors (Batch::fields()) and never
// name one. A geometric op draws its change once and hands it to ops::apply_geometry, which moves the image
// and every field; a colour op touches the image only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/fields/geometry_change.h"
#include "conveyor/host_memory.h"

namespace conveyor {

struct FieldOptions;  // conveyor/fields.h
class FieldBatch;

// What Field::move gets besides the change.
struct FieldMove {
  const FieldOptions& options;  // the pipeline's rules: what a mask's made-up pixels hold, which boxes drop
  // Per instance (Field::instances), in the order the fields hold them: a field that decides an instance is
  // gone (boxes that left the picture) sets its entry to 1 (growing the vector as needed); after every field
  // moved, ops::apply_geometry drops those instances from every field that has instances, so that the
  // boxes, their classes and their keypoints stay aligned.
  std::vector<std::uint8_t>& dropped;
};

// What a field kind's batch storage is made for: one pool buffer.
struct FieldBatchLayout {
  std::size_t capacity = 0;  // samples per buffer
  ImageShape image;          // the batch's sample shape
  BatchOptions options;      // the dataset's batch() options (mask type, max boxes, classes, ...)
  // Where storage that grows lives (boxes padded to a batch's most): the pool's memory, page-locked when it
  // is.
  std::shared_ptr<HostMemoryResource> memory;
};

class Field {
 public:
  virtual ~Field() = default;

  // The kind's name: "mask", "boxes", "tags", ...; what FieldSet, errors and Python call it. A string with
  // static storage (batches keep views of it).
  virtual std::string_view name() const noexcept = 0;
  // Nothing to move, batch or show.
  virtual bool empty() const noexcept = 0;
  // Forgets the content and keeps every allocation: the pipeline recycles a sample for the next element.
  virtual void clear() noexcept = 0;
  virtual std::unique_ptr<Field> clone() const = 0;

  // ---- read ----
  // Checks what the source put in (finite coordinates, visibility flags, ...) right after the read stage;
  // throws InvalidArgument saying what is wrong. Nothing by default.
  virtual void check_read() const {}

  // ---- geometry ----
  // Whether a geometric change moves it (masks, boxes) or not (tags).
  virtual bool follows_geometry() const noexcept { return true; }
  // For the decoding ops, before they decode the image as stored (height x width): a field kept encoded (a
  // mask's PNG) reads its header here, checks it against the image, and returns the bytes decoding it will
  // allocate (reserved with the image's, in one reservation); the next move() decodes the part it needs.
  // Others return 0.
  virtual std::size_t open_with_image(int height, int width, std::size_t max_pixels) {
    (void)height, (void)width, (void)max_pixels;
    return 0;
  }
  // Follows `change` (ops::apply_geometry calls it for every field that is not empty and follows geometry).
  // The identity (GeometryChange::identity(): the whole image as it is) moves nothing; a field opened by
  // open_with_image decodes itself then.
  virtual void move(const ops::GeometryChange& change, FieldMove& context) = 0;
  // Fields of per-instance entries (boxes, keypoints): how many, and dropping those with keep[i] == 0 (i
  // past keep.size() stay).
  virtual std::size_t instances() const noexcept { return 0; }
  virtual void keep_instances(std::span<const std::uint8_t> keep) { (void)keep; }

  // ---- batches ----
  // Whether the batch options alone call for this kind in every batch (tags: num_classes > 0 gives every
  // batch a multi-hot field, also for samples without tags). A kind is batched when the source declares it,
  // when the first sample has it, or when this says so.
  virtual bool wanted_by(const BatchOptions& options) const noexcept {
    (void)options;
    return false;
  }
  // Bytes per buffer this kind keeps in the buffer's own block (beside the pixels: page-locked with them),
  // and the storage of one buffer over them (`fixed` has batch_bytes(layout) bytes, 64-byte aligned).
  virtual std::size_t batch_bytes(const FieldBatchLayout& layout) const {
    (void)layout;
    return 0;
  }
  virtual std::unique_ptr<FieldBatch> make_batch(const FieldBatchLayout& layout,
                                                 std::span<std::byte> fixed) const = 0;

  // ---- inspection ----
  // The content as tensors (views into the field, unpadded): what Python's Sample.fields shows.
  virtual void tensors(std::vector<BatchTensor>& out) const = 0;
};

// One field kind's part of one batch buffer: the masks of a batch, its boxes, ... Made by Field::make_batch
// for each pool buffer and owned by the pool; the pipeline's batch stage and its assembler call it, naming no
// kind. Slots are the buffer's sample positions.
class FieldBatch {
 public:
  virtual ~FieldBatch() = default;

  virtual std::string_view name() const noexcept = 0;  // the kind's name (Field::name)
  // Before the ops run: lets the sample's field of this kind write straight into slot `slot` (a mask's
  // slot, as pixels have theirs). Nothing by default.
  virtual void bind(Field& field, std::size_t slot) noexcept { (void)field, (void)slot; }
  // The batch stage: the sample's field (null when the sample has none of this kind) into slot `slot`. It
  // may swap storage with the field (the sample recycles what it gets back). Throws InvalidArgument or
  // ShapeMismatch saying why the field does not fit (another mask size, more boxes than a fixed number...).
  virtual void take(Field* field, std::size_t slot) = 0;
  // Compaction: slot `from` of this buffer into slot `to` of `target`, a batch of the same kind.
  virtual void move_to(std::size_t from, FieldBatch& target, std::size_t to) noexcept = 0;
  // Padding (an even split fills a batch's holes): slot `slot` copied out into `field`, a field of this kind,
  // and a copy of `field` into slot `slot` (null: an empty one: zeros, no boxes, no tags).
  virtual void copy_out(std::size_t slot, Field& field) const = 0;
  virtual void copy_in(const Field* field, std::size_t slot) = 0;
  // The batch is complete with `size` samples: pads what varies from sample to sample to the batch's most
  // (or a fixed number) and appends its tensors, in host memory, to `out`.
  virtual void finish(std::size_t size, std::vector<BatchTensor>& out) = 0;
};

}  // namespace conveyor
