#include "src/device/decode/decode_split.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "conveyor/error.h"
#include "conveyor/sample.h"

namespace conveyor::detail {
namespace {

constexpr double kStep = 1.0 / 3;  // how far toward the balanced share one batch moves
constexpr double kLow = 0.05, kHigh = 0.95;
constexpr double kSmoothing = 0.3;  // weight of the newest batch in the running estimates
constexpr double kSettling = 0.1;   // weight of the newest share in the average a later run starts from

std::uint32_t to_q16(double share) {
  return static_cast<std::uint32_t>(std::lround(std::clamp(share, 0.0, 1.0) * 65536.0));
}

double smooth(double estimate, double sample) {
  return estimate > 0 ? estimate + kSmoothing * (sample - estimate) : sample;
}

}  // namespace

double balanced_share(double cpu_decode_s, double cpu_defer_s, double gpu_decode_s, int threads,
                      double fallback) noexcept {
  const double denominator = cpu_decode_s - cpu_defer_s + gpu_decode_s * threads;
  if (!(cpu_decode_s > 0) || !(gpu_decode_s > 0) || !(denominator > 0) || !std::isfinite(denominator))
    return fallback;
  return std::clamp(cpu_decode_s / denominator, 0.0, 1.0);
}

DecodeSplit::DecodeSplit(double share, bool adaptive, int threads, bool open)
    : adaptive_(adaptive),
      threads_(std::max(threads, 1)),
      open_(open),
      share_q16_(open ? to_q16(share) : 0),
      start_share_(share),
      settled_share_(share) {
  if (!(share >= 0.0 && share <= 1.0))
    throw InvalidArgument("DeviceDecode::share must be in [0, 1], got " + std::to_string(share));
}

bool DecodeSplit::should_defer(const Sample& sample) noexcept {
  return defers(sample.index, share_q16_.load(std::memory_order_relaxed));
}

void DecodeSplit::declined(const Sample&, const char* reason) noexcept {
  try {
    std::lock_guard lock(mutex_);
    ++declined_[std::string("op: ") + reason];
  } catch (...) {
    // Out of memory while counting: the count is lost, the sample is decoded all the same.
  }
}

void DecodeSplit::spent(bool deferred, std::chrono::nanoseconds time) noexcept {
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(time.count(), 0));
  (deferred ? defer_ns_ : decode_ns_).fetch_add(ns, std::memory_order_relaxed);
  (deferred ? defer_count_ : decode_count_).fetch_add(1, std::memory_order_relaxed);
}

void DecodeSplit::measure(double gpu_seconds, std::size_t deferred) noexcept {
  const auto per_image = [](std::atomic<std::uint64_t>& ns, std::atomic<std::uint64_t>& count) {
    const std::uint64_t n = count.exchange(0, std::memory_order_relaxed);
    const std::uint64_t t = ns.exchange(0, std::memory_order_relaxed);
    return n > 0 ? static_cast<double>(t) / 1e9 / static_cast<double>(n) : 0.0;
  };
  const double decode = per_image(decode_ns_, decode_count_);
  const double defer = per_image(defer_ns_, defer_count_);
  std::lock_guard lock(estimates_mutex_);
  if (!is_open()) {
    // The CPU decodes everything: its cost is worth knowing when the split opens; the share stays at 0,
    // and these batches teach a later run nothing about where the split settles.
    if (decode > 0) cpu_decode_s_ = smooth(cpu_decode_s_, decode);
    return;
  }
  ++batches_;
  settled_share_ += kSettling * (share() - settled_share_);
  if (decode > 0) cpu_decode_s_ = smooth(cpu_decode_s_, decode);
  if (defer > 0) cpu_defer_s_ = smooth(cpu_defer_s_, defer);
  if (deferred > 0 && gpu_seconds > 0)
    gpu_decode_s_ = smooth(gpu_decode_s_, gpu_seconds / static_cast<double>(deferred));
  if (!adaptive_) return;
  const double now = share();
  const double target = balanced_share(cpu_decode_s_, cpu_defer_s_, gpu_decode_s_, threads_, now);
  share_q16_.store(to_q16(std::clamp(now + kStep * (target - now), kLow, kHigh)), std::memory_order_relaxed);
}

void DecodeSplit::start_from(const SplitRecord& record) noexcept {
  std::lock_guard lock(estimates_mutex_);
  cpu_decode_s_ = record.cpu_decode_s;
  cpu_defer_s_ = record.cpu_defer_s;
  gpu_decode_s_ = record.gpu_decode_s;
  if (!adaptive_) return;
  start_share_ = std::clamp(record.share, kLow, kHigh);
  settled_share_ = start_share_;
  if (is_open()) share_q16_.store(to_q16(start_share_), std::memory_order_relaxed);
}

void DecodeSplit::open() noexcept {
  std::lock_guard lock(estimates_mutex_);
  if (is_open()) return;
  share_q16_.store(to_q16(start_share_), std::memory_order_relaxed);
  settled_share_ = start_share_;
  open_.store(true, std::memory_order_release);
}

SplitRecord DecodeSplit::settled() const {
  std::lock_guard lock(estimates_mutex_);
  return {settled_share_, cpu_decode_s_, cpu_defer_s_, gpu_decode_s_, batches_};
}

double DecodeSplit::share() const noexcept {
  return static_cast<double>(share_q16_.load(std::memory_order_relaxed)) / 65536.0;
}

std::uint64_t DecodeSplit::declined_count() const {
  std::lock_guard lock(mutex_);
  std::uint64_t total = 0;
  for (const auto& [reason, count] : declined_) total += count;
  return total;
}

std::map<std::string, std::uint64_t> DecodeSplit::declined_reasons() const {
  std::lock_guard lock(mutex_);
  return declined_;
}

}  // namespace conveyor::detail
