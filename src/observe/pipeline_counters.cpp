#include "src/observe/pipeline_counters.h"

#include <cstdio>

namespace conveyor::detail {

PipelineCounters::PipelineCounters(std::vector<std::string> stage_names)
    : names_(std::move(stage_names)), stages_(std::make_unique<Stage[]>(names_.size())) {}

void PipelineCounters::record_skip(std::string_view path, const std::string& stage, const std::string& kind,
                                   const std::string& reason) {
  skipped.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(skip_mutex_);
  ++skip_reasons_[stage + ": " + kind];
  if (skipped_samples_.size() < PipelineStats::kMaxSkippedSamples)
    skipped_samples_.push_back(SkippedSample{std::string(path), stage, reason});
}

void PipelineCounters::record_stall(const StallReport& report) {
  std::lock_guard lock(skip_mutex_);
  ++stalls_;
  abandoned_ += report.abandoned ? 1 : 0;
  if (stall_reports_.size() < PipelineStats::kMaxStallReports) stall_reports_.push_back(report);
}

void PipelineCounters::queue_pushed(std::size_t depth) noexcept {
  std::size_t max = queue_max_.load(std::memory_order_relaxed);
  while (depth > max && !queue_max_.compare_exchange_weak(max, depth, std::memory_order_relaxed)) {
  }
}

void PipelineCounters::queue_popped(std::size_t seen) noexcept {
  queue_seen_sum_.fetch_add(seen, std::memory_order_relaxed);
  queue_seen_count_.fetch_add(1, std::memory_order_relaxed);
}

PipelineStats PipelineCounters::snapshot() const {
  PipelineStats stats;
  stats.elements_in = elements_in.load(std::memory_order_relaxed);
  stats.elements_out = elements_out.load(std::memory_order_relaxed);
  stats.batches = batches.load(std::memory_order_relaxed);
  stats.filtered = filtered.load(std::memory_order_relaxed);
  stats.skipped = skipped.load(std::memory_order_relaxed);
  stats.deferred = deferred.load(std::memory_order_relaxed);
  stats.consumer_waits = consumer_waits.load(std::memory_order_relaxed);
  stats.consumer_wait_ns = consumer_wait_ns.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < names_.size(); ++i) {
    stats.stages.push_back(StageStats{names_[i], stages_[i].count.load(std::memory_order_relaxed),
                                      stages_[i].busy_ns.load(std::memory_order_relaxed),
                                      stages_[i].failures.load(std::memory_order_relaxed)});
  }
  stats.queue.max = queue_max_.load(std::memory_order_relaxed);
  const std::uint64_t seen = queue_seen_count_.load(std::memory_order_relaxed);
  stats.queue.mean = seen ? static_cast<double>(queue_seen_sum_.load(std::memory_order_relaxed)) / seen : 0.0;
  std::lock_guard lock(skip_mutex_);
  stats.skip_reasons = skip_reasons_;
  stats.skipped_samples = skipped_samples_;
  stats.stalls = stalls_;
  stats.abandoned = abandoned_;
  stats.stall_reports = stall_reports_;
  return stats;
}

}  // namespace conveyor::detail

