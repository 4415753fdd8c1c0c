// Batches made elsewhere, handed over through the Dataset API: by another process or host (the data service,
// conveyor/service/), or by a user's own transport.
//
//   BatchedDataset batches = BatchedDataset::from_source(std::make_shared<MySource>(...));
//   for (const Batch& batch : batches) step(batch);                 // or DeviceFeeder::feed(batches)
//
// Such a BatchedDataset is one like any other: begin() gives a BatchIterator, begin(state) resumes,
// with_options and prefetch apply, DeviceFeeder::feed takes it. The iterator owns a pool of batch buffers in
// the memory PipelineOptions::host_memory names (page-locked when a GPU consumer asks for it), room for
// prefetch + held_batches + what the source has in flight; the source's stream writes what it receives
// straight into them (BatchWriter), so the bytes are not copied again on their way to a GPU.
//
// The data wing owns this interface and knows nothing of how batches travel: conveyor::data links no RPC
// library, and a program that does not read from a service loads none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/image.h"
#include "conveyor/stats.h"
#include "conveyor/tensor.h"

namespace conveyor {

struct PipelineOptions;

namespace detail {
class BatchPool;
class SourcedBatches;
}  // namespace detail

// One tensor of the fields of a source's batches, as a BatchTensor describes it (conveyor/batch.h), without
// its memory: what a source that receives batches made elsewhere needs to check and hold them without knowing
// the field. E.g. a boxes field gives {"boxes", "boxes", float32, {-1, 4}, padding dim 1, counts
// "box_counts"}, and keypoints {"keypoints", "keypoints", float32, {-1, 17, 3}, ...}.
struct FieldTensorLayout {
  std::string field;  // the field kind ("mask", "boxes", ...)
  std::string name;   // unique among a batch's tensors
  DType dtype = DType::uint8;
  // The dimensions after the batch's: -1 where each batch pads to its own most (padding.dim's), else fixed.
  std::vector<std::int64_t> shape{};
  int padding_dim = -1;     // TensorPadding::dim
  double padding_value = 0;  // TensorPadding::value
  std::string counts;        // TensorPadding::counts: the (N) int64 tensor of each sample's entries
  bool follows_geometry = false;
  friend bool operator==(const FieldTensorLayout&, const FieldTensorLayout&) = default;
};

// What a source's batches hold besides pixels, labels and each sample's identity: their field tensors, in the
// order Batch::fields() lists them (conveyor/fields/field.h).
struct BatchSourceLayout {
  std::size_t batch_size = 0;
  ImageShape sample_shape;
  std::vector<FieldTensorLayout> field_tensors{};
};

// One of the iterator's batch buffers, being filled by a source. Its views cover capacity() samples; finish()
// makes the delivered Batch of the first `size`. Dropped unfinished, the buffer goes back to its pool.
class BatchWriter {
 public:
  class FieldMemory;  // the buffer's memory for the field tensors (batch_writer.cpp)

  BatchWriter(BatchWriter&&) noexcept = default;
  BatchWriter& operator=(BatchWriter&&) noexcept = default;
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;
  ~BatchWriter() = default;

  std::size_t capacity() const noexcept;
  bool page_locked() const noexcept;
  // (capacity, H, W, C) uint8 and (capacity) int64.
  TensorView pixel_tensor() const noexcept;
  TensorView label_tensor() const noexcept;
  // Who each sample is (index, epoch, seed, padding): the source writes every delivered sample's.
  std::span<SampleInfo> samples() const noexcept;
  // Where the layout's field tensor `i` (layout().field_tensors[i]) goes: (capacity, dims...) with `dims` the
  // dimensions after the batch's, the layout's fixed ones and any extent >= 0 where it pads (the buffer's
  // memory for it grows when needed, in the pool's kind of memory). Throws InvalidArgument for an index past
  // the layout, or dims of another rank or other fixed extents.
  TensorView field_tensor(std::size_t i, std::span<const std::int64_t> dims);
  // The batch of the first `size` samples (size <= capacity()), with every field tensor of the layout, each
  // written through field_tensor() since this buffer was acquired. InvalidArgument otherwise, and when a
  // counts tensor (FieldTensorLayout::counts) says a sample has more entries than its tensors hold or fewer
  // than none.
  Batch finish(std::size_t size, std::uint64_t sequence, std::uint64_t epoch) &&;

