#include "conveyor/progress_watch.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace conveyor {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

std::string seconds(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ns) / 1e9);
  return text;
}

}  // namespace

// One member thread's activity: a small stack of levels written by its own thread only and read by the
// watch's thread. A level is published by storing `depth` last (release), so a reader that sees the depth
// sees the level's fields; a level changed while the report is being written may show half old, half new,
// which a report of a thread that is stuck never sees.
struct ProgressWatch::Record {
  static constexpr int kLevels = 6;
  struct Level {
    std::atomic<const char*> what{nullptr};
    std::atomic<long long> detail{-1};
    std::atomic<std::int64_t> since_ns{0};
  };

  explicit Record(std::string member) : name(std::move(member)), joined_ns(now_ns()) {}

  const std::string name;
  const std::int64_t joined_ns;
  std::atomic<int> depth{0};
  Level levels[kLevels];
};

namespace {

// The record of the watch the calling thread is a member of, if any.
thread_local ProgressWatch::Record* this_threads_record = nullptr;

}  // namespace

ProgressWatch::ProgressWatch(Options options) : options_(std::move(options)), last_progress_ns_(now_ns()) {
  if (options_.limit.count() > 0) thread_ = std::thread([this] { watch(); });
}

ProgressWatch::~ProgressWatch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressWatch::progress() noexcept {
  progress_.fetch_add(1, std::memory_order_relaxed);
  last_progress_ns_.store(now_ns(), std::memory_order_relaxed);
}

std::string ProgressWatch::report() const {
  struct Line {
    std::int64_t since_ns;
    std::string text;
  };
  std::vector<Line> lines;
  const std::int64_t now = now_ns();
  {
    std::lock_guard lock(mutex_);
    for (const std::shared_ptr<Record>& record : records_) {
      const int depth = std::clamp(record->depth.load(std::memory_order_acquire), 0, Record::kLevels);
      std::string text = record->name + ": ";
      std::int64_t since = record->joined_ns;
      if (depth == 0) text += "(nothing marked)";
      for (int level = 0; level < depth; ++level) {
        const Record::Level& l = record->levels[level];
        const char* what = l.what.load(std::memory_order_relaxed);
        const long long detail = l.detail.load(std::memory_order_relaxed);
        if (level > 0) text += " > ";
        text += what != nullptr ? what : "?";
        if (detail >= 0) {
          text += ' ';
          text += std::to_string(detail);
        }
        since = l.since_ns.load(std::memory_order_relaxed);
      }
      text += " (for " + seconds(now - since) + ")";
      lines.push_back({since, std::move(text)});
    }
  }
  // The thread stuck longest first: in a cycle of waits, where it started.
  std::stable_sort(lines.begin(), lines.end(),
                   [](const Line& a, const Line& b) { return a.since_ns < b.since_ns; });
  std::string out = "conveyor: no progress for " +
                    seconds(now - last_progress_ns_.load(std::memory_order_relaxed)) + " (progress count " +
                    std::to_string(progress_count()) + "); what each thread is doing:\n";
  for (const Line& line : lines) out += "  " + line.text + "\n";
  if (lines.empty()) out += "  (no thread has joined the watch)\n";
  return out;
}

void ProgressWatch::watch() {
  const auto limit_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.limit).count();
  // Checked a few times per limit, so a stall is reported at most a quarter of the limit late.
  const auto tick = std::max(options_.limit / 4, std::chrono::milliseconds(1));
  std::uint64_t reported_at = UINT64_MAX;  // the progress count of the last stall reported
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, tick, [&] { return stopping_; })) {
    const std::uint64_t count = progress_count();
    const std::int64_t quiet = now_ns() - last_progress_ns_.load(std::memory_order_relaxed);
    if (quiet < limit_ns || count == reported_at) continue;
    reported_at = count;
    lock.unlock();
    const std::string text = report();
    stalls_.fetch_add(1, std::memory_order_relaxed);
    if (options_.on_stall) {
      try {
        options_.on_stall(text);
      } catch (...) {
        // A report that cannot be delivered is not worth ending the process over.
      }
    } else {
      std::fputs(text.c_str(), stderr);
      std::fflush(stderr);
    }
    lock.lock();
  }
}

ProgressWatch::Member::Member(std::shared_ptr<ProgressWatch> watch, std::string name)
    : watch_(std::move(watch)) {
  if (!watch_) return;
  record_ = std::make_shared<Record>(std::move(name));
  {
    std::lock_guard lock(watch_->mutex_);
    watch_->records_.push_back(record_);
  }
  previous_ = this_threads_record;
  this_threads_record = record_.get();
}

ProgressWatch::Member::~Member() {
  if (!watch_) return;
  this_threads_record = previous_;
  std::lock_guard lock(watch_->mutex_);
  watch_->records_.remove(record_);
}

ProgressWatch::Doing::Doing(const char* what, long long detail) noexcept : record_(this_threads_record) {
  if (record_ == nullptr) return;
  const int depth = record_->depth.load(std::memory_order_relaxed);
  if (depth >= 0 && depth < Record::kLevels) {
    Record::Level& level = record_->levels[depth];
    level.what.store(what, std::memory_order_relaxed);
    level.detail.store(detail, std::memory_order_relaxed);
    level.since_ns.store(now_ns(), std::memory_order_relaxed);
  }
  record_->depth.store(depth + 1, std::memory_order_release);
}

ProgressWatch::Doing::~Doing() {
  if (record_ != nullptr) record_->depth.fetch_sub(1, std::memory_order_release);
}

}  // namespace conveyor
