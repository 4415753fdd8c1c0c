// Happens-before annotations for ThreadSanitizer. oneTBB hands work from one thread to another through its
// own task queues inside libtbb, which is not built with TSan and so is invisible to it: every hand-off
// would be reported as a race. The pipeline marks each hand-off of an element explicitly (release when a
// stage is done with it, acquire when the next stage starts), which is exactly the ordering
// parallel_pipeline guarantees; the CPU layers' parallel loops mark their fork and join the same way
// (src/train/layers/cpu_parallel.h). Without TSan these compile to nothing.
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
