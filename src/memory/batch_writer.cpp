// BatchWriter and BatchBuffers (conveyor/batch_source.h): a pool buffer as a BatchSource fills it. The field
// tensors are the layout's, whatever their kinds: each gets memory of its own beside the buffer, grown to the
// largest batch seen and kept from batch to batch; a delivered Batch holds its buffer's field memory too.
#include <map>
#include <mutex>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/batch_source.h"
#include "conveyor/error.h"
#include "src/core/host_allocation.h"
#include "src/memory/batch_pool.h"

namespace conveyor {

// One buffer's field tensors: their layout (whose strings the batch's BatchTensors view), memory, and what
// the current batch wrote.
class BatchWriter::FieldMemory {
 public:
  FieldMemory(std::vector<FieldTensorLayout> layout, std::shared_ptr<HostMemoryResource> resource)
      : layout_(std::move(layout)), resource_(std::move(resource)), memory_(layout_.size()),
        written_(layout_.size()) {}

  const std::vector<FieldTensorLayout>& layout() const noexcept { return layout_; }
  void start() {
    for (std::optional<TensorView>& view : written_) view.reset();
  }

  TensorView tensor(std::size_t i, std::span<const std::int64_t> dims, std::size_t capacity, bool pinned) {
    if (i >= layout_.size())
      throw InvalidArgument("BatchWriter: field tensor " + std::to_string(i) + " of a layout of " +
                            std::to_string(layout_.size()));
    const FieldTensorLayout& want = layout_[i];
    if (dims.size() != want.shape.size() || dims.size() + 1 > TensorView::kMaxDims)
      throw InvalidArgument("BatchWriter: field tensor " + want.name + " of " + std::to_string(dims.size() + 1) +
                            " dimensions, the layout's has " + std::to_string(want.shape.size() + 1));
    std::size_t bytes = capacity * dtype_size(want.dtype);
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] < 0 || (want.shape[d] >= 0 && dims[d] != want.shape[d]))
        throw InvalidArgument("BatchWriter: field tensor " + want.name + ": dimension " +
                              std::to_string(d + 1) + " is " + std::to_string(dims[d]) + ", the layout's " +
                              std::to_string(want.shape[d]));
      bytes *= static_cast<std::size_t>(dims[d]);
    }
    if (memory_[i].size() < bytes || memory_[i].data() == nullptr) {
      memory_[i] = detail::HostAllocation();  // the old block back first: a warm buffer holds one block per tensor
      // Never empty: a tensor with no entries (no boxes in the batch) still has an address, as the pipeline's.
      memory_[i] = detail::HostAllocation(std::max(bytes, detail::HostAllocation::kAlignment), resource_);
    }
    TensorView view;
    view.data = memory_[i].data();
    view.dtype = want.dtype;
    view.ndim = static_cast<int>(dims.size()) + 1;
    view.shape[0] = static_cast<std::int64_t>(capacity);
    std::copy(dims.begin(), dims.end(), view.shape.begin() + 1);
    std::int64_t stride = 1;
    for (int d = view.ndim - 1; d >= 0; --d) {
      view.strides[static_cast<std::size_t>(d)] = stride;
      stride *= view.shape[static_cast<std::size_t>(d)];
    }
    view.pinned = pinned;
    written_[i] = view;
    return view;
  }

  // The batch's tensors of `size` samples, each as the layout describes it.
  void finish(std::size_t size, std::vector<BatchTensor>& out) const {
    out.clear();
    for (std::size_t i = 0; i < layout_.size(); ++i) {
      const FieldTensorLayout& l = layout_[i];
      if (!written_[i]) throw InvalidArgument("BatchWriter::finish: field tensor " + l.name + " not written");
      TensorView view = *written_[i];
      view.shape[0] = static_cast<std::int64_t>(size);
      out.push_back({.field = l.field,
                     .name = l.name,
                     .view = view,
                     .padding = {.dim = l.padding_dim, .value = l.padding_value, .counts = l.counts},
                     .follows_geometry = l.follows_geometry});
    }
    for (const BatchTensor& tensor : out) check_counts(tensor, out, size);
  }

 private:
  // A counts tensor's entries must lie within what the padded tensor holds: Batch::boxes(i) and the like read
  // that many.
  static void check_counts(const BatchTensor& padded, std::span<const BatchTensor> all, std::size_t size) {
    if (padded.padding.dim < 1 || padded.padding.counts.empty()) return;
    const auto counts = std::find_if(all.begin(), all.end(),
                                     [&](const BatchTensor& t) { return t.name == padded.padding.counts; });
    if (counts == all.end() || counts->view.dtype != DType::int64 || counts->view.ndim != 1)
      throw InvalidArgument("BatchWriter::finish: " + std::string(padded.name) + " counts its entries in '" +
                            std::string(padded.padding.counts) + "', not an (N) int64 tensor of the batch");
    const std::int64_t most = padded.view.shape[static_cast<std::size_t>(padded.padding.dim)];
    const auto* values = static_cast<const std::int64_t*>(counts->view.data);
    for (std::size_t i = 0; i < size; ++i)
      if (values[i] < 0 || values[i] > most)
        throw InvalidArgument("BatchWriter::finish: sample " + std::to_string(i) + " counts " +
                              std::to_string(values[i]) + " entries of " + std::string(padded.name) +
                              ", which holds " + std::to_string(most));
  }

  const std::vector<FieldTensorLayout> layout_;
  const std::shared_ptr<HostMemoryResource> resource_;
  std::vector<detail::HostAllocation> memory_;
  std::vector<std::optional<TensorView>> written_;
};

