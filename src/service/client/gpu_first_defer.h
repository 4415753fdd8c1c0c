// The deferral of a trainer's own splits while workers serve it (ServiceOptions::local_gpu_first): every
// sample its GPU decoder can take goes there, instead of the share a local pipeline would balance.
//
// Why: the workers' batches arrive decoded by their CPUs, so the trainer's GPU decoder is the one supply of
// decoding that does not compete with receiving them. Balanced like a local pipeline, the trainer's few cores
// decoded a third of its own splits beside receiving 1.3 GB/s of batches (66.1 % of the step on an H200 with
// 4 trainer cores and 12 worker cores); with every local sample on the GPU, 84.7 % in the same call
// (bench/results/2026-11-29-h200-service-local-gpu-first). Without a worker (the fallback, or workers lost)
// the consumer's own policy decides again, as in a local pipeline.
#pragma once

#include <atomic>
#include <memory>
#include <utility>

#include "conveyor/defer.h"

namespace conveyor::service::detail {

class GpuFirstDefer final : public DeferPolicy {
 public:
  explicit GpuFirstDefer(std::shared_ptr<DeferPolicy> consumer) : consumer_(std::move(consumer)) {}

  // Set by the stream's control thread as workers come and go.
  void set_workers_serving(bool serving) noexcept {
    workers_serving_.store(serving, std::memory_order_relaxed);
  }
  bool workers_serving() const noexcept { return workers_serving_.load(std::memory_order_relaxed); }

  bool should_defer(const Sample& sample) noexcept override {
    // The consumer's policy is asked either way: it may count what it was asked. Nothing more than it says
    // while its stage is not taking deferred samples (a feeder whose GPU decoder is coming ready).
    const bool consumer_says = consumer_->should_defer(sample);
    return consumer_says || (workers_serving() && consumer_->taking());
  }
  void declined(const Sample& sample, const char* reason) noexcept override {
    consumer_->declined(sample, reason);
  }
  void spent(bool deferred, std::chrono::nanoseconds time) noexcept override {
    consumer_->spent(deferred, time);
  }
  bool taking() const noexcept override { return consumer_->taking(); }

 private:
  const std::shared_ptr<DeferPolicy> consumer_;
  std::atomic<bool> workers_serving_{false};
};

}  // namespace conveyor::service::detail
