// The pipeline's watchdog: a thread of its own that looks at every element's current stage a few times
// per stall_limit and reports those that stay too long (stats, trace, callback). Under abandon_stalled with
// on_error = skip it also gives them up: the element's place in its batch becomes a hole, as a skipped
// element's does, and the batch goes on without it; the stage itself cannot be interrupted (a blocked read
// or a long decode keeps its thread), so whatever it produces when it returns is thrown away.
#include <algorithm>

#include "src/pipeline/pipeline.h"

namespace conveyor::detail {

void Pipeline::watch() noexcept {
  const auto limit = plan_.options.stall_limit;
  // Often enough that a report comes at most a quarter of the limit late, never busier than every ms.
  const auto period = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(limit / 4),
                                 std::chrono::milliseconds(1), std::chrono::milliseconds(1000));
  std::unique_lock lock(watchdog_mutex_);
  while (!watchdog_stop_) {
    watchdog_wake_.wait_for(lock, period, [&] { return watchdog_stop_; });
    if (watchdog_stop_) break;
    lock.unlock();
    try {
      check_stalls();
    } catch (...) {
      // A report that cannot be made (out of memory, a throwing callback) must not end the process.
    }
    lock.lock();
  }
}

void Pipeline::check_stalls() {
  const auto now = std::chrono::steady_clock::now();
  for (const auto& owned : elements_) {
    Element& element = *owned;
    StallReport report;
    {
      std::lock_guard lock(element.watch_mutex);
      StageWatch& watch = element.watch;
      if (watch.stage < 0 || watch.reported || now - watch.start < plan_.options.stall_limit) continue;
      watch.reported = true;
      // The identity fields are written before the element's first stage starts and not again until it
      // has left its last one: under the watch mutex, with a stage running, they are stable.
      report.stage = stage_names_[static_cast<std::size_t>(watch.stage)];
      report.path = element.sample.path;
      report.index = element.sample.index;
      report.epoch = element.sample.epoch;
      report.elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(now - watch.start);
      report.worker = watch.worker;
      report.thread_id = watch.thread_id;
    }
    // An abandoned element's report is counted before its place is filled: the consumer may see the end
    // of the stream the moment that happens, and its stats must show why an element is missing.
    if (!abandoning_ || !abandon(element, report)) counters_.record_stall(report);
    if (trace_ && watchdog_track_ >= 0)
      trace_->instant(
          watchdog_track_,
          (report.abandoned ? "abandoned in " : "stalled in ") + report.stage + ": " + report.path,
          TraceRecorder::now());
    if (plan_.options.on_stall) plan_.options.on_stall(report);
  }
}

bool Pipeline::abandon(Element& element, StallReport& report) {
  std::lock_guard lock(collect_mutex_);
  Fate fate = Fate::running;
  // Fails when the element has already started copying its result or reached collect: then it finishes.
  if (!element.fate.compare_exchange_strong(fate, Fate::abandoned)) return false;
  report.abandoned = true;
  counters_.record_skip(report.path, report.stage, "stalled",
                        "stalled for " + std::to_string(report.elapsed.count() / 1'000'000) +
                            " ms (stall_limit " + std::to_string(plan_.options.stall_limit.count()) +
                            " ms) and abandoned");
  counters_.record_stall(report);
  const Arrival hole{true, nullptr, element.sequence, element.buffer, element.slot};
  if (in_order_) {
    arrive_in_order(hole);
  } else {
    collect_hole(hole);
  }
  return true;
}

}  // namespace conveyor::detail