namespace conveyor {

std::string format_stats(const PipelineStats& stats) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "threads %d, in flight %zu, elements in %llu out %llu, batches %llu\n",
                stats.threads, stats.max_in_flight, static_cast<unsigned long long>(stats.elements_in),
                static_cast<unsigned long long>(stats.elements_out),
                static_cast<unsigned long long>(stats.batches));
  out += line;
  for (const StageStats& stage : stats.stages) {
    const double mean_us = stage.count ? static_cast<double>(stage.busy_ns) / stage.count / 1e3 : 0.0;
    std::snprintf(line, sizeof line, "  %-32s %10llu x %9.1f us  busy %8.3f s  failed %llu\n",
                  stage.name.c_str(), static_cast<unsigned long long>(stage.count), mean_us,
                  static_cast<double>(stage.busy_ns) / 1e9, static_cast<unsigned long long>(stage.failures));
    out += line;
  }
  std::snprintf(
      line, sizeof line,
      "queue: now %zu, max %zu, mean %.2f seen by the consumer (prefetch %zu); consumer waited %llu "
      "times, %.3f s\n",
      stats.queue.current, stats.queue.max, stats.queue.mean, stats.queue.capacity,
      static_cast<unsigned long long>(stats.consumer_waits),
      static_cast<double>(stats.consumer_wait_ns) / 1e9);
  out += line;
  std::snprintf(line, sizeof line, "pool: %zu of %zu buffers%s; filtered %llu, skipped %llu\n",
                stats.pool_buffers, stats.pool_capacity, stats.pinned ? " (pinned)" : "",
                static_cast<unsigned long long>(stats.filtered),
                static_cast<unsigned long long>(stats.skipped));
  out += line;
  for (const auto& [reason, count] : stats.skip_reasons)
    out += "  skipped " + std::to_string(count) + " x " + reason + "\n";
  if (stats.stalls > 0) {
    std::snprintf(line, sizeof line, "watchdog: %llu stalls, %llu abandoned\n",
                  static_cast<unsigned long long>(stats.stalls),
                  static_cast<unsigned long long>(stats.abandoned));
    out += line;
    for (const StallReport& r : stats.stall_reports) {
      std::snprintf(line, sizeof line, "  %.3f s in '%s' on worker %d (thread %llu)%s: ",
                    std::chrono::duration<double>(r.elapsed).count(), r.stage.c_str(), r.worker,
                    static_cast<unsigned long long>(r.thread_id), r.abandoned ? ", abandoned" : "");
      out += line + r.path + "\n";
    }
  }
  if (stats.decode_memory_budget > 0 || stats.decode_memory_peak > 0) {
    std::snprintf(line, sizeof line, "decode memory: peak %.1f MB of a %.1f MB budget, %llu waits\n",
                  static_cast<double>(stats.decode_memory_peak) / 1e6,
                  static_cast<double>(stats.decode_memory_budget) / 1e6,
                  static_cast<unsigned long long>(stats.decode_memory_waits));
    out += line;
  }
  if (stats.deferred > 0)
    out += "deferred " + std::to_string(stats.deferred) + " samples to the stage after batching\n";
  std::uint64_t all = 0;
  for (const SourcePart& part : stats.source_parts) all += part.elements;
  if (!stats.source_parts.empty()) out += "made by:\n";
  for (const SourcePart& part : stats.source_parts) {
    char first_batch[48] = "";
    if (part.first_batch_seconds > 0)
      std::snprintf(first_batch, sizeof first_batch, ", first batch after %.3f s", part.first_batch_seconds);
    std::snprintf(
        line, sizeof line,
        "  %-28s %10llu samples (%5.1f %%) %10.1f samples/s busy %8.0f bytes/sample%s, %llu lost%s\n",
        part.name.c_str(), static_cast<unsigned long long>(part.elements),
        all > 0 ? 100.0 * static_cast<double>(part.elements) / static_cast<double>(all) : 0.0,
        part.busy_seconds > 0 ? static_cast<double>(part.elements) / part.busy_seconds : 0.0,
        part.elements > 0 ? static_cast<double>(part.wire_bytes) / static_cast<double>(part.elements) : 0.0,
        part.shared_bytes > 0 ? " (the rest through shared memory)" : "",
        static_cast<unsigned long long>(part.failures), first_batch);
    out += line;
  }
  if (!stats.source_note.empty()) out += stats.source_note + "\n";
  if (const RemoteReadStats& r = stats.remote; r.shards_opened > 0) {
    std::snprintf(
        line, sizeof line,
        "remote shards: %llu opened, cache %llu hits, %llu misses, %llu uncached, %llu evicted; "
        "%.1f MB fetched, %.1f MB from the cache, %llu retries\n",
        static_cast<unsigned long long>(r.shards_opened), static_cast<unsigned long long>(r.cache_hits),
        static_cast<unsigned long long>(r.cache_misses), static_cast<unsigned long long>(r.uncached),
        static_cast<unsigned long long>(r.evictions), static_cast<double>(r.bytes_fetched) / 1e6,
        static_cast<double>(r.bytes_from_cache) / 1e6, static_cast<unsigned long long>(r.retries));
    out += line;
  }
  return out;
}

}  // namespace conveyor
