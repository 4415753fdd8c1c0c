// The counters behind PipelineStats. Workers bump relaxed atomics (no lock on the hot path); only the
// rare skip records take a lock. snapshot() sums everything into a PipelineStats at any time.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conveyor/stats.h"

namespace conveyor::detail {

class PipelineCounters {
 public:
  struct Stage {
    std::atomic<std::uint64_t> count{0};
    std::atomic<std::uint64_t> busy_ns{0};
    std::atomic<std::uint64_t> failures{0};
  };

  explicit PipelineCounters(std::vector<std::string> stage_names);

  Stage& stage(std::size_t i) noexcept { return stages_[i]; }
  void count_stage(std::size_t i, std::uint64_t busy_ns) noexcept {
    stages_[i].count.fetch_add(1, std::memory_order_relaxed);
    stages_[i].busy_ns.fetch_add(busy_ns, std::memory_order_relaxed);
  }
  // A dropped element: counted per "stage: kind", the first few kept with their full reason.
  void record_skip(std::string_view path, const std::string& stage, const std::string& kind,
                   const std::string& reason);
  // A watchdog report (kept in the first kMaxStallReports).
  void record_stall(const StallReport& report);
  // The output queue's depth after a push, and the depth a next() call found. (Its current depth is
  // the queue's own to report: these calls are not ordered with the queue's operations.)
  void queue_pushed(std::size_t depth) noexcept;
  void queue_popped(std::size_t seen) noexcept;

  PipelineStats snapshot() const;

  std::atomic<std::uint64_t> elements_in{0};
  std::atomic<std::uint64_t> elements_out{0};
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::uint64_t> filtered{0};
  std::atomic<std::uint64_t> skipped{0};
  std::atomic<std::uint64_t> consumer_waits{0};
  std::atomic<std::uint64_t> consumer_wait_ns{0};

 private:
  const std::vector<std::string> names_;
  std::unique_ptr<Stage[]> stages_;
  std::atomic<std::size_t> queue_max_{0};
  std::atomic<std::uint64_t> queue_seen_sum_{0};
  std::atomic<std::uint64_t> queue_seen_count_{0};
  mutable std::mutex skip_mutex_;
  std::map<std::string, std::uint64_t> skip_reasons_;
  std::vector<SkippedSample> skipped_samples_;
  std::uint64_t stalls_ = 0, abandoned_ = 0;  // under skip_mutex_, as the reports
  std::vector<StallReport> stall_reports_;
};

}  // namespace conveyor::detail
