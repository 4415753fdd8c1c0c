// Turns elements into full batches. The source stage opens a buffer and reserves one slot per element
// (the maps write straight into it); the collect stage reports each element as kept or not. A buffer
// whose elements have all arrived is complete: if every element was kept it becomes a Batch as it is
// (no copy). Elements that were skipped or filtered leave holes; the buffer is then compacted (kept
// elements move forward, in order) and merged into the pending partial batch, so that every batch but
// the last is full and every kept element is delivered once, in order when completions come in order.
//
// When the data set is split evenly across two or more ranks (fill_holes), the count of batches must not
// depend on what failed or was filtered, or one rank would run out of batches before the others: a buffer is
// then delivered as soon as it completes, at its full size, and each hole becomes a padding sample (a copy of
// the first kept sample of the same buffer, or else of the last kept sample of an earlier one; zeros with
// label 0 before any sample was kept), flagged SampleInfo::padding.
//
// The samples' other fields (conveyor/fields.h) move with their pixels through the buffer's field columns
// (src/memory/field_columns.h: each kind copies or swaps its own); when a batch is complete each kind lays
// out its tensors (BatchBuffer::field_tensors: boxes padded to the batch's most, ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/fields/field.h"
#include "conveyor/image.h"

namespace conveyor::detail {

struct BufferState {
  std::shared_ptr<BatchBuffer> buffer;
  std::size_t arrived = 0;
  std::vector<std::uint8_t> kept;     // per slot, set on arrival
  std::vector<std::uint64_t> states;  // per slot, the element order's state after that element
};

class BatchAssembler {
 public:
  // A complete batch and the element order's state after its last sample (what IteratorState saves).
  using Sink = std::function<void(Batch, std::span<const std::uint64_t> state)>;

  // max_open: the most buffers open at once (the pool's size). state_words: the size of an element's order
  // state. first_sequence: the Batch::sequence of the first batch (a resumed iterator goes on counting).
  // fill_holes: a failed or filtered element's slot is kept as padding instead of closing the gap.
  // fields: the pool layout's field kinds (their prototypes), in the order of each buffer's columns.
  BatchAssembler(std::size_t batch_size, ImageShape shape, bool drop_remainder, std::size_t max_open,
                 std::size_t state_words, std::uint64_t first_sequence, bool fill_holes = false,
                 const std::vector<std::shared_ptr<const Field>>& fields = {});

  std::size_t batch_size() const noexcept { return batch_size_; }
  ImageShape shape() const noexcept { return shape_; }

  // Source stage: a state for a fresh buffer, and the view of one of its slots.
  BufferState* open(std::shared_ptr<BatchBuffer> buffer);
  ImageView slot(const BufferState& state, std::size_t position) const noexcept;

  // Collect stage (one thread at a time): element `position` of `state` arrived. Complete batches go
  // to `sink`.
  void arrive(BufferState& state, std::size_t position, bool kept, std::int64_t label, const SampleInfo& info,
              std::span<const std::uint64_t> order_state, const Sink& sink);

  // After the pipeline ran to its end: completes `last` (which had `used` slots reserved; nothing to do
  // when it is full or null) and hands over the final partial batch unless drop_remainder.
  void finish(BufferState* last, std::size_t used, const Sink& sink);
  // Gives every buffer still held back to its pool (after a failure or a cancel).
  void discard() noexcept;

 private:
  void complete(BufferState& state, std::size_t used, const Sink& sink);
  void fill_holes(BufferState& state, std::size_t used);
  void move_slot(BufferState& from, std::size_t i, BufferState& to, std::size_t j) noexcept;
  void emit(BufferState& state, std::size_t size, const Sink& sink);
  void close(BufferState& state) noexcept;

  const std::size_t batch_size_;
  const ImageShape shape_;
  const std::size_t sample_bytes_;
  const bool drop_remainder_;
  const bool fill_holes_;
  const std::size_t state_words_;
  std::uint64_t sequence_;

  // fill_holes: the last kept sample delivered, for a buffer in which nothing was kept (collect stage only).
  std::vector<std::uint8_t> fallback_pixels_;
  std::int64_t fallback_label_ = 0;
  SampleInfo fallback_info_;
  std::vector<std::unique_ptr<Field>> fallback_fields_;  // one per field column, empty ones before any kept
  bool fallback_kept_ = false;

  // The partial batch waiting for more kept elements (collect stage only).
  BufferState* partial_ = nullptr;
  std::size_t partial_size_ = 0;

  std::vector<std::unique_ptr<BufferState>> states_;
  std::mutex free_mutex_;  // the source stage takes states, the collect stage gives them back
  std::vector<BufferState*> free_;
};

}  // namespace conveyor::detail
