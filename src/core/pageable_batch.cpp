#include <vector>

#include "conveyor/batch.h"
#include "conveyor/error.h"

namespace conveyor {

struct PageableBatchBuffer::Storage {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int64_t> labels;
  std::vector<SampleInfo> samples;
  detail::BatchBuffer buffer;
};

PageableBatchBuffer::PageableBatchBuffer(std::size_t capacity, ImageShape shape)
    : storage_(std::make_shared<Storage>()) {
  if (capacity == 0 || shape.empty()) throw InvalidArgument("PageableBatchBuffer: empty batch or shape");
  storage_->pixels.resize(capacity * shape.bytes());
  storage_->labels.resize(capacity, -1);
  storage_->samples.resize(capacity);
  detail::BatchBuffer& buffer = storage_->buffer;
  buffer.pixels = storage_->pixels.data();
  buffer.labels = storage_->labels.data();
  buffer.samples = storage_->samples.data();
  buffer.capacity = capacity;
  buffer.shape = shape;
}

std::size_t PageableBatchBuffer::capacity() const noexcept { return storage_->buffer.capacity; }
ImageShape PageableBatchBuffer::shape() const noexcept { return storage_->buffer.shape; }

ImageView PageableBatchBuffer::slot(std::size_t i) const noexcept {
  return ImageView(storage_->pixels.data() + i * shape().bytes(), shape());
}

std::span<std::int64_t> PageableBatchBuffer::labels() const noexcept { return storage_->labels; }

std::span<SampleInfo> PageableBatchBuffer::samples() const noexcept { return storage_->samples; }

Batch PageableBatchBuffer::batch(std::size_t size, std::uint64_t sequence, std::uint64_t epoch) const {
  if (size > capacity()) throw InvalidArgument("PageableBatchBuffer::batch: size over capacity");
  // Aliasing constructor: the Batch keeps the whole Storage alive through its BatchBuffer pointer.
  return Batch(std::shared_ptr<detail::BatchBuffer>(storage_, &storage_->buffer), size, sequence, epoch);
}

}  // namespace conveyor
