#include "conveyor/batch.h"

namespace conveyor {

std::size_t Batch::deferred_count() const noexcept {
  std::size_t count = 0;
  for (const SampleInfo& sample : samples()) count += sample.deferred ? 1 : 0;
  return count;
}

std::span<const std::uint8_t> Batch::deferred_bytes(std::size_t i) const noexcept {
  if (!buffer_ || !buffer_->deferred || !buffer_->samples || i >= size_ || !buffer_->samples[i].deferred)
    return {};
  return buffer_->deferred[i].encoded;
}

std::span<const std::byte> Batch::deferred_descriptor(std::size_t i) const noexcept {
  if (!buffer_ || !buffer_->deferred || !buffer_->samples || i >= size_ || !buffer_->samples[i].deferred)
    return {};
  const detail::DeferredSlot& slot = buffer_->deferred[i];
  return {slot.descriptor.data(), slot.descriptor_size};
}

}  // namespace conveyor
