// Moves ready batches to where the training step reads them, overlapped with everything else.
//
//   DeviceFeeder feeder(resolve(DeviceSpec::parse("auto")), {.depth = 3, .normalize = params});
//   for (DeviceBatch& batch : feeder.feed(dataset)) model.step(batch.images(), batch.labels());
//
// On a GPU each batch is copied with cudaMemcpyAsync on the feeder's own copy stream into one of `depth`
// device buffers (a ring), optionally normalized there (uint8 NHWC -> float NCHW/NHWC), and made ready on
// the consumer stream: work the consumer enqueues on that stream after stage() returns sees the data. The
// pinned host buffer goes back to its pool as soon as its copy has finished. A DeviceBatch handle holds
// its ring slot; releasing it lets the feeder reuse the slot once the consumer stream passes that point
// (conveyor/cuda/device_batch.h). The consumer stream is the feeder's own unless set otherwise, and other
// streams may read a batch too (conveyor/cuda/stream.h, a CUDA-only header with the typed handles).
//
// On the CPU nothing is copied: the DeviceBatch views the batch's own memory (and normalized images made on
// the CPU, when asked for), kept out of its pool while the handle lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>

#include "conveyor/batch.h"
#include "conveyor/cuda/device.h"
#include "conveyor/cuda/device_batch.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/normalize.h"

namespace conveyor {

namespace cuda {
class DeviceMemoryPool;  // src/device/device_memory.h; exists only in builds with CUDA
}
namespace detail {
class FeederBackend;
}

struct FeederOptions {
  // Ring slots: batches that may be on their way or held by the consumer at once; 1 to 8. 3 lets one batch
  // be copied while one is computed on and one waits.
  int depth = 3;
  // Also make the model's input on the device: (pixel - mean) / std per channel, as float32, float16 or
  // bfloat16, NCHW or NHWC (DeviceBatch::images()). Only bytes cross the bus either way.
  std::optional<ops::NormalizeParams> normalize;
};

struct FeederStats {
  std::uint64_t batches = 0;   // stage() calls that staged a batch
  std::uint64_t copies = 0;    // host-to-device copies finished (pixels and labels of one batch count once)
  std::uint64_t bytes = 0;     // bytes copied to the device by finished copies
  double copy_seconds = 0;     // time those copies took on the copy stream (CUDA events)
  std::uint64_t pageable = 0;  // batches not in page-locked memory: staged by the driver through a bounce
                               // buffer, slower and partly synchronous with the host
  std::uint64_t allocations = 0;  // ring buffers allocated (first batch, or a larger batch)
  std::uint64_t host_waits = 0;   // stage() calls that waited for an earlier copy out of the same slot
  std::uint64_t held = 0;         // DeviceBatch handles (or views of them) alive now
};

class DeviceBatchIterator;

class DeviceFeeder {
 public:
  // On a GPU placement the feeder owns a device memory pool for its ring, without a limit.
  explicit DeviceFeeder(const Placement& placement, FeederOptions options = {});
  // The ring comes from `pool` (shared with the model, under its limit); it must outlive the feeder and
  // belong to the placement's device.
  DeviceFeeder(const Placement& placement, cuda::DeviceMemoryPool& pool, FeederOptions options = {});
  // Waits for the copies in flight and gives every pinned batch back. Batches still held keep their ring
  // memory alive until they are released.
  ~DeviceFeeder();
  DeviceFeeder(const DeviceFeeder&) = delete;
  DeviceFeeder& operator=(const DeviceFeeder&) = delete;

  // Starts moving `batch` to the consumer and returns the handle that holds it there. Throws
  // InvalidArgument for an empty batch, Error when every ring slot is held by a live DeviceBatch (release
  // one first), DeviceMemoryError when a ring buffer does not fit, DeviceError when a CUDA call (or an
  // earlier copy) failed.
  DeviceBatch stage(Batch batch);

  // Iterates `dataset` through this feeder: its batches live in memory the feeder copies fastest
  // (page-locked for a GPU) and the pipeline keeps room for the batches the feeder holds. Each DeviceBatch
  // of a range-for is released when the loop moves on. The feeder must outlive the iterator.
  DeviceBatchIterator feed(const BatchedDataset& dataset);
  // The same from where an earlier iterator of `dataset` stood (BatchedDataset::begin(state)).
  DeviceBatchIterator feed(const BatchedDataset& dataset, const IteratorState& state);
  // `dataset` as feed() runs it: held_batches at least depth(), batches in memory this feeder copies fastest.
  BatchedDataset fed(const BatchedDataset& dataset) const;

  // Waits until every copy has finished and every pinned batch has been given back.
  void synchronize();

  FeederStats stats() const;
  const Placement& placement() const noexcept;
  const FeederOptions& options() const noexcept;
  int depth() const noexcept { return options().depth; }

 private:
  friend struct detail::DeviceBatchAccess;
  Placement placement_;
  FeederOptions options_;
  std::shared_ptr<detail::FeederBackend> backend_;  // shared with every DeviceBatch it handed out
};

// A dataset's batches, staged by a feeder: call next(), or use it in a range-for. Move-only; not for
// concurrent use from several threads.
class DeviceBatchIterator {
 public:
  // The next batch, staged; std::nullopt at the end. Errors as BatchIterator::next() and
  // DeviceFeeder::stage().
  std::optional<DeviceBatch> next();
  PipelineStats stats() const { return batches_.stats(); }
  // Where the pipeline stands after the last batch next() staged (BatchIterator::state()).
  IteratorState state() const { return batches_.state(); }

  // Range-for support: `for (DeviceBatch& batch : feeder.feed(dataset))`. Each batch is released when the
  // loop moves on, before the next one is staged.
  class Cursor {
   public:
    using value_type = DeviceBatch;
    using difference_type = std::ptrdiff_t;
    DeviceBatch& operator*() const { return owner_->current(); }
    Cursor& operator++() {
      owner_->advance();
      return *this;
    }
    void operator++(int) { owner_->advance(); }
    friend bool operator==(const Cursor& cursor, std::default_sentinel_t) { return cursor.done(); }

   private:
    bool done() const { return owner_->at_end(); }
    friend class DeviceBatchIterator;
    explicit Cursor(DeviceBatchIterator* owner) : owner_(owner) {}
    DeviceBatchIterator* owner_;
  };
  Cursor begin() { return Cursor(this); }
  std::default_sentinel_t end() const noexcept { return {}; }

 private:
  friend class DeviceFeeder;
  DeviceBatchIterator(DeviceFeeder& feeder, BatchIterator batches)
      : feeder_(&feeder), batches_(std::move(batches)) {}
  bool at_end();
  DeviceBatch& current();
  void advance();

  DeviceFeeder* feeder_;
  BatchIterator batches_;
  std::optional<DeviceBatch> current_;
  bool fetched_ = false;
};

}  // namespace conveyor