 private:
  friend class BatchBuffers;
  BatchWriter(std::shared_ptr<detail::BatchBuffer> buffer, std::shared_ptr<FieldMemory> fields)
      : buffer_(std::move(buffer)), fields_(std::move(fields)) {}
  std::shared_ptr<detail::BatchBuffer> buffer_;
  std::shared_ptr<FieldMemory> fields_;  // null for a layout without fields
};

// The iterator's pool of batch buffers as its stream sees it. Copies share the pool; thread-safe.
class BatchBuffers {
 public:
  // A free buffer; waits while every buffer is lent out (each comes back when the Batch made of it, and
  // every copy of its memory, dies). std::nullopt once the iterator is being destroyed.
  std::optional<BatchWriter> acquire() const;
  // The same without waiting: std::nullopt when none is free now.
  std::optional<BatchWriter> try_acquire() const;
  const BatchSourceLayout& layout() const noexcept { return layout_; }
  std::size_t max_buffers() const noexcept;
  bool page_locked() const noexcept;

 private:
  friend class detail::SourcedBatches;
  class FieldMemories;  // each buffer's BatchWriter::FieldMemory, kept from batch to batch (batch_writer.cpp)
  BatchBuffers(std::shared_ptr<detail::BatchPool> pool, BatchSourceLayout layout);
  std::optional<BatchWriter> writer(std::shared_ptr<detail::BatchBuffer> buffer) const;
  std::shared_ptr<detail::BatchPool> pool_;
  BatchSourceLayout layout_;
  std::shared_ptr<FieldMemories> field_memories_;
};

// Where a stream stands after the batches it handed out: what IteratorState keeps for it (a few numbers).
struct BatchStreamPosition {
  std::vector<std::uint64_t> words;  // the source's own; empty: the beginning
  std::uint64_t batches = 0, elements = 0, epoch = 0;
};

// One iteration over a source's batches: made by BatchSource::open, owned by the BatchIterator, used from the
// consumer's thread except cancel().
class BatchStream {
 public:
  virtual ~BatchStream() = default;
  // The next batch (written into the iterator's buffers, or made elsewhere), std::nullopt at the end; waits
  // until one is ready. Throws what went wrong (conveyor::Error and its kinds, with context); the iterator
  // is at its end afterwards.
  virtual std::optional<Batch> next() = 0;
  // Where the stream stands after the last batch next() returned.
  virtual BatchStreamPosition position() const = 0;
  // What the stream knows of its work: consumer waits, skips, and source_parts (each producer of its
  // batches). The iterator fills in batches, elements and the pool's figures itself.
  virtual void add_stats(PipelineStats& stats) const = 0;
  // From any thread: a next() waiting elsewhere returns soon (std::nullopt), and so do later calls.
  virtual void cancel() noexcept = 0;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual BatchSourceLayout layout() const = 0;
  // Lines naming the batches this source makes (data, chain, seed, ...): a state saved by an iterator of a
  // source that describes itself otherwise is refused, naming the first line that differs.
  virtual std::vector<std::string> describe() const = 0;
  // Buffers the stream keeps besides the prefetched and held ones (being received, being filled).
  virtual std::size_t buffers_in_flight() const { return 1; }
  // Starts a stream at `start` (words empty: the beginning) that keeps at most `prefetch` batches ready,
  // written into `buffers`. `options` are the dataset's (seed, threads, cpus, host memory, trace, ...).
  virtual std::unique_ptr<BatchStream> open(BatchBuffers buffers, const PipelineOptions& options,
                                            std::size_t prefetch, const BatchStreamPosition& start) const = 0;
};

}  // namespace conveyor
