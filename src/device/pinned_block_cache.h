// Page-locked host memory that a GPU feeder keeps: blocks given back are kept for the next request of the
// same size instead of being freed, and warm-up makes the pipeline's batch buffers before the first batch.
// Once a size had to be made on demand (warm-up made fewer than the run holds at once, as a data service's
// own splits and received batches do), a thread of the cache keeps `make_ahead` blocks of it ready, so that
// the next pipeline stage to ask does not wait for cudaHostAlloc.
//
// Why: a pipeline makes its pinned batch buffers on first need, so the first batches of a run each wait for
// cudaHostAlloc (page-locking tens of megabytes takes milliseconds) while the run is already being timed;
// and freeing one (cudaFreeHost) waits for the whole device, which beside an NCCL all-reduce of a process
// that drives several GPUs is one link of a possible cycle (retained_host_buffer.h). Blocks are freed when
// the cache dies: the feeder and every allocation made from it hold it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "conveyor/host_memory.h"

namespace conveyor::cuda {

class PinnedBlockCache final : public HostMemoryResource {
 public:
  // Blocks come from `memory` (page-locked: pinned_host_memory()). `make_ahead`: the blocks of a size kept
  // ready behind the pipeline once that size was made on demand (0: none, every block on demand).
  explicit PinnedBlockCache(std::shared_ptr<HostMemoryResource> memory, std::size_t make_ahead = 0);
  ~PinnedBlockCache() override;
  PinnedBlockCache(const PinnedBlockCache&) = delete;
  PinnedBlockCache& operator=(const PinnedBlockCache&) = delete;

  void* allocate(std::size_t bytes) override;  // a kept block of that size, or a new one
  void deallocate(void* memory, std::size_t bytes) noexcept override;  // kept for the next allocate(bytes)
  bool page_locked() const noexcept override { return memory_->page_locked(); }

  // While paused, the make-ahead thread makes nothing (it notes what it will make). A feeder pauses it until
  // its first batch is on the way: page-locking beside that batch's copy and kernel launches held it up in
  // the driver (0.05-0.06 s of an H200's first batch).
  void pause_making_ahead();
  void resume_making_ahead();

  // Makes blocks of `bytes` until `count` of them are kept free (warm-up). Throws like allocate().
  void reserve(std::size_t bytes, std::size_t count);
  // Makes blocks of `bytes` until `count` of that size exist, kept or lent out: what a startup thread
  // makes ahead of a pipeline that already takes blocks itself, without making more than it will use.
  // Throws like allocate().
  void fill(std::size_t bytes, std::size_t count);
  // Blocks of that size kept free now, and blocks made in all (for tests and logs).
  std::size_t kept(std::size_t bytes) const;
  std::size_t made() const;
  // Blocks made by allocate() because none was kept (on the pipeline's way: its source stage waits for
  // them), and the seconds that took; reserve(), fill() and the make-ahead thread make theirs off that way.
  std::size_t made_on_demand() const;
  double on_demand_seconds() const;
  // Blocks the make-ahead thread made.
  std::size_t made_ahead() const;

 private:
  // The make-ahead thread: while a size has fewer than make_ahead_ kept, one more of it.
  void make_ahead_loop();
  std::size_t size_short_locked() const;  // a size to make ahead, or 0

  const std::shared_ptr<HostMemoryResource> memory_;
  const std::size_t make_ahead_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::size_t, std::vector<void*>> free_;  // by size
  std::map<std::size_t, std::size_t> made_of_;      // blocks made (or being made) by size
  std::map<std::size_t, bool> ahead_of_;            // sizes made on demand: kept ready from then on
  std::size_t made_ = 0;
  std::size_t made_on_demand_ = 0;
  std::size_t made_ahead_ = 0;
  double on_demand_seconds_ = 0;
  bool stopping_ = false;
  bool paused_ = false;
  std::thread maker_;  // started at the first block made on demand; last member: joined before the rest go
};

}  // namespace conveyor::cuda
