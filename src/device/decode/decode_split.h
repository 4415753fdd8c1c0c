// The DeferPolicy of a feeder that decodes on the GPU (FeederOptions::decode): which samples the pipeline's
// decode op leaves to the GPU, and the controller that moves that share.
//
// Which samples: sample i of an epoch's order is deferred when frac(i / phi) < s (phi the golden ratio, in
// 64-bit fixed point; s the share in 16 bits). That is a pure function of the index: with a fixed share the
// same samples go to the GPU in every run, at any thread count, which is what deterministic pipelines need
// (nvJPEG's pixels are not libjpeg's). It spreads the deferred samples evenly over any run of indices and
// also over every arithmetic progression of them, which is what a rank sees of an epoch's global order
// (shard(n, r): indices r, r + n, ...). The earlier rule, floor((i + 1)s) > floor(i s), was exact over
// consecutive indices but gave one rank of two every sample at s = 1/2 and the other none (seen on two
// H200s: one rank's decoder starved its step while the other's CPU workers idled).
//
// How much, when adapting (pipelines with deterministic = false): per batch of B, the CPU workers (T of
// them) spend B((1 - s)c + s d)/T and the GPU decoder B s g, where c is the workers' time per image they
// decode, d per image they only look at and defer, g the decoder's per deferred image. Both take the same
// time at s* = c / (c - d + T g); after each batch the share moves a third of the way there, within
// [0.05, 0.95] so that both sides keep being measured. c and d come from the op (spent()), g from the feeder.
//
// Closed until the GPU is ready (issue 41, "start at once"): a split made closed defers nothing, so the CPU
// workers decode every image while nvJPEG, its hardware pool and its kernels come ready on a thread of the
// feeder; open() then gives it its starting share (the one it was made with, or the remembered one). While
// closed it keeps measuring the CPU's cost per image but neither moves nor settles its share, and the
// batches it saw do not count toward what a later run remembers. A deterministic pipeline never gets a
// closed split: which samples the GPU decodes must not depend on when it became ready.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "conveyor/defer.h"
#include "src/device/decode/split_memory.h"

namespace conveyor::detail {

// Whether sample `index` is deferred at share `share_q16` / 65536 (see above).
constexpr bool defers(std::uint64_t index, std::uint32_t share_q16) noexcept {
  constexpr std::uint64_t kInverseGoldenRatio = 0x9E3779B97F4A7C15;  // 2^64 / phi
  return ((index * kInverseGoldenRatio) >> 48) < share_q16;  // wraps mod 2^64: the fractional part
}

// The share s* above, clamped to [0, 1]; nan inputs or a non-positive denominator give `fallback`.
double balanced_share(double cpu_decode_s, double cpu_defer_s, double gpu_decode_s, int threads,
                      double fallback) noexcept;

class DecodeSplit final : public DeferPolicy {
 public:
  // share in [0, 1]; adaptive: move it (measure() does); threads: the pipeline's; open: defer from the
  // start (false: nothing until open()).
  DecodeSplit(double share, bool adaptive, int threads, bool open = true);

  bool should_defer(const Sample& sample) noexcept override;
  void declined(const Sample& sample, const char* reason) noexcept override;
  void spent(bool deferred, std::chrono::nanoseconds time) noexcept override;
  bool taking() const noexcept override { return is_open(); }

  // After a batch (one thread at a time): the GPU decoder took `gpu_seconds` for `deferred` images. Moves
  // the share when adaptive and both sides have been measured.
  void measure(double gpu_seconds, std::size_t deferred) noexcept;

  // The share deferred now: 0 while closed.
  double share() const noexcept;
  bool adaptive() const noexcept { return adaptive_; }
  // Opens a closed split at its starting share (any thread; once: later calls change nothing).
  void open() noexcept;
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }
  // Starts from what an earlier run settled at (split_memory.h): its estimates, and its share when
  // adaptive (a fixed split keeps the share it was given). Call before the pipeline asks should_defer, or
  // while the split is closed (the share then applies when it opens).
  void start_from(const SplitRecord& record) noexcept;
  // What to remember: the share averaged over the recent batches, the estimates, the batches measured.
  SplitRecord settled() const;
  std::uint64_t declined_count() const;
  std::map<std::string, std::uint64_t> declined_reasons() const;  // "op: <reason>" -> count

 private:
  const bool adaptive_;
  const int threads_;
  std::atomic<bool> open_;
  std::atomic<std::uint32_t> share_q16_;  // 0 while closed
  // What the op reported since the last measure(): nanoseconds and counts, decoded here / deferred.
  std::atomic<std::uint64_t> decode_ns_{0}, decode_count_{0}, defer_ns_{0}, defer_count_{0};
  // Running estimates: seconds per image; the share's running average; batches measured.
  mutable std::mutex estimates_mutex_;  // measure() on the feeder's thread, settled() at the end
  double cpu_decode_s_ = 0, cpu_defer_s_ = 0, gpu_decode_s_ = 0;
  double start_share_;  // what open() gives a closed split
  double settled_share_;
  std::uint64_t batches_ = 0;
  mutable std::mutex mutex_;  // declined_
  std::map<std::string, std::uint64_t> declined_;
};

}  // namespace conveyor::detail
