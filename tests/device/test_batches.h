// Batches for feeder tests without the pipeline: a small pool that hands out real Batch handles over
// pageable or page-locked memory and records, thread-safely, which buffers came back and when.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "conveyor/batch.h"

namespace conveyor::testing {

enum class HostMemory { pageable, pinned };

class RecordingBatchPool {
 public:
  RecordingBatchPool(ImageShape shape, std::size_t capacity, HostMemory memory);
  ~RecordingBatchPool();
  RecordingBatchPool(const RecordingBatchPool&) = delete;
  RecordingBatchPool& operator=(const RecordingBatchPool&) = delete;

  // A new batch numbered `id`, `size` samples (<= capacity) filled with bytes derived from id, labels
  // id * 1000 + i. Each call uses fresh memory, so every batch is told apart by its id.
  Batch make(int id, std::size_t size);
  Batch make(int id) { return make(id, capacity_); }

  // The bytes make(id, size) writes, for comparing with what arrived.
  static std::vector<std::uint8_t> expected_pixels(int id, std::size_t size, ImageShape shape);
  static std::vector<std::int64_t> expected_labels(int id, std::size_t size);

  bool returned(int id) const;
  std::vector<int> returned_ids() const;  // in the order they came back
  // Waits until batch `id` has come back or `limit` passes; true when it came back.
  bool wait_returned(int id, std::chrono::milliseconds limit) const;

 private:
  struct Block;
  ImageShape shape_;
  std::size_t capacity_;
  HostMemory memory_;
  std::vector<std::unique_ptr<Block>> blocks_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<int> returned_;
};

}  // namespace conveyor::testing
