#include "conveyor/trace.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

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

void append_escaped(std::string& out, std::string_view text) {
  out.push_back('"');
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += code;
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void append_number(std::string& out, const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  out += text;
}

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
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  out += R"({"name":"process_name","ph":"M","pid":1,"args":{"name":"conveyor"}})";
  std::lock_guard lock(mutex_);  // the counter track's writer holds it too
  const int count = track_count_.load(std::memory_order_acquire);
  for (int id = 0; id < count; ++id) {
    const Track* track = find(id);
    const std::string tid = std::to_string(id);
    out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":";
    out += tid;
    out += ",\"args\":{\"name\":";
    append_escaped(out, track->name);
    out += "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":";
    out += tid;
    out += ",\"args\":{\"sort_index\":";
    out += tid;
    out += "}}";
    const std::size_t size = track->size.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < size; ++i) {
      const Event& e = track->chunks[i / Track::kChunk][i % Track::kChunk];
      out += ",\n{\"name\":";
      append_escaped(out, std::string_view(e.name, e.name_length));
      out += ",\"ph\":\"";
      out.push_back(e.phase);
      out += "\",\"pid\":1,\"tid\":";
      out += tid;
      out += ",\"ts\":";
      append_number(out, "%.3f", static_cast<double>(e.start_ns) / 1000.0);
      if (e.phase == 'X') {
        out += ",\"dur\":";
        append_number(out, "%.3f", static_cast<double>(e.duration_ns) / 1000.0);
      } else if (e.phase == 'i') {
        out += ",\"s\":\"t\"";
      } else {
        out += ",\"args\":{\"value\":";
        append_number(out, "%.17g", e.value);
        out += "}";
      }
      out += "}";
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
