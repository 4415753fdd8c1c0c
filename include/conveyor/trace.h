// A Chrome-trace recorder (JSON for chrome://tracing and https://ui.perfetto.dev): named tracks (one per
// thread), complete events ("X") and counters ("C"). The pipeline records every stage of every element on
// its worker's track, the consumer's waits on the consumer's track and the ready-queue depth as a counter;
// any other code (a training loop, a device feeder) can add its own tracks and events to the same
// recorder, so one file shows where the GPU would wait.
//
// Recording takes no lock: a track is appended to by one thread at a time (its owner), through a chunked
// buffer whose published length is an atomic. write_json() may run while events are being recorded; it
// sees every event published before it started.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace conveyor {

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  static constexpr std::size_t kMaxTracks = 1024;
  static constexpr std::size_t kMaxNameLength = 46;  // longer event names are cut

  // Each track keeps at most max_events_per_track events; later ones are counted in dropped().
  explicit TraceRecorder(std::size_t max_events_per_track = std::size_t{1} << 20);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // A new track (a row in the viewer), shown under `name`. Thread-safe. Throws InvalidArgument past
  // kMaxTracks tracks.
  int track(std::string name);

  // An event that started at `start` and ended at `end` on `track`. Only one thread at a time may record
  // on a given track.
  void complete(int track, std::string_view name, TimePoint start, TimePoint end) noexcept;
  // A point in time on `track` ("i" event).
  void instant(int track, std::string_view name, TimePoint at) noexcept;
  // A value of the counter `name` at `at` (a "C" event, drawn as its own graph). Thread-safe: takes a
  // short lock, meant for per-batch events, not per-pixel ones.
  void counter(std::string_view name, TimePoint at, double value);

  // Events recorded so far, and events dropped because their track was full.
  std::size_t events() const noexcept;
  std::size_t dropped() const noexcept;

  // The trace as Chrome's JSON object format ({"traceEvents": [...]}); times in microseconds since the
  // recorder was made.
  std::string json() const;
  // Writes json() to `path`; throws IoError when the file cannot be written.
  void write_json(const std::filesystem::path& path) const;

  static TimePoint now() noexcept { return Clock::now(); }

 private:
  struct Event;
  struct Track;
  Track* find(int track) const noexcept;
  void append(Track& track, const Event& event) noexcept;

  const TimePoint origin_;
  const std::size_t max_events_per_track_;
  std::unique_ptr<std::atomic<Track*>[]> tracks_;  // fixed capacity: readers never see it move
  std::vector<std::unique_ptr<Track>> owned_;      // guarded by mutex_
  std::atomic<int> track_count_{0};
  std::atomic<std::size_t> dropped_{0};
  mutable std::mutex mutex_;  // registration, and the shared counter track
  int counter_track_ = -1;
};

// Records a complete event from construction to destruction. A null recorder makes it a no-op. `name`
// must outlive the scope (a string literal or an op's name).
class TraceScope {
 public:
  TraceScope(TraceRecorder* recorder, int track, std::string_view name) noexcept
      : recorder_(recorder),
        track_(track),
        name_(name),
        start_(recorder ? TraceRecorder::now() : TraceRecorder::TimePoint{}) {}
  ~TraceScope() {
    if (recorder_) recorder_->complete(track_, name_, start_, TraceRecorder::now());
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceRecorder* recorder_;
  int track_;
  std::string_view name_;
  TraceRecorder::TimePoint start_;
};

}  // namespace conveyor
