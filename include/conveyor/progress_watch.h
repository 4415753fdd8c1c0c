// What each thread of a run is doing, and one report when the run stops making progress.
//
//   auto watch = std::make_shared<conveyor::ProgressWatch>();           // 60 s, report on stderr
//   conveyor::FeederOptions feeder{.progress_watch = watch};            // the feeder's threads join it
//   const conveyor::ProgressWatch::Member me(watch, "training loop");   // and this thread
//   for (...) { trainer.step(batch); watch->progress(); }
//
// A thread joins a watch for as long as a Member lives. From then on the library's blocking calls on that
// thread say what they are about to wait for (ProgressWatch::Doing: "waiting for the pipeline", "nvJPEG
// hardware decode (nvjpegDecodeBatchedEx), images: 83", "step 812 > backward pass > all-reduce of gradient
// bucket 3"), nested up to a few levels. When nobody calls progress() for `limit`, the watch's own
// thread writes one report naming every member, what it waits for and since when, so that a hang says
// which thread waits for which: the question a multi-GPU run that stops needs answered first (a cycle
// through NCCL, the CUDA driver and a library's lock shows as one thread per link). Progress resumed, a
// later stall is reported again.
//
// Why not stacks: a process cannot walk its own threads' stacks portably, and a debugger (cuda-gdb) is not
// on every machine; the names here cost two atomic stores per mark and say what the code meant to do.
// A thread that has not joined a watch pays one thread-local read per mark.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace conveyor {

class ProgressWatch : public std::enable_shared_from_this<ProgressWatch> {
 public:
  struct Options {
    // Without progress() for this long, one report (0: never report; report() still works).
    std::chrono::milliseconds limit{60'000};
    // Called on the watch's own thread with each report; null: written to stderr.
    std::function<void(const std::string&)> on_stall = nullptr;
  };

  ProgressWatch() : ProgressWatch(Options{}) {}
  explicit ProgressWatch(Options options);
  ~ProgressWatch();  // stops and joins the watch's thread
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  // The run moved on (a step ended, a batch arrived): the stall clock starts again.
  void progress() noexcept;
  std::uint64_t progress_count() const noexcept { return progress_.load(std::memory_order_relaxed); }
  // What every member is doing now, one line each, oldest activity first.
  std::string report() const;
  // Reports written so far.
  std::uint64_t stalls() const noexcept { return stalls_.load(std::memory_order_relaxed); }

  class Member;
  class Doing;
  struct Record;  // a member's activity (opaque)

 private:
  void watch();

  const Options options_;
  std::atomic<std::uint64_t> progress_{0};
  std::atomic<std::int64_t> last_progress_ns_;
  std::atomic<std::uint64_t> stalls_{0};
  mutable std::mutex mutex_;  // records_, stopping_
  std::condition_variable wake_;
  std::list<std::shared_ptr<Record>> records_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything it reads exists
};

// The calling thread is a member of `watch` under `name` while this lives (the thread's previous watch, if
// any, is restored after). A null watch makes this do nothing. Make and destroy it on the same thread.
class ProgressWatch::Member {
 public:
  Member(std::shared_ptr<ProgressWatch> watch, std::string name);
  ~Member();
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

 private:
  std::shared_ptr<ProgressWatch> watch_;
  std::shared_ptr<Record> record_;
  Record* previous_ = nullptr;
};

// What the calling thread does until the end of the scope: `what` (a string literal: it is kept by
// address), followed by `detail` when that is not negative. Nests: the report shows the levels joined by
// " > ". Nothing happens on a thread that is no member of a watch.
class ProgressWatch::Doing {
 public:
  explicit Doing(const char* what, long long detail = -1) noexcept;
  ~Doing();
  Doing(const Doing&) = delete;
  Doing& operator=(const Doing&) = delete;

 private:
  Record* record_;
};

}  // namespace conveyor