std::size_t BatchWriter::capacity() const noexcept { return buffer_->capacity; }
bool BatchWriter::page_locked() const noexcept { return buffer_->pinned; }

TensorView BatchWriter::pixel_tensor() const noexcept {
  const ImageShape s = buffer_->shape;
  return TensorView::contiguous(buffer_->pixels, DType::uint8,
                                {static_cast<std::int64_t>(buffer_->capacity), s.height, s.width, s.channels},
                                -1, buffer_->pinned);
}

TensorView BatchWriter::label_tensor() const noexcept {
  return TensorView::contiguous(buffer_->labels, DType::int64, {static_cast<std::int64_t>(buffer_->capacity)},
                                -1, buffer_->pinned);
}

std::span<SampleInfo> BatchWriter::samples() const noexcept { return {buffer_->samples, buffer_->capacity}; }

TensorView BatchWriter::field_tensor(std::size_t i, std::span<const std::int64_t> dims) {
  if (!fields_)
    throw InvalidArgument("BatchWriter: field tensor " + std::to_string(i) + " of a layout without fields");
  return fields_->tensor(i, dims, buffer_->capacity, buffer_->pinned);
}

Batch BatchWriter::finish(std::size_t size, std::uint64_t sequence, std::uint64_t epoch) && {
  if (size > buffer_->capacity)
    throw InvalidArgument("BatchWriter::finish: " + std::to_string(size) + " samples in a buffer of " +
                          std::to_string(buffer_->capacity));
  // Nothing of a batch made elsewhere waits for a stage after batching.
  for (std::size_t i = 0; i < size; ++i) buffer_->samples[i].deferred = false;
  if (!fields_) return Batch(std::move(buffer_), size, sequence, epoch);
  fields_->finish(size, buffer_->field_tensors);
  // The Batch's handle on the buffer keeps the field memory alive with it (the tensors' views and names).
  struct Both {
    std::shared_ptr<detail::BatchBuffer> buffer;
    std::shared_ptr<FieldMemory> fields;
  };
  auto both = std::make_shared<Both>(Both{std::move(buffer_), std::move(fields_)});
  detail::BatchBuffer* const buffer = both->buffer.get();
  return Batch(std::shared_ptr<detail::BatchBuffer>(std::move(both), buffer), size, sequence, epoch);
}

// Per buffer, its field memory; a buffer is lent to one writer at a time, so one memory serves one batch.
class BatchBuffers::FieldMemories {
 public:
  std::shared_ptr<BatchWriter::FieldMemory> of(const detail::BatchBuffer* buffer, const BatchSourceLayout& layout,
                                               const std::shared_ptr<HostMemoryResource>& resource) {
    std::lock_guard lock(mutex_);
    std::shared_ptr<BatchWriter::FieldMemory>& memory = memories_[buffer];
    if (!memory) memory = std::make_shared<BatchWriter::FieldMemory>(layout.field_tensors, resource);
    return memory;
  }

 private:
  std::mutex mutex_;
  std::map<const detail::BatchBuffer*, std::shared_ptr<BatchWriter::FieldMemory>> memories_;
};

BatchBuffers::BatchBuffers(std::shared_ptr<detail::BatchPool> pool, BatchSourceLayout layout)
    : pool_(std::move(pool)), layout_(std::move(layout)), field_memories_(std::make_shared<FieldMemories>()) {}

std::optional<BatchWriter> BatchBuffers::writer(std::shared_ptr<detail::BatchBuffer> buffer) const {
  if (!buffer) return std::nullopt;
  buffer->field_tensors.clear();  // the last batch's are not this one's
  if (layout_.field_tensors.empty()) return BatchWriter(std::move(buffer), nullptr);
  std::shared_ptr<BatchWriter::FieldMemory> fields =
      field_memories_->of(buffer.get(), layout_, pool_->memory());
  fields->start();
  return BatchWriter(std::move(buffer), std::move(fields));
}

std::optional<BatchWriter> BatchBuffers::acquire() const { return writer(pool_->acquire()); }

std::optional<BatchWriter> BatchBuffers::try_acquire() const { return writer(pool_->try_acquire()); }

std::size_t BatchBuffers::max_buffers() const noexcept { return pool_->max_buffers(); }
bool BatchBuffers::page_locked() const noexcept { return pool_->pinned(); }

}  // namespace conveyor
