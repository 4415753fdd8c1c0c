#include "src/sources/shard_streamer.h"

#include <algorithm>

#include "src/sources/byte_stream.h"
#include "src/sources/shard_read_error.h"

namespace conveyor::detail {

ShardStreamer::ShardStreamer(std::shared_ptr<const ShardSet> shards, std::vector<Segment> segments,
                             StreamedSamplePool& pool, std::size_t max_member_bytes, bool in_order)
    : shards_(std::move(shards)),
      segments_(std::move(segments)),
      pool_(pool),
      format_([&] {
        TarFormat format = shards_->format;
        format.max_member_bytes = max_member_bytes;
        return format;
      }()),
      parallel_(std::max<std::size_t>(shards_->options.parallel_shards, 1)),
      queued_(std::max<std::size_t>(shards_->options.queued_samples, 1)),
      in_order_(in_order),
      queues_(segments_.size()) {
  // Without every segment's index (a shard of unknown count: a URL read without an index), a sample's index
  // is its position in the stream: the segments then come one after another, and so keep the epoch's order.
  const bool interleave = std::all_of(segments_.begin(), segments_.end(),
                                      [](const Segment& segment) { return segment.index.has_value(); });
  next_in_rotation_ = std::min(interleave ? parallel_ : std::size_t{1}, segments_.size());
  for (std::size_t s = 0; s < next_in_rotation_; ++s) rotation_.push_back(s);
  // The rotation's readers, and as many reading the segments that join it next (see the header).
  const std::size_t threads = std::min(2 * parallel_, segments_.size());
  threads_.reserve(threads);
  try {
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  } catch (...) {
    cancel();
    for (std::thread& thread : threads_) thread.join();
    throw;
  }
}

ShardStreamer::~ShardStreamer() {
  cancel();
  for (std::thread& thread : threads_) thread.join();
}

void ShardStreamer::cancel() {
  {
    std::lock_guard lock(mutex_);
    cancellation_.cancel();
  }
  ready_.notify_all();
  start_.notify_all();
  for (Queue& queue : queues_) queue.room.notify_all();
}

std::optional<StreamedElement> ShardStreamer::next() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (cancellation_.cancelled() || rotation_.empty()) return std::nullopt;
    if (!in_order_) turn_ = ready_turn();
    const std::size_t s = rotation_[turn_];
    Queue& queue = queues_[s];
    if (!queue.samples.empty()) {
      const Segment& segment = segments_[s];
      StreamedElement element;
      element.sample = std::move(queue.samples.front());
      queue.samples.pop_front();
      element.index = segment.index ? *segment.index + queue.taken : next_index_;
      element.padding = segment.padding;
      next_index_ = element.index + 1;
      ++queue.taken;
      turn_ = (turn_ + 1) % rotation_.size();
      const bool half_empty = queue.samples.size() == queued_ / 2;
      lock.unlock();
      if (half_empty) queue.room.notify_one();
      return element;
    }
    if (queue.done) {
      // Segment s has given everything: the next segment takes its place in the turn, or the rotation
      // shrinks at the epoch's end (the turn then passes to the segment after it).
      if (next_in_rotation_ < segments_.size()) {
        rotation_[turn_] = next_in_rotation_++;
      } else {
        rotation_.erase(rotation_.begin() + static_cast<std::ptrdiff_t>(turn_));
        if (turn_ == rotation_.size()) turn_ = 0;
      }
      start_.notify_all();  // one more segment may start
      continue;
    }
    ready_.wait(lock);
  }
}

std::size_t ShardStreamer::ready_turn() const noexcept {
  // The turn's own segment when it has a sample or has ended (next() then moves the rotation on);
  // otherwise the first after it in the rotation that has a sample or has ended.
  for (std::size_t k = 0; k < rotation_.size(); ++k) {
    const std::size_t turn = (turn_ + k) % rotation_.size();
    const Queue& queue = queues_[rotation_[turn]];
    if (!queue.samples.empty() || queue.done) return turn;
  }
  return turn_;  // none is ready: wait for the turn's own
}

void ShardStreamer::work() noexcept {
  for (;;) {
    std::size_t s = 0;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [this] {
        return cancellation_.cancelled() || next_segment_ == segments_.size() ||
               next_segment_ < next_in_rotation_ + parallel_;
      });
      if (cancellation_.cancelled() || next_segment_ == segments_.size()) return;
      s = next_segment_++;
    }
    read_segment(s);
    {
      std::lock_guard lock(mutex_);
      queues_[s].done = true;
    }
    ready_.notify_one();  // next() is the only one waiting there (the pipeline's serial source stage)
  }
}

bool ShardStreamer::push(std::size_t s, StreamedSamplePtr sample) {
  {
    std::unique_lock lock(mutex_);
    Queue& queue = queues_[s];
    queue.room.wait(lock, [&] { return cancellation_.cancelled() || queue.samples.size() < queued_; });
    if (cancellation_.cancelled()) return false;
    queue.samples.push_back(std::move(sample));
  }
  ready_.notify_one();
  return true;
}

void ShardStreamer::owe(std::size_t s, std::uint64_t from, const std::string& kind,
                        const std::string& rest_kind, const std::string& reason) {
  const Segment& segment = segments_[s];
  const std::string& location = shards_->shards[segment.shard].location;
  // Unknown count: the shard's end is unknown too, so one element stands for what was lost.
  const std::uint64_t end = segment.end ? *segment.end : from + 1;
  for (std::uint64_t k = from; k < end; ++k) {
    StreamedSamplePtr sample = pool_.acquire();
    sample->bytes.clear();
    sample->path = location + "#sample " + std::to_string(k);
    sample->error_kind = k == from ? kind : rest_kind;
    sample->error_reason =
        k == from ? reason : "sample " + std::to_string(k) + " of the shard is lost: " + reason;
    if (!push(s, std::move(sample))) return;
  }
}

void ShardStreamer::read_segment(std::size_t s) {
  const Segment& segment = segments_[s];
  const std::string& location = shards_->shards[segment.shard].location;
  std::uint64_t at = segment.first;  // the shard's sample being read
  try {
    TarSampleReader reader(shards_->opener->open(location, &cancellation_), format_);
    const std::optional<std::uint64_t> count = shards_->shards[segment.shard].samples;
    const auto too_few = [&](std::uint64_t there) {
      return "'" + location + "' has " + std::to_string(there) + " samples, fewer than its count (" +
             std::to_string(count.value_or(0)) + ")";
    };
    if (segment.first > 0 && reader.skip(segment.first) < segment.first)
      return owe(s, segment.first, "index_mismatch", "index_mismatch", too_few(reader.samples()));
    while (!segment.end || at < *segment.end) {
      if (cancellation_.cancelled()) return;
      StreamedSamplePtr sample = pool_.acquire();
      if (!reader.next(*sample)) break;
      ++at;
      if (segment.to_shard_end && at == *segment.end && !reader.at_end() && sample->error_kind.empty()) {
        sample->error_kind = "index_mismatch";
        sample->error_reason =
            "'" + location + "' has more samples than its count (" + std::to_string(count.value_or(0)) + ")";
      }
      if (!push(s, std::move(sample))) return;
    }
    if (segment.end && at < *segment.end) owe(s, at, "index_mismatch", "index_mismatch", too_few(at));
  } catch (const ShardReadError& error) {
    if (!cancellation_.cancelled()) owe(s, at, error.kind(), "shard_failed", error.what());
  } catch (const std::exception& error) {
    if (!cancellation_.cancelled()) owe(s, at, "io", "shard_failed", "'" + location + "': " + error.what());
  }
}

}  // namespace conveyor::detail
