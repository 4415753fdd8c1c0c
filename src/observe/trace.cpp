#include "conveyor/trace.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "conveyor/error.h"

namespace conveyor {

struct TraceRecorder::Event {
  std::int64_t start_ns = 0;  // since the recorder's origin
  std::int64_t duration_ns = 0;
  double value = 0;
  char phase = 'X';
  std::uint8_t name_length = 0;
  char name[kMaxNameLength] = {};
};

// Events live in fixed-size chunks that never move: the owner writes chunk c before it publishes a size
// past c * kChunk (release), and a reader only looks at chunks below the size it loaded (acquire).
struct TraceRecorder::Track {
  static constexpr std::size_t kChunk = 4096;

  Track(std::string name_, std::size_t max_events)
      : name(std::move(name_)),
        capacity(max_events),
        chunks(std::make_unique<std::unique_ptr<Event[]>[]>((max_events + kChunk - 1) / kChunk)) {}

  const std::string name;
  const std::size_t capacity;
  std::unique_ptr<std::unique_ptr<Event[]>[]> chunks;
  std::atomic<std::size_t> size{0};
};

namespace {

void set_name(char (&out)[TraceRecorder::kMaxNameLength], std::uint8_t& length, std::string_view name) {
  const std::size_t n = std::min(name.size(), TraceRecorder::kMaxNameLength);
  std::memcpy(out, name.data(), n);
  length = static_cast<std::uint8_t>(n);
}

using Json = nlohmann::ordered_json;  // ordered: "name" and "ph" first, as Chrome's own traces have them

// Appends one JSON value as one line of the document. Names are cut at kMaxNameLength bytes, which can
// split a UTF-8 character: such bytes become U+FFFD instead of an exception.
void append_line(std::string& out, const Json& value) {
  out += ",\n";
  out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Writes the events of a trace. A trace may hold millions of events, so it is written event by event
// rather than built as one nlohmann::json document (hundreds of bytes per event before the first is
// written), and each kind of event is one object whose fields are set in place for every event rather
// than a new object per event (a quarter of the time on a million events).
class EventLines {
 public:
  // phase: 'X' complete (uses duration_us), 'i' instant, 'C' counter (uses value).
  void append(std::string& out, std::string_view name, char phase, int tid, double start_us,
              double duration_us, double value) {
    Json& event = phase == 'X' ? complete_ : phase == 'i' ? instant_ : counter_;
    event["name"].get_ref<std::string&>().assign(name);
    event["tid"] = tid;
    event["ts"] = start_us;
    if (phase == 'X') event["dur"] = duration_us;
    if (phase == 'C') event["args"]["value"] = value;  // NaN and infinities come out as null
    append_line(out, event);
  }

 private:
  Json complete_ = {{"name", ""}, {"ph", "X"}, {"pid", 1}, {"tid", 0}, {"ts", 0.0}, {"dur", 0.0}};
  Json instant_ = {{"name", ""}, {"ph", "i"}, {"pid", 1}, {"tid", 0}, {"ts", 0.0}, {"s", "t"}};  // on its row
  Json counter_ = {{"name", ""}, {"ph", "C"}, {"pid", 1},
                   {"tid", 0},   {"ts", 0.0}, {"args", {{"value", 0.0}}}};
};

struct FileCloser {
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): the unique_ptr below is the owner
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

}  // namespace

TraceRecorder::TraceRecorder(std::size_t max_events_per_track)
    : origin_(Clock::now()),
      max_events_per_track_(std::max<std::size_t>(max_events_per_track, 1)),
      tracks_(std::make_unique<std::atomic<Track*>[]>(kMaxTracks)) {
  for (std::size_t i = 0; i < kMaxTracks; ++i) tracks_[i].store(nullptr, std::memory_order_relaxed);
}

TraceRecorder::~TraceRecorder() = default;

int TraceRecorder::track(std::string name) {
  std::lock_guard lock(mutex_);
  const int id = track_count_.load(std::memory_order_relaxed);
  if (static_cast<std::size_t>(id) >= kMaxTracks)
    throw InvalidArgument("TraceRecorder: more than " + std::to_string(kMaxTracks) + " tracks");
  owned_.push_back(std::make_unique<Track>(std::move(name), max_events_per_track_));
  tracks_[static_cast<std::size_t>(id)].store(owned_.back().get(), std::memory_order_release);
  track_count_.store(id + 1, std::memory_order_release);
  return id;
}

TraceRecorder::Track* TraceRecorder::find(int track) const noexcept {
  if (track < 0 || static_cast<std::size_t>(track) >= kMaxTracks) return nullptr;
  return tracks_[static_cast<std::size_t>(track)].load(std::memory_order_acquire);
}

void TraceRecorder::append(Track& track, const Event& event) noexcept {
  // Acquire: the track's previous writer may have been another thread (one at a time, e.g. the
  // successive holders of an arena slot).
  const std::size_t i = track.size.load(std::memory_order_acquire);
  if (i >= track.capacity) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::unique_ptr<Event[]>& chunk = track.chunks[i / Track::kChunk];
  if (!chunk) {
    try {
      chunk = std::make_unique_for_overwrite<Event[]>(Track::kChunk);
    } catch (const std::bad_alloc&) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  chunk[i % Track::kChunk] = event;
  track.size.store(i + 1, std::memory_order_release);
}

void TraceRecorder::complete(int track, std::string_view name, TimePoint start, TimePoint end) noexcept {
  Track* t = find(track);
  if (t == nullptr) return;
  Event event;
  event.phase = 'X';
  event.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start - origin_).count();
  event.duration_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
  set_name(event.name, event.name_length, name);
  append(*t, event);
}

void TraceRecorder::instant(int track, std::string_view name, TimePoint at) noexcept {
  Track* t = find(track);
  if (t == nullptr) return;
  Event event;
  event.phase = 'i';
  event.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(at - origin_).count();
  set_name(event.name, event.name_length, name);
  append(*t, event);
}

void TraceRecorder::counter(std::string_view name, TimePoint at, double value) {
  Event event;
  event.phase = 'C';
  event.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(at - origin_).count();
  event.value = value;
  set_name(event.name, event.name_length, name);
  std::lock_guard lock(mutex_);  // counters come from any thread: the lock makes this track's one writer
  if (counter_track_ < 0) {
    const int id = track_count_.load(std::memory_order_relaxed);
    if (static_cast<std::size_t>(id) >= kMaxTracks) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    owned_.push_back(std::make_unique<Track>("counters", max_events_per_track_));
    tracks_[static_cast<std::size_t>(id)].store(owned_.back().get(), std::memory_order_release);
    track_count_.store(id + 1, std::memory_order_release);
    counter_track_ = id;
  }
  append(*find(counter_track_), event);
}

std::size_t TraceRecorder::events() const noexcept {
  std::size_t total = 0;
  const int count = track_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i)
    if (const Track* t = find(i)) total += t->size.load(std::memory_order_acquire);
  return total;
}

std::size_t TraceRecorder::dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

std::string TraceRecorder::json() const {
  // Only the opening and the closing of the object and its "traceEvents" array are written by hand.
  std::string out = R"({"displayTimeUnit":"ms","traceEvents":[)";
  out += '\n';
  out += Json{{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "conveyor"}}}}.dump();
  EventLines lines;
  std::lock_guard lock(mutex_);  // the counter track's writer holds it too
  const int count = track_count_.load(std::memory_order_acquire);
  for (int id = 0; id < count; ++id) {
    const Track* track = find(id);
    append_line(
        out,
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", id}, {"args", {{"name", track->name}}}});
    append_line(out, {{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", id},
                      {"args", {{"sort_index", id}}}});
    const std::size_t size = track->size.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < size; ++i) {
      const Event& e = track->chunks[i / Track::kChunk][i % Track::kChunk];
      lines.append(out, std::string_view(e.name, e.name_length), e.phase, id,
                   static_cast<double>(e.start_ns) / 1000.0, static_cast<double>(e.duration_ns) / 1000.0,
                   e.value);
    }
  }
  out += "\n]}\n";
  return out;
}

void TraceRecorder::write_json(const std::filesystem::path& path) const {
  const std::string text = json();
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) throw IoError("TraceRecorder: cannot write '" + path.string() + "'");
  if (std::fwrite(text.data(), 1, text.size(), file.get()) != text.size() || std::fflush(file.get()) != 0)
    throw IoError("TraceRecorder: cannot write '" + path.string() + "'");
}

}  // namespace conveyor
