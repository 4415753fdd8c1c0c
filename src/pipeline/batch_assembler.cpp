#include "src/pipeline/batch_assembler.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "conveyor/error.h"
#include "src/memory/field_columns.h"

namespace conveyor::detail {

BatchAssembler::BatchAssembler(std::size_t batch_size, ImageShape shape, bool drop_remainder,
                               std::size_t max_open, std::size_t state_words, std::uint64_t first_sequence,
                               bool fill_holes, const std::vector<std::shared_ptr<const Field>>& fields)
    : batch_size_(batch_size),
      shape_(shape),
      sample_bytes_(shape.bytes()),
      drop_remainder_(drop_remainder),
      fill_holes_(fill_holes),
      state_words_(state_words),
      sequence_(first_sequence) {
  if (fill_holes_) {
    fallback_pixels_.assign(sample_bytes_, 0);
    for (const std::shared_ptr<const Field>& field : fields) {
      fallback_fields_.push_back(field->clone());
      fallback_fields_.back()->clear();
    }
  }
  states_.reserve(max_open);
  free_.reserve(max_open);
  for (std::size_t i = 0; i < max_open; ++i) {
    auto state = std::make_unique<BufferState>();
    state->kept.assign(batch_size, 0);
    state->states.assign(batch_size * state_words, 0);
    free_.push_back(state.get());
    states_.push_back(std::move(state));
  }
}

BufferState* BatchAssembler::open(std::shared_ptr<BatchBuffer> buffer) {
  BufferState* state;
  {
    std::lock_guard lock(free_mutex_);
    // There are as many states as pool buffers and each open state holds a buffer.
    if (free_.empty()) throw Error("BatchAssembler: more buffers open than the pool holds");
    state = free_.back();
    free_.pop_back();
  }
  state->buffer = std::move(buffer);
  state->arrived = 0;
  return state;
}

ImageView BatchAssembler::slot(const BufferState& state, std::size_t position) const noexcept {
  return ImageView(state.buffer->pixels + position * sample_bytes_, shape_);
}

void BatchAssembler::arrive(BufferState& state, std::size_t position, bool kept, std::int64_t label,
                            const SampleInfo& info, std::span<const std::uint64_t> order_state,
                            const Sink& sink) {
  state.kept[position] = kept;
  if (kept) {
    state.buffer->labels[position] = label;
    state.buffer->samples[position] = info;
  }
  // With fill_holes a hole stays in its slot (as padding), so the batch may end on one: its state counts.
  if (kept || fill_holes_)
    std::copy(order_state.begin(), order_state.end(), state.states.begin() + position * state_words_);
  if (++state.arrived == batch_size_) complete(state, batch_size_, sink);
}

void BatchAssembler::finish(BufferState* last, std::size_t used, const Sink& sink) {
  if (last != nullptr && used > 0 && used < batch_size_) complete(*last, used, sink);
  if (partial_ != nullptr) {
    BufferState& partial = *std::exchange(partial_, nullptr);
    if (drop_remainder_) {
      close(partial);
    } else {
      emit(partial, partial_size_, sink);
    }
  }
}

void BatchAssembler::discard() noexcept {
  partial_ = nullptr;
  std::lock_guard lock(free_mutex_);
  free_.clear();
  for (auto& state : states_) {
    state->buffer.reset();
    free_.push_back(state.get());
  }
}

void BatchAssembler::complete(BufferState& state, std::size_t used, const Sink& sink) {
  if (fill_holes_) {
    if (used < batch_size_ && drop_remainder_) {
      close(state);
      return;
    }
    fill_holes(state, used);
    emit(state, used, sink);
    return;
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < used; ++i) {
    if (!state.kept[i]) continue;
    if (i != kept) move_slot(state, i, state, kept);
    ++kept;
  }
  if (partial_ == nullptr) {
    if (kept == batch_size_) {
      emit(state, kept, sink);  // the common case: no hole, no copy
    } else if (kept == 0) {
      close(state);
    } else {
      partial_ = &state;
      partial_size_ = kept;
    }
    return;
  }
  // Top up the partial batch with this buffer's first elements; what is left becomes the new partial.
  BufferState& partial = *partial_;
  const std::size_t moved = std::min(batch_size_ - partial_size_, kept);
  for (std::size_t i = 0; i < moved; ++i) move_slot(state, i, partial, partial_size_ + i);
  partial_size_ += moved;
  if (partial_size_ < batch_size_) {
    close(state);
    return;
  }
  partial_ = nullptr;
  emit(partial, batch_size_, sink);
  const std::size_t rest = kept - moved;
  for (std::size_t i = 0; i < rest; ++i) move_slot(state, moved + i, state, i);
  if (rest == 0) {
    close(state);
  } else {
    partial_ = &state;
    partial_size_ = rest;
  }
}

void BatchAssembler::fill_holes(BufferState& state, std::size_t used) {
  BatchBuffer& buffer = *state.buffer;
  std::size_t first_kept = used;
  for (std::size_t i = 0; i < used && first_kept == used; ++i)
    if (state.kept[i]) first_kept = i;
  if (first_kept < used) {
    // Refreshed from every buffer, so that one in which everything failed can still be padded.
    std::memcpy(fallback_pixels_.data(), buffer.pixels + first_kept * sample_bytes_, sample_bytes_);
    fallback_label_ = buffer.labels[first_kept];
    fallback_info_ = buffer.samples[first_kept];
    if (buffer.fields)
      for (std::size_t k = 0; k < buffer.fields->size(); ++k)
        (*buffer.fields)[k].copy_out(first_kept, *fallback_fields_[k]);
    fallback_kept_ = true;
  }
  SampleInfo hole = fallback_info_;  // zeros before any sample was kept
  hole.padding = true;
  for (std::size_t i = 0; i < used; ++i) {
    if (state.kept[i]) continue;
    std::memcpy(buffer.pixels + i * sample_bytes_, fallback_pixels_.data(), sample_bytes_);
    buffer.labels[i] = fallback_label_;
    buffer.samples[i] = hole;
    // Before any sample was kept: empty fields (a zero mask, no boxes, no tags).
    if (buffer.fields)
      for (std::size_t k = 0; k < buffer.fields->size(); ++k)
        (*buffer.fields)[k].copy_in(fallback_kept_ ? fallback_fields_[k].get() : nullptr, i);
  }
}

void BatchAssembler::move_slot(BufferState& from, std::size_t i, BufferState& to, std::size_t j) noexcept {
  const SampleInfo& info = from.buffer->samples[i];
  if (info.deferred) {
    // No pixels to move, only what the op left: swapping the byte buffers keeps both capacities in use.
    DeferredSlot& source = from.buffer->deferred[i];
    DeferredSlot& target = to.buffer->deferred[j];
    std::swap(source.encoded, target.encoded);
    target.descriptor = source.descriptor;
    target.descriptor_size = source.descriptor_size;
  } else {
    std::memcpy(to.buffer->pixels + j * sample_bytes_, from.buffer->pixels + i * sample_bytes_,
                sample_bytes_);
  }
  to.buffer->labels[j] = from.buffer->labels[i];
  to.buffer->samples[j] = info;
  if (from.buffer->fields) from.buffer->fields->move_to(i, *to.buffer->fields, j);
  std::copy_n(from.states.begin() + i * state_words_, state_words_, to.states.begin() + j * state_words_);
}

void BatchAssembler::emit(BufferState& state, std::size_t size, const Sink& sink) {
  BatchBuffer& buffer = *state.buffer;
  buffer.field_tensors.clear();
  if (buffer.fields) buffer.fields->finish(size, buffer.field_tensors);
  const std::uint64_t epoch = state.buffer->samples[0].epoch;
  Batch batch(std::move(state.buffer), size, sequence_++, epoch);
  // In order, the batch's last sample is the last element it covers: the state after it is the batch's.
  // The span stays valid while the sink runs: the state goes back to the free list only afterwards.
  const std::span<const std::uint64_t> order_state(state.states.data() + (size - 1) * state_words_,
                                                   state_words_);
  sink(std::move(batch), order_state);
  close(state);
}

void BatchAssembler::close(BufferState& state) noexcept {
  state.buffer.reset();
  std::lock_guard lock(free_mutex_);
  free_.push_back(&state);
}

}  // namespace conveyor::detail
