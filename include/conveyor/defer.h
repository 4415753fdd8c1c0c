// Deferring a sample's pixels to a stage after batching: the data wing's half of the hybrid CPU/GPU decode.
//
// The pipeline knows nothing of GPUs. What it offers is this: the last map of a batched chain may, instead
// of writing pixels into the sample's batch slot, *defer* the sample (Sample::defer): the pipeline then keeps
// the sample's encoded bytes and a small descriptor (at most kMaxDeferredDescriptor bytes, whatever the op
// wants to remember, e.g. its crop window) with the batch, marks the sample deferred in Batch::samples(),
// and leaves its slot's pixels unwritten. A later stage that owns a DeferPolicy makes those pixels: the
// device feeder decodes deferred samples with nvJPEG straight into its device batch
// (conveyor/cuda/device_feeder.h, FeederOptions::decode). The pipeline offers deferral only to the chain's
// last map, only when it batches and only when PipelineOptions::defer holds a policy; the op asks the
// policy sample by sample. Ops that can defer: ops::decode_random_resized_crop.
//
// Why an interface: the one-way rule (docs/architecture.md). The data wing (this header) may not see the
// device wing, so it owns the interface and the device wing supplies the implementation, as with
// HostMemoryResource.
#pragma once

#include <chrono>
#include <cstddef>

namespace conveyor {

class Sample;

// Room for an op's descriptor of a deferred sample.
inline constexpr std::size_t kMaxDeferredDescriptor = 96;

// Decides which samples an op leaves to the stage after batching, and hears how that went. Called
// concurrently from the pipeline's workers: implementations must be thread-safe and quick.
class DeferPolicy {
 public:
  virtual ~DeferPolicy() = default;
  // Whether the op should defer this sample. In a pipeline with deterministic = true the answer must be a
  // pure function of the sample's identity (index, epoch, seed), so that a run's output does not depend on
  // timing or threads.
  virtual bool should_defer(const Sample& sample) noexcept = 0;
  // The op was told to defer the sample but made its pixels itself because the later stage could not take
  // it; `reason` is a short stable name ("cmyk", "arithmetic_coding", ...). Counted by the policy's owner.
  virtual void declined(const Sample& sample, const char* reason) noexcept = 0;
  // The time the op spent on one sample, having deferred it or not: what an adaptive policy balances.
  virtual void spent(bool deferred, std::chrono::nanoseconds time) noexcept = 0;
  // Whether the later stage takes deferred samples now: false while it is still coming ready (a feeder that
  // starts at once), when should_defer answers false whatever the sample. For a policy that wraps this one.
  virtual bool taking() const noexcept { return true; }
};

}  // namespace conveyor
