// The running state behind a BatchIterator over a BatchSource (BatchedDataset::from_source): the pool of
// batch buffers the source's stream writes into, the stream, and what IteratorState needs from it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/batch_source.h"
#include "conveyor/dataset.h"
#include "conveyor/iterator_state.h"
#include "src/memory/batch_pool.h"

namespace conveyor::detail {

class SourcedBatches {
 public:
  // Opens a stream of `source` at `start` (the default state: the beginning). Throws InvalidArgument when
  // the state belongs to another source or seed, naming the difference.
  SourcedBatches(std::shared_ptr<const BatchSource> source, const PipelineOptions& options,
                 std::size_t prefetch, const IteratorState& start);
  // Cancels the stream and the pool (waking every wait), then lets the stream go.
  ~SourcedBatches();
  SourcedBatches(const SourcedBatches&) = delete;
  SourcedBatches& operator=(const SourcedBatches&) = delete;

  std::optional<Batch> next_batch();
  PipelineStats stats() const;  // any thread
  IteratorState state() const;  // the consumer's thread
  void cancel() noexcept;       // any thread

 private:
  const std::shared_ptr<const BatchSource> source_;
  const std::vector<std::string> description_;
  const std::uint64_t seed_;
  std::shared_ptr<BatchPool> pool_;
  std::unique_ptr<BatchStream> stream_;
  bool finished_ = false;
  BatchStreamPosition position_;  // after the last batch handed out
  std::atomic<std::uint64_t> batches_{0}, elements_{0};
};

}  // namespace conveyor::detail
