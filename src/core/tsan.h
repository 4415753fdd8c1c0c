// Happens-before annotations for ThreadSanitizer. oneTBB hands work from one thread to another through its
// own task queues inside libtbb, which is not built with TSan and so is invisible to it: every hand-off
// would be reported as a race. The pipeline marks each hand-off of an element explicitly (release when a
// stage is done with it, acquire when the next stage starts), which is exactly the ordering
// parallel_pipeline guarantees; the CPU layers' parallel loops mark their fork and join the same way
// (ForkJoin below). Without TSan these compile to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define CONVEYOR_TSAN_ENABLED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CONVEYOR_TSAN_ENABLED 1
#endif
#endif

#ifdef CONVEYOR_TSAN_ENABLED
#include <sanitizer/tsan_interface.h>
#define CONVEYOR_TSAN_ACQUIRE(address) \
  __tsan_acquire(const_cast<void*>(static_cast<const volatile void*>(address)))
#define CONVEYOR_TSAN_RELEASE(address) \
  __tsan_release(const_cast<void*>(static_cast<const volatile void*>(address)))
#else
#define CONVEYOR_TSAN_ACQUIRE(address) static_cast<void>(address)
#define CONVEYOR_TSAN_RELEASE(address) static_cast<void>(address)
#endif

namespace conveyor::detail {

// A parallel loop's fork and join, as ThreadSanitizer must see them: what the caller did before fork()
// happens before every iteration, and every iteration before what the caller does after the ForkJoin dies.
// The iterations are not ordered among themselves, so a race between two of them is still reported. Call
// fork() after making the loop's body, just before the loop, and make every iteration reach end_iteration()
// (an iteration that throws does not: catch inside it); marked_parallel_for (src/core/marked_parallel_for.h)
// does both for tbb::parallel_for over a blocked range, and says which read TSan cannot order.
class ForkJoin {
 public:
  ForkJoin() = default;
  ~ForkJoin() { CONVEYOR_TSAN_ACQUIRE(&join_); }
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;
  void fork() const noexcept { CONVEYOR_TSAN_RELEASE(&fork_); }
  void begin_iteration() const noexcept { CONVEYOR_TSAN_ACQUIRE(&fork_); }
  void end_iteration() const noexcept { CONVEYOR_TSAN_RELEASE(&join_); }

 private:
  char fork_ = 0, join_ = 0;  // only their addresses are used
};

}  // namespace conveyor::detail
